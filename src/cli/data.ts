// `--data <dir|file.duckdb>`: the store and workspace a command reads. A directory of parquet
// exports is checked and imported into an in-memory store (workspace `analyst`); a database file
// is opened as it is, and its `analyst` workspace (or --workspace <id>) is used.

import { existsSync, statSync } from 'node:fs';
import { Store } from '../store/db.js';
import { type ImportProgress, importParquetDir } from '../store/import.js';
import { Workspaces } from '../store/workspaces.js';
import { CliError, oneLine, UsageError } from './errors.js';
import { assertImportable, checkParquetDir } from './layout-check.js';

export const ANALYST_WORKSPACE = 'analyst';

export interface OpenedData {
  store: Store;
  workspaceId: string;
  kind: 'parquet' | 'duckdb';
  close(): Promise<void>;
}

/** Opens a database file, with DuckDB's errors (lock held, not a database) as one line. */
export async function openDatabase(path: string): Promise<Store> {
  try {
    return await Store.open(path);
  } catch (err) {
    throw new CliError(`${path}: cannot open as a DuckDB database (${oneLine(err)})`);
  }
}

/** Checks a parquet directory against the layout, then imports it into `ws` of `store`. */
export async function importDir(store: Store, ws: string, dir: string, onTable?: ImportProgress): Promise<void> {
  assertImportable(await checkParquetDir(store, dir));
  try {
    await importParquetDir(store, ws, dir, onTable);
  } catch (err) {
    throw new CliError(`${dir}: import failed (${oneLine(err)})`);
  }
}

export async function openData(data: string | undefined, workspace: string | undefined, command: string): Promise<OpenedData> {
  if (data === undefined) throw new UsageError('--data <dir|file.duckdb> is required', command);
  if (!existsSync(data)) throw new CliError(`${data}: no such file or directory`);
  if (data.endsWith('.parquet')) throw new CliError(`${data}: pass the directory holding the parquet files, not one file`);
  if (statSync(data).isDirectory()) {
    const store = await Store.open(':memory:');
    try {
      const ws = await new Workspaces(store).create(ANALYST_WORKSPACE);
      await importDir(store, ws.workspace_id, data);
      return { store, workspaceId: ws.workspace_id, kind: 'parquet', close: () => store.close() };
    } catch (err) {
      await store.close();
      throw err;
    }
  }
  const store = await openDatabase(data);
  try {
    const workspaceId = await findWorkspace(store, data, workspace);
    return { store, workspaceId, kind: 'duckdb', close: () => store.close() };
  } catch (err) {
    await store.close();
    throw err;
  }
}

async function findWorkspace(store: Store, path: string, id: string | undefined): Promise<string> {
  const rows = await store.query('SELECT workspace_id, name FROM workspaces ORDER BY created_at') as { workspace_id: string; name: string }[];
  const found = id !== undefined ? rows.find((r) => r.workspace_id === id) : rows.find((r) => r.name === ANALYST_WORKSPACE);
  if (found) return found.workspace_id;
  const known = rows.length === 0 ? 'it has none' : `it has ${rows.map((r) => `${r.workspace_id} (${r.name})`).join(', ')}`;
  throw new CliError(id !== undefined
    ? `${path}: no workspace ${id}; ${known}`
    : `${path}: no workspace named ${ANALYST_WORKSPACE} (load one with: audiences load <dir> --into ${path}, or pass --workspace <id>); ${known}`);
}

/** The --data paragraph of the help of estimate, members and explain. */
export const DATA_HELP = `--data is a directory of parquet exports (checked against the layout, then imported into an
in-memory database on every run: simplest, slower for big exports) or a DuckDB database file made
by "audiences load <dir> --into file.duckdb" (opened directly: much faster for repeated runs).`;

export const DATA_OPTIONS = {
  data: { type: 'string' },
  workspace: { type: 'string' },
  at: { type: 'string' },
} as const;
