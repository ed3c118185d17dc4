// The lift report's request and answer (decisions §14), one zod schema each for the route, the
// OpenAPI document and the console.

import { z } from 'zod';
import { attributionFields, currencyField, instant } from './request.js';

export const liftRequest = z.object({
  audience_id: z.string().min(1).max(128).describe('a saved audience with splits: its current snapshot\'s members are compared'),
  from: instant.describe('inclusive'),
  to: instant.describe('exclusive'),
  ...attributionFields,
  model: attributionFields.model.unwrap().optional()
    .describe('absent: all of every member\'s payments in the range; a model: only the revenue it attributes to touches (its Non-attributed left out, docs/reports.md)'),
  currency: currencyField,
}).superRefine((value, ctx) => {
  if (value.lookback_days !== undefined && (value.model ?? 'first_touch') === 'first_touch') {
    ctx.addIssue({ code: 'custom', path: ['lookback_days'], message: 'lookback_days is for a model other than first_touch' });
  }
  if (value.half_life_days !== undefined && value.model !== 'time_decay') {
    ctx.addIssue({ code: 'custom', path: ['half_life_days'], message: 'half_life_days is time_decay\'s' });
  }
});
export type LiftRequest = z.infer<typeof liftRequest>;

const perCurrency = z.record(z.string(), z.number()).describe('per currency (lowercase ISO code), in minor units');

const difference = z.object({
  estimate: z.number().describe('this split\'s revenue per member minus the holdout\'s, minor units'),
  low: z.number().describe('95 % interval, low end (Welch\'s standard error, normal quantile)'),
  high: z.number().describe('95 % interval, high end'),
});

const liftSplit = z.object({
  name: z.string(),
  percent: z.number(),
  holdout: z.boolean().describe('no destination: never pushed'),
  members: z.number().int().describe('members of the snapshot placed in this split'),
  paying_members: z.number().int().describe('members with a payment in the range'),
  revenue: perCurrency.describe('payments minus refunds of the split\'s members in the range'),
  revenue_per_member: perCurrency.describe('revenue divided by members (those without a payment count as 0)'),
  difference: z.record(z.string(), difference).nullable()
    .describe('per currency, against the holdout; null for the holdout itself, or without one'),
});
export type LiftSplit = z.infer<typeof liftSplit>;

export const liftAnswer = z.object({
  audience_id: z.string(),
  snapshot_id: z.number().int(),
  from: z.string(),
  to: z.string(),
  holdout: z.string().nullable().describe('the split compared against: the first without destinations'),
  interval: z.literal('welch_normal_95'),
  model: attributionFields.model.unwrap().nullable().describe('null: all of the members\' revenue; else only what this model attributes to touches'),
  lookback_days: z.number().int().nullable(),
  half_life_days: z.number().nullable(),
  hit_limit: z.boolean().describe('true: the budget ran out; splits is empty'),
  currencies: z.array(z.string()),
  splits: z.array(liftSplit),
});
export type LiftReport = z.infer<typeof liftAnswer>;
