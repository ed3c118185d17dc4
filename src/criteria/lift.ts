// The lift report's plan (decisions §14): the members of an audience's snapshot, placed in its
// splits, and the money each paid in a range. Dialect-free, the only input of the printers' lift
// statements (print/duckdb-lift.ts, print/clickhouse-lift.ts).

import { type AttributionModel, DEFAULT_HALF_LIFE_DAYS, DEFAULT_LOOKBACK_DAYS } from './attribution.js';
import type { ReportPlan } from './report.js';
import type { SplitPlacement } from './splits.js';

export interface LiftPlan {
  /** The snapshot whose members are compared. */
  snapshotId: number;
  placement: SplitPlacement;
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  /** null: all of a member's money in the range; else only what this model attributes to touches. */
  attribution: { model: AttributionModel; lookbackDays: number; halfLifeDays: number } | null;
  /** Every amount in this currency (lowercase), as the revenue report's `currency`; null: per currency. */
  currency: string | null;
}

/**
 * The revenue report over the lift's range and currency, whose rates the lift needs (Printer.missingRate)
 * and, under a model, whose attributed rows are the lift's money: the same model, grouped by
 * channel category (any touch column would do: only whether a row has a touch is read), over
 * everyone (the printers restrict it to the snapshot's members).
 */
export function liftRevenue(plan: LiftPlan): ReportPlan {
  const attribution = plan.attribution ?? { model: 'first_touch' as const, lookbackDays: DEFAULT_LOOKBACK_DAYS, halfLifeDays: DEFAULT_HALF_LIFE_DAYS };
  return { from: plan.from, to: plan.to, interval: 'month', ...attribution, group: { touch: 'channel_category' }, audience: null, currency: plan.currency };
}

/** The revenue report whose attributed rows are a modelled lift's money (liftRevenue); null without a model. */
export const liftAttribution = (plan: LiftPlan): ReportPlan | null => (plan.attribution ? liftRevenue(plan) : null);

/**
 * The lift statement's rows: per split (`currency` null) its members and paying members; per split
 * and currency the sum of its members' net revenue and of its squares (members without money in
 * the currency add 0 to both), minor units.
 */
export interface LiftRow {
  split: string;
  currency: string | null;
  members: number;
  paying: number;
  total: number;
  squares: number;
}
