// GET /v1/workspace (secret key): where to point the payment processor's webhook, which of its
// modes (live or test) counts, and the retention; PATCH sets the retention.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import { PAYMENTS_MODES, type Workspaces } from '../../store/control/workspaces.js';

export const workspaceAnswer = z.object({
  id: z.string(), name: z.string(), webhook_url: z.string(), payments_mode: z.enum(PAYMENTS_MODES),
  retention_days: z.number().int().nullable().describe('events and page views older than this many days are deleted daily; null: kept forever'),
});
const workspacePatch = z.object({
  retention_days: z.number().int().min(1).max(36_500).nullable().describe('null keeps events and page views forever'),
}).strict();
export type Workspace = z.infer<typeof workspaceAnswer>;

export const webhookUrl = (publicUrl: string, workspaceId: string) =>
  `${publicUrl.replace(/\/+$/, '')}/v1/webhooks/stripe/${encodeURIComponent(workspaceId)}`;

export const workspaceRoutes: FastifyPluginAsyncZod<{ workspaces: Workspaces; publicUrl: string }> = async (app, { workspaces, publicUrl }) => {
  app.get('/v1/workspace', {
    config: { auth: 'secret' },
    schema: {
      tags: ['workspace'], summary: 'The key\'s workspace, its payment webhook URL and payments mode',
      description: 'payments_mode: notifications whose livemode is of the other mode are acknowledged and ignored. '
        + 'Change it with the command line: audiences workspace mode <workspace> live|test.',
      response: { 200: workspaceAnswer },
    },
  }, async (request) => {
    return answer(request.workspaceId);
  });

  app.patch('/v1/workspace', {
    config: { auth: 'secret' },
    schema: { tags: ['workspace'], summary: 'Change the workspace\'s retention', body: workspacePatch, response: { 200: workspaceAnswer } },
  }, async (request) => {
    if (!(await workspaces.setRetention(request.workspaceId, request.body.retention_days))) throw new AppError('not_found', 'the workspace no longer exists');
    return answer(request.workspaceId);
  });

  async function answer(workspaceId: string): Promise<Workspace> {
    const ws = await workspaces.get(workspaceId);
    if (!ws) throw new AppError('not_found', 'the workspace no longer exists');
    return {
      id: ws.workspace_id, name: ws.name, webhook_url: webhookUrl(publicUrl, ws.workspace_id), payments_mode: ws.payments_mode,
      retention_days: ws.retention_days,
    };
  }
};
