// Checks a directory of parquet exports against the export layout (store/layout.ts) before any
// import: which table files are present, their row counts, and missing or retyped columns.

import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Store } from '../store/duckdb/db.js';
import { DATASET_TABLES, type DatasetTable, LAYOUT_COLUMNS } from '../store/layout.js';
import { CliError, oneLine } from './errors.js';

export interface TableCheck {
  table: DatasetTable;
  file: string;
  present: boolean;
  rows: number | null;
  /** Layout columns the file lacks: the import cannot run. */
  missing: string[];
  /** Columns whose type differs from the layout: the import casts them. */
  retyped: { column: string; type: string; expected: string }[];
  /** Columns outside the layout: ignored. */
  extra: string[];
}

export interface DirCheck {
  dir: string;
  tables: TableCheck[];
  /** `.parquet` files that are not a layout table: ignored. */
  ignored: string[];
}

export async function checkParquetDir(store: Store, dir: string): Promise<DirCheck> {
  if (!existsSync(dir)) throw new CliError(`${dir}: no such directory`);
  if (!statSync(dir).isDirectory()) throw new CliError(`${dir}: not a directory of parquet files`);
  const tables: TableCheck[] = [];
  for (const table of DATASET_TABLES) {
    const file = join(dir, `${table}.parquet`);
    const check: TableCheck = { table, file, present: existsSync(file), rows: null, missing: [], retyped: [], extra: [] };
    tables.push(check);
    if (!check.present) continue;
    let described: { column_name: string; column_type: string }[];
    try {
      described = await store.query('DESCRIBE SELECT * FROM read_parquet($1)', [file]) as typeof described;
      const meta = await store.query('SELECT sum(num_rows) AS n FROM parquet_file_metadata($1)', [file]);
      check.rows = Number(meta[0]?.n ?? 0);
    } catch (err) {
      throw new CliError(`${file}: not a readable parquet file (${oneLine(err)})`);
    }
    const types = new Map(described.map((c) => [c.column_name, c.column_type]));
    for (const [column, expected] of LAYOUT_COLUMNS[table]) {
      const type = types.get(String(column));
      if (type === undefined) check.missing.push(String(column));
      else if (type !== expected) check.retyped.push({ column: String(column), type, expected });
    }
    const known = new Set(LAYOUT_COLUMNS[table].map(([c]) => String(c)));
    check.extra = described.map((c) => c.column_name).filter((c) => !known.has(c));
  }
  const layoutFiles = new Set(DATASET_TABLES.map((t) => `${t}.parquet`));
  const ignored = readdirSync(dir).filter((f) => f.endsWith('.parquet') && !layoutFiles.has(f)).sort();
  return { dir, tables, ignored };
}

/** Throws the first blocking problem: no layout file at all, or a file with missing columns. */
export function assertImportable(check: DirCheck): void {
  if (!check.tables.some((t) => t.present)) {
    throw new CliError(`${check.dir}: no export files (expected some of ${DATASET_TABLES.map((t) => `${t}.parquet`).join(', ')})`);
  }
  for (const t of check.tables) {
    if (t.missing.length > 0) {
      throw new CliError(`${t.file}: missing column${t.missing.length > 1 ? 's' : ''} ${t.missing.join(', ')} ` +
        `(expected ${LAYOUT_COLUMNS[t.table].map(([c, type]) => `${String(c)} ${type}`).join(', ')})`);
    }
  }
}
