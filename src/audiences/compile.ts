// Compile: validate a criteria tree against the workspace's property definitions and estimate the
// audience size within the budget. The budget is the whole call's: the catalog lookup, validation
// and the wait for the engine spend it before the query does. The estimate's place is
// taken first, so an overloaded service refuses a compile before doing any of it.

import { type CriteriaError, isTimeWindowed, planCriteria, validateCriteria } from '../criteria/index.js';
import { AppError } from '../errors.js';
import { type AnalyticsStore, type EstimateTurn, EstimatesBusy } from '../store/analytics.js';

export interface Estimate {
  count: number | null;
  is_estimate: boolean;
  hit_limit: boolean;
}

export type CompileResult =
  | { valid: true; is_time_windowed: boolean; estimated_count: Estimate }
  | { valid: false; is_time_windowed: null; estimated_count: null; errors: CriteriaError[] };

export interface EstimateOptions {
  /** Evaluation time: `last_n_days` windows end here. */
  at: Date;
  /** From the call on. */
  budgetMs: number;
}

export async function compileCriteria(
  analytics: AnalyticsStore, workspaceId: string, criteriaJson: unknown, options: EstimateOptions,
): Promise<CompileResult> {
  const turn = takeTurn(analytics, options.budgetMs);
  try {
    const validation = validateCriteria(criteriaJson, await analytics.propertyCatalog(workspaceId));
    if (!validation.ok) return { valid: false, is_time_windowed: null, estimated_count: null, errors: validation.errors };
    const count = await turn.count(planCriteria(validation.criteria, options.at), workspaceId);
    return {
      valid: true,
      is_time_windowed: isTimeWindowed(validation.criteria.root),
      estimated_count: { count, is_estimate: count === null, hit_limit: count === null },
    };
  } finally {
    turn.end();
  }
}

/** The estimate's place, before any work: an overloaded service answers 503 at once. */
export function takeTurn(analytics: AnalyticsStore, budgetMs: number): EstimateTurn {
  try {
    return analytics.estimateTurn(budgetMs);
  } catch (err) {
    if (!(err instanceof EstimatesBusy)) throw err;
    const seconds = Math.max(1, Math.ceil(err.retryAfterMs / 1000));
    throw new AppError('overloaded', `too many estimates at once; retry in ${seconds} s`, { retry_after_seconds: seconds });
  }
}
