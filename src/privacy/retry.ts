// Which failures of a privacy pass are worth trying again at once: a write that lost to concurrent
// ingest (DuckDB's write-write conflicts, a write waiting too long behind ingest, ClickHouse rows
// still landing), rather than at the next tick. Anything else (a missing table, a bad request)
// fails the pass; the next tick takes it up, MAX_ATTEMPTS times at most.

import { DependencyUnavailable, RowsStillLanding } from '../store/errors.js';

/** Tries of a pass after its first, and the wait before the first of them (doubled each time, jittered). */
export const PASS_RETRIES = 3;
export const RETRY_BASE_MS = 50;

export function isTransient(err: unknown): boolean {
  if (err instanceof DependencyUnavailable || err instanceof RowsStillLanding) return true;
  // DuckDB's "Conflict on tuple deletion!", "write-write conflict", … (optimistic concurrency).
  return err instanceof Error && /\bconflict\b/i.test(err.message);
}

/** The wait before retry `n` (0-based). */
export const retryDelayMs = (n: number): number => RETRY_BASE_MS * 2 ** n * (0.5 + Math.random());
