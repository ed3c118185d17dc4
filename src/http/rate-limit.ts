// Requests per minute per API key (@fastify/rate-limit), in separate budgets: ingest, payment
// notifications, compile and everything else. A route names its budget with `config: { limit }`;
// routes without a key (the tracker script, the docs) count per client address. Payment
// notifications carry no key: they count per workspace and sending address, so one workspace's
// notifications never hold back another's, and a sender other than the processor (bad signatures
// cost a request all the same) never spends the processor's budget. /health opts out with `rateLimit: false`.

import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DEFAULT_RATE_LIMITS, type RateLimits } from '../config.js';
import { AppError } from '../errors.js';

export type LimitGroup = 'ingest' | 'notifications' | 'compile' | 'api';

declare module 'fastify' {
  interface FastifyContextConfig {
    limit?: LimitGroup;
  }
}

const groupOf = (request: FastifyRequest): LimitGroup => request.routeOptions.config?.limit ?? 'api';

const PER_MINUTE: Record<LimitGroup, (limits: RateLimits) => number> = {
  ingest: (l) => l.ingestPerMinute, notifications: (l) => l.notificationsPerMinute ?? DEFAULT_RATE_LIMITS.notificationsPerMinute, compile: (l) => l.perMinute, api: (l) => l.perMinute,
};

/** Who a request counts for: its key, else (notifications) its workspace and address, else its address. */
function counted(request: FastifyRequest, group: LimitGroup): string {
  if (request.apiKeyId) return request.apiKeyId;
  const ws = (request.params as { workspace_id?: unknown } | undefined)?.workspace_id;
  return group === 'notifications' && typeof ws === 'string' ? `ws:${JSON.stringify(ws)}:ip:${request.ip}` : `ip:${request.ip}`;
}

/** Registers the limiter; it must come before the routes (it hooks each route as it is added). */
export async function registerRateLimits(app: FastifyInstance, limits: RateLimits): Promise<void> {
  await app.register(rateLimit, {
    // After authentication (onRequest), before the body is read: a limited request costs no parsing.
    hook: 'preParsing',
    timeWindow: 60_000,
    cache: 10_000,
    // Every route shares the plugin's one store; the budget is part of the key.
    keyGenerator: (request) => `${groupOf(request)}:${counted(request, groupOf(request))}`,
    max: (request) => PER_MINUTE[groupOf(request)](limits),
    errorResponseBuilder: (request, context) => new AppError(
      'rate_limited',
      `more than ${context.max} ${groupOf(request)} requests a minute for this key; retry in ${context.after}`,
      { retry_after_seconds: Math.ceil(context.ttl / 1000) },
    ),
  });
}
