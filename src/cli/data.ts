// `--data <dir|file.duckdb>`: the stores and workspace a command reads. A directory of parquet
// exports is checked, then read in place through views in an in-memory database (workspace
// `analyst`), or imported into it with --import; a database file is opened as it is, and its
// `analyst` workspace (or --workspace <id>) is used. The analyst's data is DuckDB whatever
// ANALYTICS_STORE says: the control store's database, holding the analytical tables as well, is
// where the loaders (store/duckdb/attach.ts, import.ts) write.

import { existsSync, statSync } from 'node:fs';
import { type PropertyCatalog, validateCriteria } from '../criteria/index.js';
import { Workspaces } from '../store/control/workspaces.js';
import { attachParquetDir } from '../store/duckdb/attach.js';
import { type ImportProgress, importParquetDir } from '../store/duckdb/import.js';
import type { ClickHouseOptions } from '../store/clickhouse/client.js';
import { type AnalyticsEngine, duckdbOf, openStores, type Stores, StoreUnavailable } from '../store/open.js';
import { stringOption, type Values } from './args.js';
import { CliError, oneLine, UsageError } from './errors.js';
import { assertImportable, checkParquetDir } from './layout-check.js';
import type { Output } from './output.js';

export const ANALYST_WORKSPACE = 'analyst';

export interface OpenedData {
  stores: Stores;
  workspaceId: string;
  /** A directory read in place (views), a directory imported into memory, or a database file. */
  kind: 'views' | 'imported' | 'duckdb';
  close(): Promise<void>;
}

const LOCKED = /Could not set lock on file/;

/**
 * Opens the stores of a database file, with DuckDB's errors (not a database, lock held) as one
 * line. DuckDB lets one process open a file: `whenLocked` says what to do when another one holds it.
 */
export async function openDatabase(
  path: string, whenLocked = 'wait for that command to finish, or stop the service if it is its database', engine: AnalyticsEngine = 'duckdb',
  clickhouse?: ClickHouseOptions,
): Promise<Stores> {
  try {
    return await openStores({ analyticsStore: engine, clickhouse, databasePath: path });
  } catch (err) {
    if (err instanceof StoreUnavailable) throw new CliError(err.message);
    const message = oneLine(err);
    if (LOCKED.test(message)) {
      const pid = /\(PID (\d+)\)/.exec(message)?.[1];
      throw new CliError(`${path}: open in another process${pid ? ` (PID ${pid})` : ''}, and DuckDB lets only one process open a database file: ${whenLocked}`);
    }
    throw new CliError(`${path}: cannot open as a DuckDB database (${message})`);
  }
}

/** Imports a parquet directory, checked against the layout, into `ws` of `stores`. */
export async function importDir(stores: Stores, ws: string, dir: string, progress?: ImportProgress): Promise<void> {
  try {
    await importParquetDir(duckdbOf(stores), ws, dir, progress);
  } catch (err) {
    throw new CliError(`${dir}: import failed (${oneLine(err)})`);
  }
}

/**
 * Whether workspace `ws` already holds people or their activity: an import into it would merge
 * identities with what is there (a fixture's `u_42` taking over the real one), so loaders refuse.
 */
export async function holdsData(stores: Stores, ws: string): Promise<boolean> {
  const held = await duckdbOf(stores).query(
    `SELECT (SELECT count(*) FROM persons WHERE workspace_id = $1) + (SELECT count(*) FROM visitors WHERE workspace_id = $1)
      + (SELECT count(*) FROM events WHERE workspace_id = $1) AS n`,
    [ws]);
  return Number(held[0]?.n ?? 0) > 0;
}

/**
 * The event names whose payload paths validating `criteria` looks up (product_event leaves with a
 * filter): the validator's own walk, over a catalog that records the names and accepts every path.
 */
export function payloadEventNames(criteria: unknown): string[] {
  const names = new Set<string>();
  const recording = { events: { get: (name: string) => (names.add(name), { has: () => true }) }, traits: { has: () => true } };
  validateCriteria(criteria, recording as unknown as PropertyCatalog);
  return [...names];
}

