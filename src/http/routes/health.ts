// Kubernetes-style probes: /live says the process serves HTTP (liveness: restart it when this
// fails); /health says every store answers within its bound and can take writes (readiness: send
// no traffic while it answers 503, which names the store that is down).

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../errors.js';
import type { Stores } from '../../store/open.js';
import type { IngestStatus } from '../../ingest/segment/service.js';

const ingestHealth = z.object({ backlog_events: z.number(), backlog_seconds: z.number() })
  .describe('This node\'s ingest log (the Segment-compatible API): messages acknowledged and not yet resolved, and the age of the oldest.');
const storesHealth = z.record(z.string(), z.string()).describe('Per store (duckdb, postgresql, clickhouse): "ok" or why it does not serve.');

export const healthRoutes: FastifyPluginAsyncZod<{ stores: Stores; timeoutMs: number; ingestStatus: () => IngestStatus }> = async (app, { stores, timeoutMs, ingestStatus }) => {
  app.get('/live', {
    config: { rateLimit: false },
    schema: { tags: ['service'], summary: 'Liveness: the process answers HTTP (checks no store)', response: { 200: z.object({ status: z.literal('ok') }) } },
  }, async () => ({ status: 'ok' as const }));

  app.get('/health', {
    config: { rateLimit: false },
    schema: {
      tags: ['service'],
      summary: 'Readiness: every store answers a trivial statement within HEALTH_TIMEOUT_MS and can take writes',
      response: {
        200: z.object({ status: z.literal('ok'), stores: storesHealth, ingest: ingestHealth }),
        503: z.object({ status: z.literal('unavailable'), error: z.literal('unavailable'), message: z.string(), stores: storesHealth, ingest: ingestHealth }),
      },
    },
  }, async (_request, reply) => {
    const health = await stores.health(timeoutMs);
    const { backlog_events, backlog_seconds } = ingestStatus();
    const ingest = { backlog_events, backlog_seconds };
    const down = Object.entries(health).filter(([, state]) => state !== 'ok');
    if (down.length === 0) return { status: 'ok' as const, stores: health, ingest };
    void reply.status(503).header('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS));
    return {
      status: 'unavailable' as const, error: 'unavailable' as const, stores: health, ingest,
      message: down.map(([name, state]) => `${name}: ${state}`).join('; '),
    };
  });
};
