// Compile: validate a criteria tree against the workspace's property definitions and estimate the
// audience size within the budget. The budget is the whole call's: the catalog lookup, validation
// and the wait for an estimate connection spend it before the query does. The estimate's place is
// taken first, so an overloaded service refuses a compile before doing any of it.

import {
  type CriteriaError, isTimeWindowed, planCriteria, printCount, validateCriteria,
} from '../criteria/index.js';
import { AppError } from '../errors.js';
import { type EstimateTurn, EstimatesBusy, type Store } from '../store/duckdb/db.js';
import { propertyCatalog } from '../store/duckdb/properties.js';

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
  store: Store, workspaceId: string, criteriaJson: unknown, options: EstimateOptions,
): Promise<CompileResult> {
  const turn = takeTurn(store, options.budgetMs);
  try {
    const validation = validateCriteria(criteriaJson, await propertyCatalog(store, workspaceId));
    if (!validation.ok) return { valid: false, is_time_windowed: null, estimated_count: null, errors: validation.errors };
    const query = printCount(planCriteria(validation.criteria, options.at), workspaceId);
    const count = await turn.count(query.sql, query.params);
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
function takeTurn(store: Store, budgetMs: number): EstimateTurn {
  try {
    return store.estimateTurn(budgetMs);
  } catch (err) {
    if (!(err instanceof EstimatesBusy)) throw err;
    const seconds = Math.max(1, Math.ceil(err.retryAfterMs / 1000));
    throw new AppError('overloaded', `too many estimates at once; retry in ${seconds} s`, { retry_after_seconds: seconds });
  }
}
