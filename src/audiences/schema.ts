// The audiences API's shapes, each declared once: the requests and answers of saved audiences,
// their members and deliveries, estimates and overlaps. The routes validate and document with
// them, the features and the console take their types (z.infer).

import { z } from 'zod';
import { BREAKDOWN_NAMES, BREAKDOWN_TOP } from '../criteria/index.js';
import { criteriaJson, savedCriteria } from '../criteria/envelope.js';
import { criteriaError, criteriaWarning } from '../criteria/errors.js';
import { OTHER_VALUES } from './compile.js';
import { destinationInput, publicDestinationSchema } from './destinations/schema.js';
import { durationMs, MAX_REFRESH_MS, MIN_REFRESH_MS } from './duration.js';
import { MAX_OVERLAP, MIN_OVERLAP } from './overlap.js';
import { splitSchema, splitsInput } from './splits.js';

const CRITERIA = 'AudienceCriteria { version: 1, root }, or a JSON string holding it';

const refreshEvery = z.string()
  .refine((v) => durationMs(v) !== null, 'expected a duration such as 15m, 1h or 1d')
  .refine((v) => (durationMs(v) ?? MIN_REFRESH_MS) >= MIN_REFRESH_MS, 'the minimum is 5m')
  .refine((v) => (durationMs(v) ?? 0) <= MAX_REFRESH_MS, 'the maximum is 365d')
  .describe('refresh cadence: 15m, 1h, 1d…; minimum 5m, default 1h');

const name = z.string().trim().min(1).max(200);
const destinations = z.array(destinationInput).max(10);

export const audienceInput = z.object({
  name,
  criteria_json: criteriaJson(CRITERIA).refine((v) => v !== undefined, 'criteria_json is required'),
  refresh_every: refreshEvery.optional(),
  destinations: destinations.optional(),
  splits: splitsInput.optional(),
});
export type AudienceInput = z.infer<typeof audienceInput>;

export const audiencePatch = audienceInput.extend({ name: name.optional(), criteria_json: criteriaJson(CRITERIA).optional() });
export type AudiencePatch = z.infer<typeof audiencePatch>;

export const AUDIENCE_STATUSES = ['pending', 'refreshing', 'ready', 'failed'] as const;

export const audience = z.object({
  id: z.string(),
  name: z.string(),
  criteria_json: savedCriteria(),
  status: z.enum(AUDIENCE_STATUSES),
  member_count: z.number().int().nullable(),
  last_refreshed_at: z.string().nullable(),
  next_refresh_at: z.string(),
  is_time_windowed: z.boolean(),
  refresh_every: z.string(),
  destinations: z.array(publicDestinationSchema).describe('secrets are never shown'),
  splits: z.array(splitSchema).describe('holdouts and arms ([] without); a split without destinations is a holdout'),
  last_error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Audience = z.infer<typeof audience>;

/** A member's public ids: a person's, or an anonymous visitor's. */
export const member = z.object({
  person_id: z.string().nullable(),
  visitor_id: z.string().nullable(),
  external_id: z.string().nullable(),
  email: z.string().nullable(),
});
export type Member = z.infer<typeof member>;

/** A member of a snapshot: its split too when the audience has splits. */
export const snapshotMember = member.extend({ split: z.string().optional().describe('the member\'s split, when the audience has splits') });

export type SnapshotMember = z.infer<typeof snapshotMember>;

export const membersPage = z.object({ data: z.array(snapshotMember), next_cursor: z.string().nullable() });

const attempt = z.object({
  page: z.number().int(),
  request: z.string(),
  attempt: z.number().int(),
  ok: z.boolean(),
  http_status: z.number().int().nullable(),
  error: z.string().nullable(),
  attempted_at: z.string(),
});

export const delivery = z.object({
  delivery_id: z.string(),
  destination_id: z.string(),
  snapshot_id: z.number().int(),
  status: z.enum(['pending', 'delivered', 'failed', 'canceled']),
  pages_delivered: z.number().int(),
  added: z.number().int().nullable().describe('members the delivery adds (null until it starts)'),
  removed: z.number().int().nullable().describe('members the delivery removes (null until it starts)'),
  skipped: z.number().int().describe('members not sent: without an email, or withheld for their ads consent (ad platforms)'),
  last_error: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  attempts: z.array(attempt),
});
export type Delivery = z.infer<typeof delivery>;

export const compileRequest = z.object({
  criteria_json: criteriaJson(CRITERIA).optional(),
  breakdown: z.string().optional().describe(`the audience per value of ${BREAKDOWN_NAMES.join(', ')} (channel_category: of the first touch)`),
});

const approximate = z.object({
  count: z.number().int().describe('the sampled profiles scaled by the sample fraction'),
  low: z.number().int().describe('95 % interval, low end'),
  high: z.number().int().describe('95 % interval, high end'),
  sample_fraction: z.number().describe('the part of the profiles sampled (a hash of the profile key)'),
});
export type Approximate = z.infer<typeof approximate>;

const estimate = z.object({
  count: z.number().int().nullable().describe('null when the estimate exceeded its budget'),
  is_estimate: z.boolean(),
  hit_limit: z.boolean(),
  approximate: approximate.nullable().optional()
    .describe('with hit_limit only: the count over a deterministic sample of profiles, run in the rest of the budget; null when it missed too'),
});
export type Estimate = z.infer<typeof estimate>;

const breakdownRow = z.object({ value: z.string().nullable(), count: z.number().int() });
export type BreakdownRow = z.infer<typeof breakdownRow>;

const validCompile = z.object({
  valid: z.literal(true),
  is_time_windowed: z.boolean(),
  estimated_count: estimate,
  breakdown: z.array(breakdownRow).nullable().optional()
    .describe(`with a breakdown: the ${BREAKDOWN_TOP} most frequent values, most first, then "${OTHER_VALUES}" for the rest (the counts add up to the count); null past the budget`),
  warnings: z.array(criteriaWarning).optional()
    .describe('present when the valid tree names what the workspace has not seen yet (unknown_event): likely a typo, it counts no one until such data arrives'),
});

const invalidCompile = z.object({
  valid: z.literal(false),
  is_time_windowed: z.null(),
  estimated_count: z.null(),
  code: criteriaError.shape.code,
  path: z.string(),
  message: z.string(),
  errors: z.array(criteriaError),
});

export const compileAnswer = z.union([validCompile, invalidCompile]);
export type CompileAnswer = z.infer<typeof compileAnswer>;
/** What the feature decides; the answer adds the first fault's code, path and message. */
export type CompileResult = z.infer<typeof validCompile> | Omit<z.infer<typeof invalidCompile>, 'code' | 'path' | 'message'>;

export const overlapRequest = z.object({
  audiences: z.array(z.union([
    z.object({ audience_id: z.string().min(1) }).strict(),
    z.object({ criteria_json: criteriaJson(CRITERIA).refine((v) => v !== undefined, 'criteria_json is required') }).strict(),
  ])).min(MIN_OVERLAP).max(MAX_OVERLAP),
});
export type OverlapInput = z.infer<typeof overlapRequest>['audiences'][number];

export const overlapAnswer = z.object({
  hit_limit: z.boolean().describe('true: the budget ran out; the sizes are null'),
  sizes: z.array(z.number().int()).nullable().describe('each audience\'s size, in the order given'),
  intersections: z.array(z.object({ of: z.array(z.number().int()).describe('indexes of the audiences'), count: z.number().int() })).nullable()
    .describe('every intersection of two or more of the audiences, pairs first'),
  union: z.number().int().nullable(),
});
export type OverlapResult = z.infer<typeof overlapAnswer>;
