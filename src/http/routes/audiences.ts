// Saved audiences (decisions §9), secret key: CRUD, refresh, members and exports, delivery log.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deliverer } from '../../audiences/delivery.js';
import { EXPORT_CONTENT_TYPES, exportMembers } from '../../audiences/export.js';
import type { Refresher } from '../../audiences/refresh.js';
import type { AudienceResource } from '../../audiences/resource.js';
import { audiencePlacement, withSplit } from '../../audiences/splits.js';
import { audience, audienceInput, audiencePatch, delivery, membersPage } from '../../audiences/schema.js';
import { invalidRequest } from '../../errors.js';
import { deliveryLog } from '../../store/control/audiences.js';
import type { Stores } from '../../store/open.js';
import { REQUEST_EXAMPLES } from '../examples.js';

const idParams = z.object({ id: z.string().min(1).max(128) });

/** Cursors pin the snapshot they page through: `<snapshot>:<profile>`, opaque to clients. */
const encodeCursor = (snapshot: number, profile: number) => Buffer.from(`${snapshot}:${profile}`).toString('base64url');

function decodeCursor(cursor: string | undefined, snapshot: number): bigint | null {
  if (!cursor) return null;
  const match = /^(\d+):(-?\d{1,19})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw invalidRequest([{ field: '/cursor', in: 'querystring', message: 'not a cursor returned by this endpoint' }]);
  if (Number(match[1]) !== snapshot) throw invalidRequest([{ field: '/cursor', in: 'querystring', message: 'the audience was refreshed since; start from the first page' }]);
  return BigInt(match[2]!);
}

export interface AudienceRouteOptions {
  stores: Stores;
  resource: AudienceResource;
  refresher: Refresher;
  deliverer: Deliverer;
  clock: () => Date;
}

