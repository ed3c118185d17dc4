// Instants as the store writes them: columns are TIMESTAMP holding naive UTC.
import { type DuckDBTimestampValue, timestampValue } from '@duckdb/node-api';

/** A UTC instant as DuckDB TIMESTAMP text (no zone), for `CAST($n AS TIMESTAMP)`. */
export function utc(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '');
}

/** A UTC instant as a DuckDB TIMESTAMP value, for the appender and typed parameters. */
export function timestamp(at: Date): DuckDBTimestampValue {
  return timestampValue(BigInt(at.getTime()) * 1000n);
}

/** Stored state at `stored` is not newer than an update made at `created` (equal: the later arrival wins). */
export function isOlder(stored: unknown, created: Date): boolean {
  return !(stored instanceof Date) || stored.getTime() <= created.getTime();
}
