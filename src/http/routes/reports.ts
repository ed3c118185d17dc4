// Reports (issue 18 §2, decisions §14), secret key: the revenue and lift reports, under the estimate's budget.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { liftReport } from '../../reports/lift.js';
import { liftAnswer, liftRequest } from '../../reports/lift-schema.js';
import { revenueRequest } from '../../reports/request.js';
import { revenueAnswer } from '../../reports/response.js';
import { revenueReport } from '../../reports/revenue.js';
import type { Stores } from '../../store/open.js';
import { REQUEST_EXAMPLES } from '../examples.js';

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
      response: { 200: revenueAnswer },
    },
  }, async (request) => revenueReport(opts.stores.analytics, opts.stores.control, request.workspaceId, request.body, {
    at: opts.clock(),
    budgetMs: opts.budgetMs,
  }));

  app.post('/v1/reports/lift', {
    config: { auth: 'secret', limit: 'compile' },
    schema: {
      tags: ['reports'], summary: 'Revenue lift of an audience\'s splits against its holdout',
      description: 'The members of the audience\'s current snapshot per split, those paying in the range, their revenue per member '
        + 'per currency (payments minus refunds, minor units), and each split\'s difference from the holdout (the first split '
        + 'without destinations) with a 95 % interval (docs/reports.md). Within the estimate budget; past it hit_limit is true.',
      body: liftRequest,
      response: { 200: liftAnswer },
    },
  }, async (request) => liftReport(opts.stores.analytics, opts.stores.control, request.workspaceId, request.body, { budgetMs: opts.budgetMs }));
};
