// Errors the stores raise that a caller may answer for: the store knows nothing of HTTP, so each is
// mapped to an answer in the one place errors become responses (http/errors.ts).

/**
 * A unit's control rows are committed and its analytical rows kept in the outbox, but the
 * analytical store has not acknowledged them yet: they are inserted as soon as it does.
 */
export class AnalyticsDelayed extends Error {
  constructor(options?: ErrorOptions) {
    super('the analytical store has not acknowledged the rows yet; they are kept', options);
  }
}

/**
 * Rows of erased keys are still stored after the delete's rounds: inserts that committed before
 * the control rows went kept landing. Trying the delete again erases them.
 */
export class RowsStillLanding extends Error {
  constructor(rounds: number) {
    super(`rows of erased persons are still stored after ${rounds} rounds; the request is tried again`);
  }
}

/** The stores a request depends on, as answers and /health name them. */
export type Dependency = 'postgresql' | 'clickhouse' | 'duckdb';

/**
 * A store did not answer within its bound, refused the connection, or cannot write (a full disk, a
 * database DuckDB invalidated): an outage, not a fault of the request. `reason` is ours, one line,
 * never the engine's text (it can quote a statement).
 */
export class DependencyUnavailable extends Error {
  constructor(readonly dependency: Dependency, readonly reason: string, options?: ErrorOptions) {
    super(`${dependency}: ${reason}`, options);
  }
}

/** `err` as DependencyUnavailable when `outage` recognises it (a reason), else `err` itself. */
export function asOutage(dependency: Dependency, err: unknown, outage: (err: unknown) => string | null): unknown {
  if (err instanceof DependencyUnavailable) return err;
  const reason = outage(err);
  return reason === null ? err : new DependencyUnavailable(dependency, reason, { cause: err });
}
