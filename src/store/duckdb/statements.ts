// Prepared statements kept per connection, by their text. DuckDB's `run(sql, values)` extracts,
// parses and plans the statement on every call: for the small keyed statements of a unit of work
// (a notification's customer, its subscription) that was most of their time (bench/RESULTS.md,
// "Attribution"). A kept statement is bound and run again; one in use (a caller awaiting it) is not shared.

import type { DuckDBConnection, DuckDBMaterializedResult, DuckDBPreparedStatement, DuckDBType, DuckDBValue } from '@duckdb/node-api';

/** Statement texts kept per connection; the least recently used goes first past this. */
const KEPT = 256;

interface Kept {
  statement: DuckDBPreparedStatement;
  busy: boolean;
}

const kept = new WeakMap<DuckDBConnection, Map<string, Kept>>();

/** `conn.run(sql, values, types)` on a statement prepared once per connection. */
export async function runKept(conn: DuckDBConnection, sql: string, values: DuckDBValue[], types?: DuckDBType[]): Promise<DuckDBMaterializedResult> {
  let statements = kept.get(conn);
  if (!statements) kept.set(conn, (statements = new Map()));
  let entry = statements.get(sql);
  if (entry?.busy) return conn.run(sql, values, types);
  if (entry) {
    // Most recently used last.
    statements.delete(sql);
    statements.set(sql, entry);
  } else {
    entry = { statement: await conn.prepare(sql), busy: false };
    statements.set(sql, entry);
    if (statements.size > KEPT) {
      const [oldest, old] = statements.entries().next().value!;
      statements.delete(oldest);
      if (!old.busy) old.statement.destroySync();
    }
  }
  entry.busy = true;
  try {
    entry.statement.bind(values, types);
    return await entry.statement.run();
  } finally {
    entry.busy = false;
    entry.statement.clearBindings();
  }
}
