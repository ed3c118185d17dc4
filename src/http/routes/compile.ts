import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { compileCriteria, OTHER_VALUES } from '../../audiences/compile.js';
import { MAX_OVERLAP, MIN_OVERLAP, overlap } from '../../audiences/overlap.js';
import { BREAKDOWN_NAMES, BREAKDOWN_TOP, CRITERIA_ERROR_CODES } from '../../criteria/index.js';
import type { Stores } from '../../store/open.js';
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
      approximate: z.object({
        count: z.number().int().describe('the sampled profiles scaled by the sample fraction'),
        low: z.number().int().describe('95 % interval, low end'),
        high: z.number().int().describe('95 % interval, high end'),
        sample_fraction: z.number().describe('the part of the profiles sampled (a hash of the profile key)'),
      }).nullable().optional().describe('with hit_limit only: the count over a deterministic sample of profiles, run in the rest of the budget; null when it missed too'),
    }),
    breakdown: z.array(z.object({ value: z.string().nullable(), count: z.number().int() })).nullable().optional()
      .describe(`with a breakdown: the ${BREAKDOWN_TOP} most frequent values, most first, then "${OTHER_VALUES}" for the rest (the counts add up to the count); null past the budget`),
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
  stores: Stores;
  budgetMs: number;
  /** The part of the budget the exact query may take (the sampled one gets the rest); compile.ts EXACT_SHARE by default. */
  exactShare?: number;
  clock: () => Date;
}

const overlapResponse = z.object({
  hit_limit: z.boolean().describe('true: the budget ran out; the sizes are null'),
  sizes: z.array(z.number().int()).nullable().describe('each audience\'s size, in the order given'),
  intersections: z.array(z.object({ of: z.array(z.number().int()).describe('indexes of the audiences'), count: z.number().int() })).nullable()
    .describe('every intersection of two or more of the audiences, pairs first'),
  union: z.number().int().nullable(),
});

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
        breakdown: z.string().optional().describe(`the audience per value of ${BREAKDOWN_NAMES.join(', ')} (channel_category: of the first touch)`),
      }).meta({ example: REQUEST_EXAMPLES.compile }),
      response: { 200: compileResponse },
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
      body: z.object({
        audiences: z.array(z.union([
          z.object({ audience_id: z.string().min(1) }).strict(),
          z.object({ criteria_json: z.unknown().refine((v) => v !== undefined, 'criteria_json is required') }).strict(),
        ])).min(MIN_OVERLAP).max(MAX_OVERLAP),
      }).meta({ example: REQUEST_EXAMPLES.overlap }),
      response: { 200: overlapResponse },
    },
  }, async (request) => overlap(opts.stores, request.workspaceId, request.body.audiences, { at: opts.clock(), budgetMs: opts.budgetMs }));
};
