// Compile: validate a criteria tree against the workspace's property definitions and estimate the
// audience size within the budget. The budget is the whole call's: the catalog lookup, validation
// and the wait for the engine spend it before the query does. The estimate's place is
// taken first, so an overloaded service refuses a compile before doing any of it.
//
// The budget is split: the exact count (or breakdown) may run until EXACT_SHARE of it; when it
// misses, the count of a deterministic 1 % sample of profiles runs in what is left, and the answer
// carries it scaled, with a 95 % interval (approximate.ts).

import {
  type Breakdown, isTimeWindowed, parseBreakdown, planCriteria, type PropertyCatalog, type Sample, validateCriteria,
} from '../criteria/index.js';
import { AppError, invalidRequest } from '../errors.js';
import { type AnalyticsStore, type EstimateTurn, EstimatesBusy } from '../store/analytics.js';
import { approximateCount } from './approximate.js';
import type { BreakdownRow, CompileResult, Estimate } from './schema.js';

export interface EstimateOptions {
  /** Evaluation time: `last_n_days` windows end here. */
  at: Date;
  /** From the call on. */
  budgetMs: number;
  /** A breakdown as written (`channel_category`, `traits.plan`, `subscription.status`…). */
  breakdown?: string;
  /** The part of the budget the exact query may take; EXACT_SHARE unless set (tests set 0 to see the sample). */
  exactShare?: number;
  /** The sample taken past the exact query; DEFAULT_SAMPLE unless set. */
  sample?: Sample;
}

/**
 * The exact query's part of the budget; the sampled one gets the rest. The sample skips the payload
 * JSON of rows whose person is known, not the reads of the tables (bench/RESULTS.md, "Breakdowns,
 * sampled counts and overlaps": cheaper than the exact count, not always by much), so a quarter of
 * the budget is left to it.
 */
export const EXACT_SHARE = 0.75;

/** One profile in a hundred, by a hash of its key. */
export const DEFAULT_SAMPLE: Sample = { modulus: 10_000, keep: 100, salt: 0 };

/** The `(other)` row of a breakdown: the profiles of every value past the top ones. */
export const OTHER_VALUES = '(other)';

export async function compileCriteria(
  analytics: AnalyticsStore, workspaceId: string, criteriaJson: unknown, options: EstimateOptions,
): Promise<CompileResult> {
  const start = performance.now();
  const turn = takeTurn(analytics, options.budgetMs);
  try {
    const catalog = await analytics.propertyCatalog(workspaceId);
    const breakdown = options.breakdown === undefined ? undefined : checkedBreakdown(options.breakdown, catalog);
    const validation = validateCriteria(criteriaJson, catalog);
    if (!validation.ok) return { valid: false, is_time_windowed: null, estimated_count: null, errors: validation.errors };
    const plan = planCriteria(validation.criteria, options.at);
    const exactBy = start + (options.exactShare ?? EXACT_SHARE) * (turn.deadline - start);
    let count: number | null;
    let rows: BreakdownRow[] | null | undefined;
    if (breakdown) {
      const counts = await turn.breakdown(plan, workspaceId, breakdown, { by: exactBy });
      count = counts?.total ?? null;
      rows = counts && withOther(counts.top, counts.total);
    } else {
      count = await turn.count(plan, workspaceId, { by: exactBy });
    }
    const estimated: Estimate = { count, is_estimate: count === null, hit_limit: count === null };
    if (count === null) estimated.approximate = await approximateCount(turn, plan, workspaceId, options.sample ?? DEFAULT_SAMPLE);
    return {
      valid: true,
      is_time_windowed: isTimeWindowed(validation.criteria.root),
      estimated_count: estimated,
      ...(rows === undefined ? {} : { breakdown: rows }),
      ...(validation.warnings.length > 0 ? { warnings: validation.warnings } : {}),
    };
  } finally {
    turn.end();
  }
}

function checkedBreakdown(raw: string, catalog: PropertyCatalog): Breakdown {
  const parsed = parseBreakdown(raw, catalog);
  if ('code' in parsed) throw invalidRequest([{ field: '/breakdown', message: parsed.message }]);
  return parsed;
}

/** The top values, then `(other)` with the rest of the total when there is a rest: the counts add up to the total. */
function withOther(top: BreakdownRow[], total: number): BreakdownRow[] {
  const rest = total - top.reduce((sum, row) => sum + row.count, 0);
  return rest > 0 ? [...top, { value: OTHER_VALUES, count: rest }] : top;
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