export const audienceRoutes: FastifyPluginAsyncZod<AudienceRouteOptions> = async (app, { stores, resource, refresher, deliverer, clock }) => {
  const auth = { auth: 'secret' as const };

  app.post('/v1/audiences', {
    config: auth,
    schema: {
      tags: ['audiences'], summary: 'Save an audience',
      description: 'Invalid criteria answer 400 invalid_criteria with every fault; nothing is saved. The audience is refreshed at the next scheduler tick.',
      body: audienceInput.meta({ example: REQUEST_EXAMPLES.audience }),
      response: { 201: audience },
    },
  }, async (request, reply) => reply.status(201).send(await resource.create(request.workspaceId, request.body)));

  app.get('/v1/audiences', {
    config: auth,
    schema: { tags: ['audiences'], summary: 'List audiences', response: { 200: z.object({ data: z.array(audience) }) } },
  }, async (request) => ({ data: await resource.list(request.workspaceId) }));

  app.get('/v1/audiences/:id', {
    config: auth,
    schema: { tags: ['audiences'], summary: 'Get an audience', params: idParams, response: { 200: audience } },
  }, async (request) => resource.get(request.workspaceId, request.params.id));

  app.patch('/v1/audiences/:id', {
    config: auth,
    schema: {
      tags: ['audiences'], summary: 'Change an audience',
      description: 'New criteria make the audience due for refresh at once: it is pending until then. destinations replaces the whole list.',
      params: idParams,
      body: audiencePatch,
      response: { 200: audience },
    },
  }, async (request) => resource.update(request.workspaceId, request.params.id, request.body));

  app.delete('/v1/audiences/:id', {
    config: auth,
    schema: { tags: ['audiences'], summary: 'Delete an audience with its snapshots and delivery log', params: idParams, response: { 200: z.object({ id: z.string(), deleted: z.literal(true) }) } },
  }, async (request) => {
    await resource.remove(request.workspaceId, request.params.id);
    return { id: request.params.id, deleted: true as const };
  });

  app.post('/v1/audiences/:id/refresh', {
    config: auth,
    schema: {
      tags: ['audiences'], summary: 'Refresh an audience now',
      description: 'Answers once the snapshot is written (status ready) or the refresh failed (status failed, last_error); diffs are then delivered in the background. 409 while a refresh of it runs.',
      params: idParams,
      response: { 200: audience },
    },
  }, async (request) => {
    const ws = request.workspaceId;
    const { id } = request.params;
    await resource.row(ws, id);
    const outcome = await refresher.refresh(ws, id, clock());
    if (outcome.ok) void deliverer.deliver(ws, id);
    return resource.get(ws, id);
  });

  app.post('/v1/audiences/:id/destinations/:destination_id/deliver', {
    config: auth,
    schema: {
      tags: ['audiences'], summary: 'Send now: queue a delivery to one destination',
      description: 'Brings the destination to the latest snapshot from what it has acknowledged (what it missed while failing, or nothing when it is up to date), in the background; read the outcome in the delivery log. 409 before the first refresh.',
      params: idParams.extend({ destination_id: z.string().min(1).max(128) }),
      response: { 202: z.object({ queued: z.literal(true), destination_id: z.string() }) },
    },
  }, async (request, reply) => {
    const ws = request.workspaceId;
    const { id, destination_id } = request.params;
    await resource.queueDelivery(ws, id, destination_id);
    void deliverer.deliver(ws, id);
    return reply.code(202).send({ queued: true as const, destination_id });
  });

  app.get('/v1/audiences/:id/members', {
    config: auth,
    schema: {
      tags: ['audiences'], summary: 'Members of the current snapshot, or an export of them',
      description: 'JSON pages by default; format=csv, parquet or arrow (Arrow IPC stream) streams the whole snapshot.',
      params: idParams,
      querystring: z.object({
        format: z.enum(['json', 'csv', 'parquet', 'arrow']).default('json'),
        limit: z.coerce.number().int().min(1).max(1000).default(100),
        cursor: z.string().max(200).optional(),
      }),
      response: { 200: membersPage },
    },
  }, async (request, reply) => {
    const row = await resource.row(request.workspaceId, request.params.id);
    // No snapshot yet: an empty membership (snapshot ids are positive).
    const snapshot = row.snapshot_id ?? 0;
    const { format, limit, cursor } = request.query;
    if (format !== 'json') {
      const stream = await exportMembers(stores.analytics, request.workspaceId, snapshot, format, audiencePlacement(row));
      return reply
        .header('content-type', EXPORT_CONTENT_TYPES[format])
        .header('content-disposition', `attachment; filename="${row.audience_id}.${format}"`)
        .send(stream as never); // the schema types the JSON format; a stream is sent unserialized
    }
    const rows = await stores.analytics.membersPage(request.workspaceId, snapshot, decodeCursor(cursor, snapshot), limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      data: page.map(withSplit(row)).map(({ profile: _, ...member }) => member),
      next_cursor: rows.length > limit && last ? encodeCursor(snapshot, last.profile) : null,
    };
  });

  app.get('/v1/audiences/:id/deliveries', {
    config: auth,
    schema: {
      tags: ['audiences'], summary: 'The delivery log: each diff sent to each destination, with every attempt',
      params: idParams,
      querystring: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
      response: { 200: z.object({ data: z.array(delivery) }) },
    },
  }, async (request) => {
    const row = await resource.row(request.workspaceId, request.params.id);
    const log = await deliveryLog(stores.control, request.workspaceId, row.audience_id, request.query.limit);
    return {
      data: log.map((d) => ({
        delivery_id: String(d.delivery_id),
        destination_id: d.destination_id,
        snapshot_id: d.snapshot_id,
        status: d.status,
        pages_delivered: d.next_page,
        added: d.added_count,
        removed: d.removed_count,
        skipped: d.skipped,
        last_error: d.last_error,
        created_at: d.created_at.toISOString(),
        finished_at: d.finished_at ? d.finished_at.toISOString() : null,
        attempts: d.attempts.map((a) => ({ ...a, attempted_at: a.attempted_at.toISOString() })),
      })),
    };
  });
};
