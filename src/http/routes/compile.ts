import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { compileCriteria } from '../../audiences/compile.js';
import { MAX_OVERLAP, MIN_OVERLAP, overlap } from '../../audiences/overlap.js';
import { compileAnswer, compileRequest, overlapAnswer, overlapRequest } from '../../audiences/schema.js';
import type { Stores } from '../../store/open.js';
import { REQUEST_EXAMPLES } from '../examples.js';

export interface CompileRouteOptions {
  stores: Stores;
  budgetMs: number;
  /** The part of the budget the exact query may take (the sampled one gets the rest); compile.ts EXACT_SHARE by default. */
  exactShare?: number;
  clock: () => Date;
}

export const compileRoutes: FastifyPluginAsyncZod<CompileRouteOptions> = async (app, opts) => {
  app.post('/v1/audiences/compile', {
    config: { auth: 'secret', limit: 'compile' },
    schema: {
      tags: ['audiences'], summary: 'Validate criteria and estimate the audience size',
      description: 'Invalid criteria answer 200 with valid: false and every fault. The estimate budget runs from the request\'s start, '
        + 'the wait for a database connection included; past it the query is cancelled (or never started) and count is null with hit_limit true. '
        + 'When too many estimates are under way the answer is 503 overloaded with Retry-After, at once.',
      body: compileRequest.meta({ example: REQUEST_EXAMPLES.compile }),
      response: { 200: compileAnswer },
    },
  }, async (request) => {
    const result = await compileCriteria(opts.stores.analytics, request.workspaceId, request.body.criteria_json, {
      at: opts.clock(),
      budgetMs: opts.budgetMs,
      breakdown: request.body.breakdown,
      exactShare: opts.exactShare,
    });
    if (result.valid) return result;
    const first = result.errors[0]!;
    return { ...result, code: first.code, path: first.path, message: first.message };
  });

  app.post('/v1/audiences/overlap', {
    config: { auth: 'secret', limit: 'compile' },
    schema: {
      tags: ['audiences'], summary: 'How audiences overlap: each size, every intersection, the union',
      description: `${MIN_OVERLAP} to ${MAX_OVERLAP} saved audiences (their criteria evaluated now) or criteria trees, in one query within the estimate budget. `
        + 'Invalid criteria answer 400 invalid_criteria with every fault at its path in the body; an unknown audience 404.',
      body: overlapRequest.meta({ example: REQUEST_EXAMPLES.overlap }),
      response: { 200: overlapAnswer },
    },
  }, async (request) => overlap(opts.stores, request.workspaceId, request.body.audiences, { at: opts.clock(), budgetMs: opts.budgetMs }));
};
