// Compile: validate a criteria tree against the workspace's property definitions and estimate the
// audience size within the budget.

import {
  type CriteriaError, isTimeWindowed, planCriteria, printCount, validateCriteria,
} from '../criteria/index.js';
import type { Store } from '../store/db.js';
import { propertyCatalog } from '../store/properties.js';

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
  budgetMs: number;
}

export async function compileCriteria(
  store: Store, workspaceId: string, criteriaJson: unknown, options: EstimateOptions,
): Promise<CompileResult> {
  const validation = validateCriteria(criteriaJson, await propertyCatalog(store, workspaceId));
  if (!validation.ok) return { valid: false, is_time_windowed: null, estimated_count: null, errors: validation.errors };
  const query = printCount(planCriteria(validation.criteria, options.at), workspaceId);
  const count = await store.countWithin(query.sql, query.params, options.budgetMs);
  return {
    valid: true,
    is_time_windowed: isTimeWindowed(validation.criteria.root),
    estimated_count: { count, is_estimate: count === null, hit_limit: count === null },
  };
}
