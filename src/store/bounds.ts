// How long each store may take before it counts as down: past a bound the request answers 503
// `unavailable` naming the store (store/errors.ts DependencyUnavailable), never hangs. Defaults
// here, each settable by environment (config.ts; the README's "Bounds and health" lists them).
// No engine's client is loaded by this file: the command line reads it at every start.

export interface PostgresBounds {
  /** To open a connection (POSTGRES_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs: number;
  /** One statement: the server cancels it, and the client gives up on a frozen server a second later (POSTGRES_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs: number;
  /** An idle pooled connection is closed after it (POSTGRES_IDLE_TIMEOUT_MS). */
  idleTimeoutMs: number;
  /** TCP keepalive probes start after this much silence, so a vanished server is noticed (POSTGRES_KEEPALIVE_MS). */
  keepAliveMs: number;
}

/**
 * Connect: a server on the same network answers in milliseconds; 5 s rides out a busy accept
 * queue. Statements: the control store's are single-row reads and writes, 10 s is far past any of
 * them and within what a client retrying a 503 waits.
 */
export const POSTGRES_BOUNDS: PostgresBounds = { connectTimeoutMs: 5_000, statementTimeoutMs: 10_000, idleTimeoutMs: 30_000, keepAliveMs: 10_000 };

export interface ClickHouseBounds {
  /** No byte from the server for this long ends a request (CLICKHOUSE_REQUEST_TIMEOUT_MS); long queries send progress headers meanwhile. */
  requestTimeoutMs: number;
  /** The KILL QUERY of a statement past its deadline (CLICKHOUSE_KILL_TIMEOUT_MS): the statement's own limit stops it anyway. */
  killTimeoutMs: number;
}

/** Silence, not length: 10 s is the ingest's documented limit for an insert (analytics_delayed). */
export const CLICKHOUSE_BOUNDS: ClickHouseBounds = { requestTimeoutMs: 10_000, killTimeoutMs: 2_000 };

export interface DuckDBBounds {
  /** A write waiting this long for the writer (behind a stuck disk or a long checkpoint) is answered 503 and never runs (DUCKDB_WRITE_WAIT_MS). */
  writeWaitMs: number;
}

export const DUCKDB_BOUNDS: DuckDBBounds = { writeWaitMs: 10_000 };
