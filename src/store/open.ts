// The one place that builds the stores: the control store, and the analytical store of the engine
// ANALYTICS_STORE names. The service (main.ts), the command line and the tests open them here.

import type { AnalyticsStore } from './analytics.js';
import type { ControlStore } from './control/store.js';
import { DuckDBAnalytics } from './duckdb/analytics.js';
import { Store, type StoreOptions } from './duckdb/db.js';

export const ANALYTICS_ENGINES = ['duckdb', 'clickhouse'] as const;
export type AnalyticsEngine = (typeof ANALYTICS_ENGINES)[number];

export interface StoresOptions extends StoreOptions {
  analyticsStore: AnalyticsEngine;
  /** The DuckDB database file of the control store (and of the analytical data on DuckDB); `:memory:` for a throwaway one. */
  databasePath: string;
}

export interface Stores {
  control: ControlStore;
  analytics: AnalyticsStore;
  /** Finishes writes and closes both. */
  close(): Promise<void>;
}

/** The configured engine cannot serve yet; the message is the whole answer, one line. */
export class StoreUnavailable extends Error {}

export async function openStores(options: StoresOptions): Promise<Stores> {
  if (options.analyticsStore === 'clickhouse') {
    throw new StoreUnavailable('ANALYTICS_STORE=clickhouse is not yet available: the ClickHouse store is still being built (issue 16); unset ANALYTICS_STORE or set it to duckdb');
  }
  const store = await Store.open(options.databasePath, options);
  return { control: store, analytics: new DuckDBAnalytics(store), close: () => store.close() };
}
