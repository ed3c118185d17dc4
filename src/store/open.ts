// The one place that builds the stores: the control store (the DuckDB file, or PostgreSQL with
// DATABASE_URL), and the analytical store of the engine ANALYTICS_STORE names. The service
// (main.ts), the command line and the tests open them here.

import type { AnalyticsStore } from './analytics.js';
import type { ClickHouseOptions } from './clickhouse/client.js';
import { CLICKHOUSE_BOUNDS, type PostgresBounds } from './bounds.js';
import { DependencyUnavailable } from './errors.js';
import type { ControlStore } from './control/store.js';
import { DuckDBAnalytics } from './duckdb/analytics.js';
import { DuckDBControl } from './duckdb/control.js';
import { Store, type StoreOptions } from './duckdb/db.js';
import { checkStores, type HealthCheck, type StoresHealth } from './health.js';

export const ANALYTICS_ENGINES = ['duckdb', 'clickhouse'] as const;
export type AnalyticsEngine = (typeof ANALYTICS_ENGINES)[number];

export interface StoresOptions extends StoreOptions {
  analyticsStore: AnalyticsEngine;
  /** The DuckDB database file of the control store (and of the analytical data on DuckDB); `:memory:` for a throwaway one. */
  databasePath: string;
  /** Where the analytical data lives with ANALYTICS_STORE=clickhouse. */
  clickhouse?: ClickHouseOptions;
  /** A postgres:// URL: the control state in PostgreSQL (with ClickHouse analytics only); `databasePath` is then unused. */
  databaseUrl?: string;
  /** How long PostgreSQL may take before it counts as down; POSTGRES_BOUNDS otherwise. */
  postgres?: PostgresBounds;
}

export interface Stores {
  control: ControlStore;
  analytics: AnalyticsStore;
  /** The embedded DuckDB database, when it holds the control state (the command line's imports and checks use it); undefined on PostgreSQL. */
  duckdb?: Store;
  /** Finishes writes and closes both. */
  close(): Promise<void>;
  /** Whether each store answers a trivial statement within `timeoutMs` and has room to write. */
  health(timeoutMs: number): Promise<StoresHealth>;
}

/** The embedded DuckDB database of `stores`, for work that only it can do (parquet imports and checks). */
export function duckdbOf(stores: Stores): Store {
  if (!stores.duckdb) throw new StoreUnavailable('this works on the embedded DuckDB database only; the control state is in PostgreSQL');
  return stores.duckdb;
}

/** The configured engine cannot be reached or loaded; the message is the whole answer, one line. */
export class StoreUnavailable extends Error {}

export const DEFAULT_CLICKHOUSE: ClickHouseOptions = { path: './data/clickhouse', database: 'audiences' };

export async function openStores(options: StoresOptions): Promise<Stores> {
  if (options.databaseUrl !== undefined) return openShared(options, options.databaseUrl);
  const store = await Store.open(options.databasePath, options);
  const control = new DuckDBControl(store);
  if (options.analyticsStore === 'duckdb') {
    return {
      control, analytics: new DuckDBAnalytics(store), duckdb: store, close: () => store.close(),
      health: (timeoutMs) => checkStores({ duckdb: () => store.unwritable() }, timeoutMs),
    };
  }
  return withClickHouse(control, options, { duckdb: () => store.unwritable() }, store);
}

/** The layout of many API nodes: the control state in PostgreSQL, the analytical data in ClickHouse. */
async function openShared(options: StoresOptions, url: string): Promise<Stores> {
  if (options.analyticsStore !== 'clickhouse') {
    throw new StoreUnavailable('DATABASE_URL (PostgreSQL control state, shared by API nodes) needs ANALYTICS_STORE=clickhouse: DuckDB analytics is one process\'s file');
  }
  // Loaded when configured: the default (DuckDB) needs neither engine's client, and loading them
  // slowed each start of the command line (bench/RESULTS.md, "Command line start").
  const { PostgresControl } = await import('./postgres/control.js');
  const control = await PostgresControl.open({ url, bounds: options.postgres }).catch((err: unknown) => {
    throw unavailable('PostgreSQL', err);
  });
  return withClickHouse(control, options, { postgresql: () => control.unwritable() });
}

/** The stores of `control` with the analytical data in ClickHouse; closing them closes `control` too. */
async function withClickHouse(control: ControlStore, options: StoresOptions, controlCheck: Record<string, HealthCheck>, duckdb?: Store): Promise<Stores> {
  try {
    const clickhouse = options.clickhouse ?? DEFAULT_CLICKHOUSE;
    const [{ connectClickHouse, clickhouseUnwritable }, { migrateClickHouse }, { ClickHouseAnalytics }] = await Promise.all([
      import('./clickhouse/client.js'), import('./clickhouse/migrate.js'), import('./clickhouse/analytics.js'),
    ]);
    const client = await connectClickHouse(clickhouse);
    const killTimeoutMs = clickhouse.url === undefined ? undefined : (clickhouse.bounds ?? CLICKHOUSE_BOUNDS).killTimeoutMs;
    const ctx = { client, database: clickhouse.database, cluster: clickhouse.cluster, control, killTimeoutMs };
    await migrateClickHouse(ctx, { username: clickhouse.username, password: clickhouse.password });
    const analytics = new ClickHouseAnalytics(ctx, { connections: options.estimateConnections, queueMax: options.estimateQueueMax }, clickhouse.outbox);
    return {
      control,
      analytics,
      duckdb,
      close: async () => {
        await analytics.close();
        await control.close();
      },
      health: (timeoutMs) => checkStores({ ...controlCheck, clickhouse: () => clickhouseUnwritable(client, clickhouse, timeoutMs) }, timeoutMs),
    };
  } catch (err) {
    await control.close();
    throw unavailable('ClickHouse', err);
  }
}

/** An engine's failure to open as the one line StoreUnavailable says. */
function unavailable(engine: string, err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof StoreUnavailable) return err;
  // The engine's own words (they name the address), not our outage's.
  const source = err instanceof DependencyUnavailable && err.cause instanceof Error ? err.cause : err;
  return new StoreUnavailable(`${engine}: ${source.message.split('\n')[0]}`);
}
