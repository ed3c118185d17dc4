// The revenue report's request, one zod schema for the HTTP route (validation, types, the OpenAPI
// document) and the command line.

import { z } from 'zod';
import { criteriaJson } from '../criteria/envelope.js';
import { ATTRIBUTION_MODELS, REPORT_INTERVALS } from '../criteria/index.js';

const instant = z.union([z.iso.date(), z.iso.datetime({ offset: true, local: true })],
  { error: 'expected an ISO 8601 date such as 2025-11-01, or a datetime such as 2025-11-01T00:00:00Z' })
  .describe('ISO 8601 date (UTC midnight) or datetime (UTC unless it has an offset)');

export const revenueRequest = z.object({
  from: instant.describe('inclusive'),
  to: instant.describe('exclusive; at most 1,000 buckets of the interval after from'),
  interval: z.enum(REPORT_INTERVALS),
  group_by: z.string().min(1).max(300)
    .describe('channel_category, channel, campaign, medium, referrer_host, landing_path, or traits.<path> of a trait defined in the workspace'),
  model: z.enum(ATTRIBUTION_MODELS).optional()
    .describe('first_touch (default): the earliest page view of the customer\'s visitors; last_touch: the last non-Direct page view before its first payment'),
  filter: z.unknown().optional().describe('trait predicates, as a person leaf\'s filter: { "traits.plan": { "op": "=", "value": "pro" } }'),
  criteria_json: criteriaJson('AudienceCriteria: only the people of this audience, evaluated now').optional(),
  audience_id: z.string().min(1).max(128).optional().describe('a saved audience: only its people, its criteria evaluated now'),
}).superRefine((value, ctx) => {
  if (value.criteria_json !== undefined && value.audience_id !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['audience_id'], message: 'give criteria_json or audience_id, not both' });
  }
});
