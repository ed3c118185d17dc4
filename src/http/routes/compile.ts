import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { compileCriteria } from '../../audiences/compile.js';
import { CRITERIA_ERROR_CODES } from '../../criteria/index.js';
import type { AnalyticsStore } from '../../store/analytics.js';
import { REQUEST_EXAMPLES } from '../examples.js';

const criteriaError = z.object({
  code: z.enum(CRITERIA_ERROR_CODES),
  path: z.string().describe('JSON Pointer into the criteria envelope, e.g. /root/children/1/occurrence/count'),
  message: z.string(),
});

const compileResponse = z.union([
  z.object({
    valid: z.literal(true),
    is_time_windowed: z.boolean(),
    estimated_count: z.object({
      count: z.number().int().nullable().describe('null when the estimate exceeded its budget'),
      is_estimate: z.boolean(),
      hit_limit: z.boolean(),
    }),
  }),
  z.object({
    valid: z.literal(false),
    is_time_windowed: z.null(),
    estimated_count: z.null(),
    code: criteriaError.shape.code,
    path: z.string(),
    message: z.string(),
    errors: z.array(criteriaError),
  }),
]);

export interface CompileRouteOptions {
  analytics: AnalyticsStore;
  budgetMs: number;
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
      body: z.object({
        criteria_json: z.unknown().optional().describe('AudienceCriteria { version: 1, root }, or a JSON string holding it'),
      }).meta({ example: REQUEST_EXAMPLES.compile }),
      response: { 200: compileResponse },
    },
  }, async (request) => {
    const result = await compileCriteria(opts.analytics, request.workspaceId, request.body.criteria_json, {
      at: opts.clock(),
      budgetMs: opts.budgetMs,
    });
    if (result.valid) return result;
    const first = result.errors[0]!;
    return { ...result, code: first.code, path: first.path, message: first.message };
  });
};
