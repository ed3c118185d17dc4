// A directory of parquet exports read in place: in an in-memory store, each store table the
// compiled SQL reads becomes a view over its file, made from the import's own SELECT (MAPPINGS in
// import.ts), so the same SQL runs on it with the import's answers and nothing is copied. Keys are
// hashes of the public ids instead of sequence numbers; the views keep the import's joins (an event
// has a person only when that person exists, page views of unknown visitors are left out, …).

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from './db.js';
import { fillMapping, MAPPINGS, recordEventProperties, recordTraitDefinitions } from './import.js';
import { DATASET_TABLES, type DatasetTable } from '../layout.js';

/**
 * A SQL string literal (quotes doubled). Only for file paths and our workspace id in views:
 * DuckDB takes no parameters in CREATE VIEW or ATTACH, and a view reads on other connections, where
 * a session variable (the import's way to bind a path) is not set.
 */
export function sqlString(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** `read_parquet` of one file, its path as a string literal (see sqlString). */
export function parquetSource(file: string): string {
  return `read_parquet(${sqlString(file)})`;
}

/** A positive BIGINT key of a public id (SQL expression; null stays null): 62 bits of DuckDB's hash, plus one. */
export function hashKey(id: string): string {
  return `CASE WHEN ${id} IS NULL THEN NULL ELSE (hash(${id}) >> 2)::BIGINT + 1 END`;
}

/** Whether two distinct ids of `column` in `relation` share a key (`key` is hashKey but in tests). */
export async function keysCollide(store: Store, relation: string, column: string, key = hashKey): Promise<boolean> {
  const rows = await store.query(`SELECT count(DISTINCT ${column}) AS ids, count(DISTINCT ${key(column)}) AS keys FROM ${relation}`);
  return rows[0]!.ids !== rows[0]!.keys;
}

/** The tables whose ids become keys, and their id column. */
const KEYED: readonly [DatasetTable, string][] = [['persons', 'person_id'], ['visitors', 'visitor_id']];

export type AttachResult = { attached: DatasetTable[] } | { collision: DatasetTable };

/**
 * Replaces the tables of workspace `ws` of an in-memory `store` by views over `<dir>/<table>.parquet`
 * for each file present (an absent file leaves its table empty). First checks that no two ids of
 * persons or of visitors share a key; when some do, nothing is changed and the table is named.
 * The payload whitelist (event_properties) is filled for `payloadEvents` only: each name costs a
 * scan of its events' properties. The trait whitelist is filled from the persons' traits.
 */
export async function attachParquetDir(store: Store, ws: string, dir: string, payloadEvents: readonly string[]): Promise<AttachResult> {
  const files = new Map<DatasetTable, string>();
  for (const table of DATASET_TABLES) {
    const file = join(dir, `${table}.parquet`);
    if (existsSync(file)) files.set(table, parquetSource(file));
  }
  for (const [table, column] of KEYED) {
    const src = files.get(table);
    if (src !== undefined && await keysCollide(store, src, column)) return { collision: table };
  }
  await store.transaction(async (tx) => {
    // In layout order: a view's joins read the views (or empty tables) made before it.
    for (const [table, src] of files) {
      const { table: target, columns, from } = MAPPINGS[table];
      const shape = (await tx.runAndReadAll(`SELECT column_name, data_type FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1 ORDER BY column_index`, [target]))
        .getRowObjectsJS() as { column_name: string; data_type: string }[];
      // Exactly the table's columns and types; a column the export does not fill is null, as after an import.
      const select = shape.map(({ column_name: c, data_type: type }) =>
        `CAST(${Object.hasOwn(columns, c) ? columns[c] : 'NULL'} AS ${type}) AS "${c}"`);
      await tx.run(`DROP TABLE ${target}`);
      await tx.run(fillMapping(`CREATE VIEW ${target} AS SELECT ${select.join(', ')} FROM ${from}`,
        { ws: sqlString(ws), src, person_key: hashKey('s.person_id'), visitor_key: hashKey('s.visitor_id') }));
    }
    const persons = files.get('persons');
    if (persons !== undefined) await recordTraitDefinitions(tx, ws, persons);
    const events = files.get('events');
    if (events !== undefined && payloadEvents.length > 0) await recordEventProperties(tx, ws, events, payloadEvents);
  });
  return { attached: [...files.keys()] };
}
