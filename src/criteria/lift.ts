// The lift report's plan (decisions §14): the members of an audience's snapshot, placed in its
// splits, and the money each paid in a range. Dialect-free, the only input of the printers' lift
// statements (print/duckdb-lift.ts, print/clickhouse-lift.ts).

import type { AttributionModel } from './attribution.js';
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
}

/**
 * The revenue report whose attributed rows are a modelled lift's money: the same model, grouped by
 * channel category (any touch column would do: only whether a row has a touch is read), over
 * everyone (the printers restrict it to the snapshot's members).
 */
export function liftAttribution(plan: LiftPlan): ReportPlan | null {
  if (!plan.attribution) return null;
  return { from: plan.from, to: plan.to, interval: 'month', ...plan.attribution, group: { touch: 'channel_category' }, audience: null };
}

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
