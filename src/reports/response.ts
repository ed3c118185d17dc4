// The revenue report's answer, one zod schema beside the request's: the route serializes and
// documents with it, the report and the console take its types.

import { z } from 'zod';
import { ATTRIBUTION_MODELS, REPORT_INTERVALS } from '../criteria/index.js';

const amounts = z.record(z.string(), z.number().int()).describe('per currency (lowercase ISO code), in minor units');
export type Amounts = z.infer<typeof amounts>;

const figures = z.object({
  revenue: amounts.describe('payments minus refunds, per currency, in minor units'),
  refunds: amounts.describe('refunded amounts (positive), per currency, in minor units'),
  refund_count: z.number().int(),
  paying_customers: z.number().int().describe('distinct customers with a payment'),
  new_paying_customers: z.number().int().describe('customers whose first payment ever falls here'),
});
export type RevenueFigures = z.infer<typeof figures>;

const reportRow = z.object({
  bucket: z.string().describe('the bucket\'s first day, UTC: weeks start on Monday, months on the 1st'),
  group: z.string().nullable().describe('the touch\'s (or trait\'s) value; null when it has none; Non-attributed for customers without a touch (or person)'),
  ...figures.shape,
});
export type RevenueReportRow = z.infer<typeof reportRow>;

export const revenueAnswer = z.object({
  from: z.string(),
  to: z.string(),
  interval: z.enum(REPORT_INTERVALS),
  group_by: z.string(),
  model: z.enum(ATTRIBUTION_MODELS),
  lookback_days: z.number().int().nullable().describe('the lookback before each payment; null for first_touch'),
  half_life_days: z.number().nullable().describe('time_decay\'s half-life; null for the other models'),
  hit_limit: z.boolean().describe('true: the budget ran out; rows is empty and totals null'),
  currencies: z.array(z.string()).describe('the currencies present, sorted'),
  rows: z.array(reportRow),
  totals: figures.nullable(),
});
export type RevenueReport = z.infer<typeof revenueAnswer>;
