// A statement on a DuckDB connection stopped at a deadline inside DuckDB: the estimates'
// (driver.ts), a refresh's transaction and a streamed COPY (db.ts).

import type { DuckDBConnection } from '@duckdb/node-api';

export const INTERRUPTED = Symbol('interrupted');

/**
 * How often a spent budget interrupts again. DuckDB clears a connection's interrupt flag when a
 * statement or one of its phases begins (extract, prepare, execute: ClientContext::InitialCleanup),
 * so one interrupt that lands before execution starts is lost and the query runs to its end.
 */
const INTERRUPT_REPEAT_MS = 5;

/**
 * Runs `work` on `conn` within `limitMs`. From the deadline on, the connection is interrupted
 * every few ms until `work` has stopped; the answer is then INTERRUPTED, whether `work` failed or
 * its result came late. `work` may check `expired()` between phases to skip what is left.
 */
export async function interruptAfter<T>(
  conn: DuckDBConnection, limitMs: number, work: (expired: () => boolean) => Promise<T>, signal?: AbortSignal,
): Promise<T | typeof INTERRUPTED> {
  const deadline = performance.now() + limitMs;
  // A timer may fire a little before performance.now() reaches the deadline (Node starts it from
  // the event loop's cached time): once it has fired, the work is interrupted whatever the clock says.
  let interrupting = false;
  const expired = () => interrupting || performance.now() >= deadline;
  let repeat: NodeJS.Timeout | undefined;
  const interrupt = () => {
    if (interrupting) return;
    interrupting = true;
    conn.interrupt();
    repeat = setInterval(() => conn.interrupt(), INTERRUPT_REPEAT_MS);
  };
  // An abort (the service stopping) ends the work as the deadline would.
  if (signal?.aborted) interrupt();
  signal?.addEventListener('abort', interrupt);
  const timer = setTimeout(interrupt, limitMs);
  try {
    const result = await work(expired);
    return expired() ? INTERRUPTED : result;
  } catch (err) {
    if (expired()) return INTERRUPTED;
    throw err;
  } finally {
    clearTimeout(timer);
    clearInterval(repeat);
    signal?.removeEventListener('abort', interrupt);
  }
}
