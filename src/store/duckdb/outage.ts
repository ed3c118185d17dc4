// Which DuckDB failures are an outage (the disk full or failing, the database invalidated by a
// failed checkpoint) rather than a fault of the statement: answered 503, never 500.

import { statfs } from 'node:fs/promises';

/** DuckDB stops serving after a fatal error (a checkpoint that could not write) until the database is opened again. */
export const invalidatesDatabase = (err: unknown): boolean =>
  err instanceof Error && /database has been invalidated|Reopen the database instance to recover/.test(err.message);

/** A COMMIT that DuckDB reports failed only because the automatic checkpoint after it failed: the transaction is durable (in the WAL). */
export const committedDespite = (err: unknown): boolean =>
  err instanceof Error && err.message.includes('Transaction COMMIT succeeded and is durable');

/** Why `err` is an outage of DuckDB, in our words; null for any other failure. */
export function duckdbOutage(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  if (invalidatesDatabase(err)) return 'the database is reopened after a failed checkpoint';
  if (/No space left on device|Disk quota exceeded/.test(err.message)) return 'the disk is full';
  if (err.message.startsWith('IO Error: ')) return 'a read or write of the database file failed';
  return null;
}

/** Below this much free space DuckDB cannot write a few of its 256 KiB blocks: writes are not possible. */
export const MIN_FREE_BYTES = 1024 * 1024;

/** Free bytes for an unprivileged writer on the file system of `dir`. */
export async function freeBytes(dir: string): Promise<number> {
  const stats = await statfs(dir);
  return stats.bavail * stats.bsize;
}
