// Instants as the store writes them: columns are TIMESTAMP holding naive UTC.
import { type DuckDBTimestampValue, timestampValue } from '@duckdb/node-api';
import { instantText } from '../instants.js';

export { isOlder } from '../instants.js';

/** A UTC instant as DuckDB TIMESTAMP text (no zone), for `CAST($n AS TIMESTAMP)`. */
export const utc = instantText;

/** A UTC instant as a DuckDB TIMESTAMP value, for the appender and typed parameters. */
export function timestamp(at: Date): DuckDBTimestampValue {
  return timestampValue(BigInt(at.getTime()) * 1000n);
}

