// The lift report's plan (decisions §14): the members of an audience's snapshot, placed in its
// splits, and the money each paid in a range. Dialect-free, the only input of the printers' lift
// statements (print/duckdb-lift.ts, print/clickhouse-lift.ts).

import type { SplitPlacement } from './splits.js';

export interface LiftPlan {
  /** The snapshot whose members are compared. */
  snapshotId: number;
  placement: SplitPlacement;
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
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