/** Views over a checked directory's files; on a key collision, says so and falls back to an import. */
async function readInPlace(stores: Stores, ws: string, dir: string, criteria: unknown, out: Output): Promise<'views' | 'imported'> {
  let attached: Awaited<ReturnType<typeof attachParquetDir>>;
  try {
    attached = await attachParquetDir(duckdbOf(stores), ws, dir, payloadEventNames(criteria));
  } catch (err) {
    throw new CliError(`${dir}: cannot read the parquet files (${oneLine(err)})`);
  }
  if (!('collision' in attached)) return 'views';
  out.warn(`${dir}: two ids of ${attached.collision}.parquet hash to the same key; importing into memory instead of reading in place`);
  return 'imported';
}

/** A directory in an in-memory database: read in place, or imported (--import, key collision). */
async function openDir(dir: string, criteria: unknown, copy: boolean, out: Output): Promise<OpenedData> {
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: ':memory:' });
  try {
    const ws = (await new Workspaces(stores.control).create(ANALYST_WORKSPACE)).workspace_id;
    assertImportable(await checkParquetDir(duckdbOf(stores), dir));
    const kind = copy ? 'imported' : await readInPlace(stores, ws, dir, criteria, out);
    if (kind === 'imported') await importDir(stores, ws, dir);
    return { stores, workspaceId: ws, kind, close: () => stores.close() };
  } catch (err) {
    await stores.close();
    throw err;
  }
}

/**
 * The data of `--data` (with `--workspace`, `--import`). `criteria` is the raw criteria the command
 * will run: a directory read in place collects property paths only for its payload filters. `out`
 * takes the notes on how the data was opened.
 */
export async function openData(values: Values, command: string, criteria: unknown, out: Output): Promise<OpenedData> {
  const data = stringOption(values, 'data');
  if (data === undefined) throw new UsageError('--data <dir|file.duckdb> is required', command);
  if (!existsSync(data)) throw new CliError(`${data}: no such file or directory`);
  if (data.endsWith('.parquet')) throw new CliError(`${data}: pass the directory holding the parquet files, not one file`);
  if (statSync(data).isDirectory()) return openDir(data, criteria, values.import === true, out);
  if (values.import === true) throw new UsageError('--import applies to a directory of parquet exports, not a database file', command);
  const stores = await openDatabase(data);
  try {
    const workspaceId = await findWorkspace(stores, data, stringOption(values, 'workspace'));
    return { stores, workspaceId, kind: 'duckdb', close: () => stores.close() };
  } catch (err) {
    await stores.close();
    throw err;
  }
}

async function findWorkspace(stores: Stores, path: string, id: string | undefined): Promise<string> {
  const rows = await stores.control.all('SELECT workspace_id, name FROM workspaces ORDER BY created_at') as { workspace_id: string; name: string }[];
  const found = id !== undefined ? rows.find((r) => r.workspace_id === id) : rows.find((r) => r.name === ANALYST_WORKSPACE);
  if (found) return found.workspace_id;
  const known = rows.length === 0 ? 'it has none' : `it has ${rows.map((r) => `${r.workspace_id} (${r.name})`).join(', ')}`;
  throw new CliError(id !== undefined
    ? `${path}: no workspace ${id}; ${known}`
    : `${path}: no workspace named ${ANALYST_WORKSPACE} (load one with: audiences load <dir> --into ${path}, or pass --workspace <id>); ${known}`);
}

/** The --data paragraph of the help of estimate, members and explain. */
export const DATA_HELP = `--data is a directory of parquet exports, checked against the layout and then read in place
(views over the files: nothing is copied; --import copies it into memory instead), or a DuckDB
database file made by "audiences load <dir> --into file.duckdb" (opened directly: faster for
repeated runs on big exports).`;

export const DATA_OPTIONS = {
  data: { type: 'string' },
  workspace: { type: 'string' },
  import: { type: 'boolean' },
  at: { type: 'string' },
} as const;
