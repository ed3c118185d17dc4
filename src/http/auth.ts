// Bearer-key authentication. A route declares `config: { auth: 'secret' | 'any' }`; the hook puts
// the key's workspace on the request.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';
import type { Workspaces } from '../store/control/workspaces.js';

export type AuthLevel = 'secret' | 'any';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthLevel;
  }
  interface FastifyRequest {
    workspaceId: string;
    /** The authenticated key's workspace and kind ('' before authentication): what rate limits count. */
    apiKeyId: string;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export const authPlugin = fp(async (app: FastifyInstance, opts: { workspaces: Workspaces }) => {
  app.decorateRequest('workspaceId', '');
  app.decorateRequest('apiKeyId', '');
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const level = request.routeOptions.config?.auth;
    if (!level) return;
    const match = BEARER.exec(request.headers.authorization ?? '');
    // Beacons cannot send headers: browser-facing routes also take the key from `?key=`.
    const fromQuery = level === 'any' ? (request.query as Record<string, unknown> | undefined)?.key : undefined;
    const key = match?.[1] ?? (typeof fromQuery === 'string' ? fromQuery : undefined);
    if (!key || !/^(sk|pk)_/.test(key)) throw new AppError('unauthorized');
    const owner = await opts.workspaces.authenticate(key);
    if (!owner) throw new AppError('unauthorized', 'unknown API key');
    if (level === 'secret' && owner.kind !== 'secret') throw new AppError('forbidden');
    request.workspaceId = owner.workspaceId;
    request.apiKeyId = `${owner.workspaceId}:${owner.kind}`;
  });
});
