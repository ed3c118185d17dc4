// The storage format of a database file. DuckDB keeps the format a file was made in (the service
// makes new ones in STORAGE_VERSION's); an older file is brought to it by a copy of every table,
// sequence and index into a new file, put in the old one's place (`audiences migrate --rewrite-storage`).

import { existsSync, renameSync, rmSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { sqlString } from './attach.js';
import { STORAGE_VERSION } from './db.js';

/** `v1.0.0+` (a file's tag) → [1, 0, 0]. */
const parts = (version: string): number[] => (/^v(\d+)\.(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);

const older = (a: string, b: string): boolean => {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0);
  return false;
};

export interface StorageRewrite {
  /** The file's format before (`v1.0.0`). */
  from: string;
  to: string;
  /** False when the file was already in `to`'s format or newer: nothing was written. */
  rewritten: boolean;
  tables: number;
  rows: number;
}

/**
 * Rewrites the (closed, checkpointed) database file at `path` in STORAGE_VERSION's format. The copy
 * is checked table by table for the same row counts before it replaces the file; a failure leaves
 * the file as it was. Needs the file's size free on its disk. Another process holding the file
 * makes the attach fail (DuckDB's lock), as it would the service's start.
 */
export async function rewriteStorage(path: string): Promise<StorageRewrite> {
  // A write-ahead log left beside the file would be replayed onto the copy once it is in its place.
  if (existsSync(`${path}.wal`)) throw new Error(`${path} has a write-ahead log: open and close it once (audiences migrate) before its storage is rewritten`);
  const copy = `${path}.rewrite`;
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  const rowsOf = async (sql: string) => (await conn.runAndReadAll(sql)).getRowObjectsJS();
  let rewritten = false;
  try {
    await conn.run(`ATTACH ${sqlString(path)} AS src (READ_ONLY)`);
    const tag = await rowsOf("SELECT tags['storage_version'] AS v FROM duckdb_databases() WHERE database_name = 'src'");
    const from = String(tag[0]?.v ?? 'v0.0.0').replace(/\+$/, '');
    const tables = (await rowsOf("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'src' ORDER BY ALL"))
      .map((t) => `"${String(t.schema_name).replaceAll('"', '""')}"."${String(t.table_name).replaceAll('"', '""')}"`);
    const counts = async (db: string) => {
      const out: number[] = [];
      for (const t of tables) out.push(Number((await rowsOf(`SELECT count(*) AS n FROM ${db}.${t}`))[0]!.n));
      return out;
    };
    const before = await counts('src');
    const rows = before.reduce((a, b) => a + b, 0);
    if (!older(from, STORAGE_VERSION)) return { from, to: STORAGE_VERSION, rewritten: false, tables: tables.length, rows };
    rmSync(copy, { force: true });
    rmSync(`${copy}.wal`, { force: true });
    await conn.run(`ATTACH ${sqlString(copy)} AS dst (STORAGE_VERSION '${STORAGE_VERSION}')`);
    await conn.run('COPY FROM DATABASE src TO dst');
    const after = await counts('dst');
    const differs = tables.findIndex((_, i) => before[i] !== after[i]);
    if (differs >= 0) throw new Error(`the copy of ${tables[differs]} holds ${after[differs]} rows, not ${before[differs]}: ${path} is unchanged`);
    await conn.run('CHECKPOINT dst');
    await conn.run('DETACH dst');
    await conn.run('DETACH src');
    rewritten = true;
    return { from, to: STORAGE_VERSION, rewritten, tables: tables.length, rows };
  } finally {
    conn.closeSync();
    instance.closeSync();
    if (rewritten) {
      renameSync(copy, path);
      // Checkpointed and detached, the copy has no WAL; were there one, it is the file's.
      if (existsSync(`${copy}.wal`)) renameSync(`${copy}.wal`, `${path}.wal`);
    } else {
      rmSync(copy, { force: true });
      rmSync(`${copy}.wal`, { force: true });
    }
  }
}
