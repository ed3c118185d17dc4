// What the query layer (store/query/queries.ts) needs of an engine: its dialect's printer, its
// admission of estimates, and statements run within a deadline (stopped inside the engine past
// it), read whole, copied to a file or profiled. One implementation per engine, in its folder.

import type { CompiledQuery, Printer, SetPlan } from '../../criteria/index.js';
import type { EstimateStats } from '../analytics.js';

export type Row = Record<string, unknown>;

/** An estimate's place, taken when its request starts: it ends by `deadline` (a performance.now() time). */
export interface EstimatePlace {
  readonly deadline: number;
}

export interface QueryDriver<Q> {
  /** The engine's dialect. */
  readonly printer: Printer<Q>;
  /** `plan` as this engine prints it: the same rows, perhaps read another way (DuckDB's typed payload columns). */
  prepare(plan: SetPlan, ws: string): Promise<SetPlan>;

  /** A place for an estimate ending by `deadline`; throws EstimatesBusy at once when the queue is full. */
  admit(deadline: number): EstimatePlace;
  /** Gives a place back (again is harmless). */
  leave(place: EstimatePlace): void;
  /** The estimates' state and counters since the store opened. */
  stats(): EstimateStats;

  /**
   * The rows of `query`, run when a place to run is free, or null once `deadline` has passed, whether
   * waiting or running (the statement is then stopped inside the engine, or never starts).
   */
  readBy(query: Q, deadline: number): Promise<Row[] | null>;
  /** The engine's profile of `query` as it ran (its plan, operator by operator), by `deadline` like readBy. */
  profileBy(query: Q, deadline: number): Promise<string | null>;

  /** Every row of `query`, without a limit. */
  rows(query: Q): Promise<Row[]>;
  /** Writes the rows of `query` to `path` (a file the caller chose), as the engine formats them; the row count. */
  copyTo(query: Q, path: string, format: 'csv' | 'parquet'): Promise<number>;
  /** `query` as it runs, shown to a person: its text and its parameters in order. */
  shown(query: Q): CompiledQuery;
}
