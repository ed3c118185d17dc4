// Reports (issue 18 §2), secret key: the revenue report, under the estimate's budget.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ATTRIBUTION_MODELS, REPORT_INTERVALS } from '../../criteria/index.js';
import { revenueRequest } from '../../reports/request.js';
import { revenueReport } from '../../reports/revenue.js';
import type { Stores } from '../../store/open.js';
import { REQUEST_EXAMPLES } from '../examples.js';

const amounts = z.record(z.string(), z.number().int()).describe('per currency (lowercase ISO code), in minor units');

const figures = {
  revenue: amounts.describe('payments minus refunds, per currency, in minor units'),
  refunds: amounts.describe('refunded amounts (positive), per currency, in minor units'),
  refund_count: z.number().int(),
  paying_customers: z.number().int().describe('distinct customers with a payment'),
  new_paying_customers: z.number().int().describe('customers whose first payment ever falls here'),
};

const revenueResponse = z.object({
  from: z.string(),
  to: z.string(),
  interval: z.enum(REPORT_INTERVALS),
  group_by: z.string(),
  model: z.enum(ATTRIBUTION_MODELS),
  hit_limit: z.boolean().describe('true: the budget ran out; rows is empty and totals null'),
  currencies: z.array(z.string()).describe('the currencies present, sorted'),
  rows: z.array(z.object({
    bucket: z.string().describe('the bucket\'s first day, UTC: weeks start on Monday, months on the 1st'),
    group: z.string().nullable().describe('the touch\'s (or trait\'s) value; null when it has none; Non-attributed for customers without a touch (or person)'),
    ...figures,
  })),
  totals: z.object(figures).nullable(),
});

export interface ReportRouteOptions {
  stores: Stores;
  budgetMs: number;
  clock: () => Date;
}

export const reportRoutes: FastifyPluginAsyncZod<ReportRouteOptions> = async (app, opts) => {
  app.post('/v1/reports/revenue', {
    config: { auth: 'secret', limit: 'compile' },
    schema: {
      tags: ['reports'], summary: 'Revenue per period and channel (or trait), net of refunds, per currency',
      description: 'Paid invoices and one-time payments minus refunds, in minor units, one figure per currency, per bucket and group. '
        + 'Customers that no visitor is linked to are the Non-attributed group, so the totals are the processor\'s for the period. '
        + 'Within the estimate budget from the request\'s start; past it the query is cancelled and hit_limit is true. '
        + 'Faults of filter, group_by or the audience answer 400 invalid_criteria with every fault, its path a JSON Pointer into this body.',
      body: revenueRequest.meta({ example: REQUEST_EXAMPLES.revenue }),
      response: { 200: revenueResponse },
    },
  }, async (request) => revenueReport(opts.stores.analytics, opts.stores.control, request.workspaceId, request.body, {
    at: opts.clock(),
    budgetMs: opts.budgetMs,
  }));
};
