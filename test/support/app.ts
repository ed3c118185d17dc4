// A real app on real stores (an in-memory DuckDB unless `path`; a database of the test PostgreSQL
// for the PostgreSQL control plane), with one workspace, for tests. A file may share one app among
// its tests and give each a fresh workspace: workspaces isolate all data.

import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { AUDIENCE_DEFAULTS } from '../../src/audiences/service.js';
import { type AppOptions, buildApp } from '../../src/http/app.js';
import { type CreatedWorkspace, Workspaces } from '../../src/store/control/workspaces.js';
import type { Store, StoreOptions } from '../../src/store/duckdb/db.js';
import { openStores, type Stores } from '../../src/store/open.js';
import { analyticsOf, POSTGRES, type TestEngine } from './engines.js';
import { createDatabase } from './postgres.js';

export interface TestApp {
  app: FastifyInstance;
  stores: Stores;
  /** The DuckDB database of the control store (holding the analytical tables too on DuckDB); throws on PostgreSQL. */
  store: Store;
  workspaces: Workspaces;
  /** The current workspace: `post` and `compile` use its secret key unless given another. */
  readonly ws: CreatedWorkspace;
  /** Creates a new workspace with its keys and makes it the current one. */
  freshWorkspace(): Promise<CreatedWorkspace>;
  /** On PostgreSQL, the app's database; on ClickHouse, its analytical database (for a second node of the same data). */
  databaseUrl?: string;
  clickhouseDatabase?: string;
  post(url: string, body: unknown, key?: string): Promise<LightMyRequestResponse>;
  compile(criteria: unknown, key?: string): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestAppOptions extends StoreOptions {
  /** The stores (test/support/engines.ts); DuckDB unless given. */
  engine?: TestEngine;
  /** On ClickHouse, the database of an app before (a restart on the same data); a new one unless given. */
  clickhouseDatabase?: string;
  /** On ClickHouse, a server to reach over HTTP (test/support/chdb-server.ts); the in-process chDB unless given. */
  clickhouseUrl?: string;
  budgetMs?: number;
  /** The part of the budget an exact count may take (0: every estimate answers from its sample). */
  exactShare?: number;
  at?: Date;
  /** A moving clock, for tests that let time pass; `at` fixes it instead. */
  clock?: () => Date;
  path?: string;
  audiences?: AppOptions['audiences'];
  rateLimits?: AppOptions['rateLimits'];
  trustProxy?: AppOptions['trustProxy'];
  /** Another API node of this app: its engine, PostgreSQL and ClickHouse databases and workspace (close it first). */
  nodeOf?: TestApp;
  /** The workspace of an app before on the same `path` (a restart); a new one unless given. */
  workspace?: CreatedWorkspace;
  /** The ingest log's directory and bound (a temporary directory unless given). */
  ingestLog?: AppOptions['ingestLog'];
  /** The app's logger (off unless given). */
  logger?: AppOptions['logger'];
}

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const { nodeOf } = options;
  if (nodeOf && !nodeOf.databaseUrl) throw new Error('a second API node needs the PostgreSQL control plane');
  const engine = nodeOf ? POSTGRES : options.engine ?? 'duckdb';
  const analyticsStore = analyticsOf(engine);
  const postgres = engine === POSTGRES && !nodeOf ? await createDatabase() : undefined;
  const databaseUrl = nodeOf?.databaseUrl ?? postgres?.url;
  // chDB holds one data directory per process: each app gets a database of its own in it.
  const clickhouseDatabase = analyticsStore === 'clickhouse'
    ? nodeOf?.clickhouseDatabase ?? options.clickhouseDatabase ?? `test_${randomUUID().replaceAll('-', '')}`
    : undefined;
  const stores = await openStores({
    ...options, analyticsStore, databasePath: options.path ?? ':memory:', databaseUrl,
    clickhouse: clickhouseDatabase === undefined ? undefined : { path: ':memory:', url: options.clickhouseUrl, database: clickhouseDatabase },
  });
  const workspaces = new Workspaces(stores.control);
  let ws = nodeOf?.ws ?? options.workspace ?? await workspaces.create('test');
  const at = options.at;
  // Tests deliver to loopback receivers: private destinations are allowed unless a test says otherwise.
  const audiences = { ...options.audiences, delivery: { ...AUDIENCE_DEFAULTS.delivery, allowPrivateDestinations: true, ...options.audiences?.delivery } };
  const app = await buildApp({
    stores, estimateBudgetMs: options.budgetMs ?? 5000, estimateExactShare: options.exactShare, clock: options.clock ?? (at ? () => at : undefined), audiences,
    rateLimits: options.rateLimits, ingestLog: options.ingestLog, trustProxy: options.trustProxy, logger: options.logger,
  });
  const post = (url: string, body: unknown, key = ws.secret_key) => app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    app, stores, workspaces, post, databaseUrl, clickhouseDatabase,
    get ws() { return ws; },
    freshWorkspace: async () => (ws = await workspaces.create('test')),
    get store() {
      if (!stores.duckdb) throw new Error('this test reads DuckDB\'s tables; on PostgreSQL read the control state through t.stores.control');
      return stores.duckdb;
    },
    compile: (criteria, key) => post('/v1/audiences/compile', { criteria_json: criteria }, key),
    close: async () => {
      await app.close();
      await stores.close();
      await postgres?.release();
    },
  };
}
