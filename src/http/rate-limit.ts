// Requests per minute per API key (@fastify/rate-limit), in separate budgets: ingest, compile and
// everything else. A route names its budget with `config: { limit }`; routes without a key (the
// tracker script, the docs) count per client address. /health opts out with `rateLimit: false`.

import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

export type LimitGroup = 'ingest' | 'compile' | 'api';

export interface RateLimits {
  /** POST /v1/events, /v1/persons, /v1/pageviews and payment notifications (INGEST_RATE_LIMIT_PER_MINUTE). */
  ingestPerMinute: number;
  /** Compile, and separately every other call (RATE_LIMIT_PER_MINUTE). */
  perMinute: number;
}

export const DEFAULT_RATE_LIMITS: RateLimits = { ingestPerMinute: 60_000, perMinute: 1_200 };

declare module 'fastify' {
  interface FastifyContextConfig {
    limit?: LimitGroup;
  }
}

const groupOf = (request: FastifyRequest): LimitGroup => request.routeOptions.config?.limit ?? 'api';

/** Registers the limiter; it must come before the routes (it hooks each route as it is added). */
export async function registerRateLimits(app: FastifyInstance, limits: RateLimits): Promise<void> {
  await app.register(rateLimit, {
    // After authentication (onRequest), before the body is read: a limited request costs no parsing.
    hook: 'preParsing',
    timeWindow: 60_000,
    cache: 10_000,
    // Every route shares the plugin's one store; the budget is part of the key.
    keyGenerator: (request) => `${groupOf(request)}:${request.apiKeyId || `ip:${request.ip}`}`,
    max: (request) => (groupOf(request) === 'ingest' ? limits.ingestPerMinute : limits.perMinute),
    errorResponseBuilder: (request, context) => new AppError(
      'rate_limited',
      `more than ${context.max} ${groupOf(request)} requests a minute for this key; retry in ${context.after}`,
      { retry_after_seconds: Math.ceil(context.ttl / 1000) },
    ),
  });
}
