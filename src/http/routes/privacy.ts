// Privacy requests (secret key, decisions §12): POST /v1/privacy/requests answers 202 and the
// worker does the rest in the background; GET reads their status, counts and audit trail.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getRequest, pageOfRequests, submitRequest } from '../../privacy/requests.js';
import { privacyAccepted, privacyList, privacyListQuery, privacyRequestAnswer, privacyRequestBody } from '../../privacy/schema.js';
import type { PrivacyWorker } from '../../privacy/worker.js';
import type { ControlStore } from '../../store/control/store.js';

export const privacyRoutes: FastifyPluginAsyncZod<{ control: ControlStore; worker: PrivacyWorker; clock: () => Date }> = async (app, { control, worker, clock }) => {
  app.post('/v1/privacy/requests', {
    config: { auth: 'secret' },
    schema: {
      tags: ['privacy'], summary: 'Delete, suppress or unsuppress people by their identifiers',
      description: 'Processed in the background: read the request back until its status is done. delete removes the persons, '
        + 'their visitors, events and page views on every engine, and de-identifies their payment customers (payments stay); '
        + 'suppress stores nothing of these identifiers from then on (ingest answers count them as suppressed).',
      body: privacyRequestBody,
      response: { 202: privacyAccepted },
    },
  }, async (request, reply) => {
    const row = await submitRequest(control, request.workspaceId, request.body, clock());
    void worker.kick(request.workspaceId);
    return reply.code(202).send({ id: row.request_id, type: row.type, status: row.status, created_at: row.created_at.toISOString() });
  });

  app.get('/v1/privacy/requests', {
    config: { auth: 'secret' },
    schema: { tags: ['privacy'], summary: 'The workspace\'s privacy requests, newest first', querystring: privacyListQuery, response: { 200: privacyList } },
  }, async (request) => pageOfRequests(control, request.workspaceId, request.query.limit, request.query.cursor));

  app.get('/v1/privacy/requests/:id', {
    config: { auth: 'secret' },
    schema: {
      tags: ['privacy'], summary: 'A privacy request: its status and counts',
      params: z.object({ id: z.string().max(200) }),
      response: { 200: privacyRequestAnswer },
    },
  }, async (request) => getRequest(control, request.workspaceId, request.params.id));
};
