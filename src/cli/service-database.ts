// The service's own database for the workspace and key commands: `--data <file>`, else the
// service's DATABASE_URL (PostgreSQL, open beside running nodes), else its DATABASE_PATH (default
// ./data/attribution.duckdb, opened only while the service is stopped).

import { existsSync, statSync } from 'node:fs';
import { loadConfig } from '../config.js';
import { type Workspace, Workspaces } from '../store/control/workspaces.js';
import { openStores, type Stores, StoreUnavailable } from '../store/open.js';
import { stringOption, type Values } from './args.js';
import { openDatabase } from './data.js';
import { CliError, UsageError } from './errors.js';

export const SERVICE_DATABASE_OPTIONS = { data: { type: 'string' } } as const;

export const SERVICE_DATABASE_HELP = `--data <file.duckdb>      the service's database (default: $DATABASE_PATH, else
                            ./data/attribution.duckdb, as the service opens it)`;

export const SERVICE_DATABASE_NOTE = `DuckDB lets one process open a database file: stop the service first; the change takes
effect when it starts again. While the service holds the file, this command says so and exits 1.
With DATABASE_URL (PostgreSQL) and no --data, the service's PostgreSQL is used, nodes running.`;

/** A postgres:// URL as shown: host, port and database, never the credentials. */
const describeUrl = (url: string): string => {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
};

export interface ServiceDatabase {
  path: string;
  stores: Stores;
  workspaces: Workspaces;
  close(): Promise<void>;
}

/**
 * Opens the service's database. `create`: a missing file is created (as the service's first start
 * does); otherwise a missing file is an error, so a mistyped path never yields a stray database.
 * `env` holds the service's configuration (DATABASE_URL, DATABASE_PATH, ANALYTICS_STORE, CLICKHOUSE_*).
 */
export async function openServiceDatabase(
  values: Values, command: string, create: boolean, env: NodeJS.ProcessEnv,
): Promise<ServiceDatabase & { created: boolean }> {
  const config = loadConfig(env);
  const data = stringOption(values, 'data');
  if (data === undefined && config.databaseUrl !== undefined) {
    const stores = await openStores({
      analyticsStore: config.analyticsStore, clickhouse: config.clickhouse, databasePath: config.databasePath, databaseUrl: config.databaseUrl,
    }).catch((err: unknown) => {
      throw err instanceof StoreUnavailable ? new CliError(err.message) : err;
    });
    return { path: describeUrl(config.databaseUrl), stores, workspaces: new Workspaces(stores.control), created: false, close: () => stores.close() };
  }
  const path = data ?? config.databasePath;
  if (path === ':memory:') throw new UsageError('DATABASE_PATH is :memory:, which no other process can open; pass --data <file.duckdb>', command);
  const exists = existsSync(path);
  if (exists && statSync(path).isDirectory()) throw new CliError(`${path}: is a directory, expected the service's database file`);
  if (!exists && !create) {
    throw new CliError(`${path}: no such database (the service creates it at its first start; or pass --data <file.duckdb>)`);
  }
  const stores = await openDatabase(path, 'stop the service, run this again, then start the service', config.analyticsStore, config.clickhouse);
  return { path, stores, workspaces: new Workspaces(stores.control), created: !exists, close: () => stores.close() };
}

/** A workspace named by its id, or by its name when exactly one workspace has it. */
export async function findWorkspace(db: ServiceDatabase, idOrName: string): Promise<Workspace> {
  const all = await db.workspaces.list();
  const byId = all.find((w) => w.workspace_id === idOrName);
  if (byId) return byId;
  const named = all.filter((w) => w.name === idOrName);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) {
    throw new CliError(`${db.path}: ${named.length} workspaces are named "${idOrName}" (${named.map((w) => w.workspace_id).join(', ')}); pass the workspace id`);
  }
  const list = db.stores.duckdb ? `audiences workspace list --data ${db.path}` : 'audiences workspace list';
  throw new CliError(`${db.path}: no workspace "${idOrName}" (see: ${list})`);
}
