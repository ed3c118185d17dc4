import fc from 'fast-check';
import { availableParallelism } from 'node:os';

// The suite's two tiers. CI=true (.ci/run) runs the property and fuzz tests at their full sizes; a
// developer's `npm test` runs a fraction of each, with the same seeds, so the same cases come first
// and a failure found in CI replays locally with CI=true.

export const FULL_TIER = process.env.CI === 'true';

/**
 * DuckDB's worker threads for a suite whose tables span several row groups (122,880 rows each),
 * where DuckDB runs parts of a plan in parallel: one per core in the CI tier (DuckDB's own
 * default), DUCKDB_THREADS (one, vitest.config.ts) otherwise.
 */
export const PARALLEL_THREADS = FULL_TIER ? availableParallelism() : undefined;

/** Of the full run count, the part a default run makes: never fewer than FLOOR (or the full count). */
const FRACTION = 0.1;
const FLOOR = 2;

/** The number of runs of a property: `full` under CI=true, a tenth of it (at least FLOOR) otherwise. */
export function tierRuns(full: number): number {
  if (FULL_TIER) return full;
  return Math.min(full, Math.max(FLOOR, Math.ceil(full * FRACTION)));
}

/**
 * fast-check's plugins for a property whose every run takes seconds (API calls on every engine):
 * runs and shrinking stop after `ms`, within vitest's 180 s testTimeout, so a failure reports the
 * counterexample shrunk so far instead of a timeout. Stopped before numRuns without a failure, the
 * property fails too: the time limit never lowers the run count silently.
 */
export const withinTestTimeout = (ms = 150_000) => [fc.interruptAfterTimeLimit(ms, { failOnInterrupt: true })];
