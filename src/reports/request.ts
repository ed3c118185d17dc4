// The revenue report's request, one zod schema for the HTTP route (validation, types, the OpenAPI
// document) and the command line.

import { z } from 'zod';
import { criteriaJson } from '../criteria/envelope.js';
import { ATTRIBUTION_MODELS, DEFAULT_HALF_LIFE_DAYS, DEFAULT_LOOKBACK_DAYS, MAX_LOOKBACK_DAYS, REPORT_INTERVALS } from '../criteria/index.js';

export const instant = z.union([z.iso.date(), z.iso.datetime({ offset: true, local: true })],
  { error: 'expected an ISO 8601 date such as 2025-11-01, or a datetime such as 2025-11-01T00:00:00Z' })
  .describe('ISO 8601 date (UTC midnight) or datetime (UTC unless it has an offset)');

/** The attribution model and its parameters, for the revenue and lift reports. */
export const attributionFields = {
  model: z.enum(ATTRIBUTION_MODELS).optional()
    .describe('first_touch (default): each customer to its earliest page view; the others split each payment over the page views of its lookback (docs/reports.md)'),
  lookback_days: z.number().int().min(1).max(MAX_LOOKBACK_DAYS).optional()
    .describe(`the days before each payment whose page views count (default ${DEFAULT_LOOKBACK_DAYS}); not for first_touch`),
  half_life_days: z.number().positive().max(MAX_LOOKBACK_DAYS).optional()
    .describe(`time_decay: a touch this many days older than the latest weighs half (default ${DEFAULT_HALF_LIFE_DAYS})`),
};

/** `currency` of the revenue and lift reports. */
export const currencyField = z.string().regex(/^[A-Za-z]{3}$/, { error: 'expected a three-letter currency code such as usd' }).optional()
  .describe('every amount in this currency, converted at its day\'s rate of the workspace\'s exchange rates (npx audiences rates load; docs/reports.md)');

export const revenueRequest = z.object({
  from: instant.describe('inclusive'),
  to: instant.describe('exclusive; at most 1,000 buckets of the interval after from'),
  interval: z.enum(REPORT_INTERVALS),
  group_by: z.string().min(1).max(300)
    .describe('channel_category, channel, campaign, medium, referrer_host, landing_path, or traits.<path> of a trait defined in the workspace'),
  ...attributionFields,
  currency: currencyField,
  filter: z.unknown().optional().describe('trait predicates, as a person leaf\'s filter: { "traits.plan": { "op": "=", "value": "pro" } }'),
  criteria_json: criteriaJson('AudienceCriteria: only the people of this audience, evaluated now').optional(),
  audience_id: z.string().min(1).max(128).optional().describe('a saved audience: only its people, its criteria evaluated now'),
}).superRefine((value, ctx) => {
  if (value.lookback_days !== undefined && (value.model ?? 'first_touch') === 'first_touch') {
    ctx.addIssue({ code: 'custom', path: ['lookback_days'], message: 'first_touch takes no lookback (its touch is the earliest page view); choose another model' });
  }
  if (value.half_life_days !== undefined && value.model !== 'time_decay') {
    ctx.addIssue({ code: 'custom', path: ['half_life_days'], message: 'half_life_days is time_decay\'s' });
  }
  if (value.criteria_json !== undefined && value.audience_id !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['audience_id'], message: 'give criteria_json or audience_id, not both' });
  }
});
