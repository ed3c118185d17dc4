// The stores a suite runs against: DuckDB always, ClickHouse (the embedded chDB) when it is
// installed, and the many-node layout, the control state in PostgreSQL (test/support/postgres.ts)
// with ClickHouse analytics, when both run. `npm test` without them says once that those runs were
// skipped; `.ci/run` installs chDB, and CI=true makes a missing chDB or PostgreSQL a failure.

import { chdbAvailable } from '../../src/store/clickhouse/client.js';
import type { AnalyticsEngine } from '../../src/store/open.js';
import { postgresRunning } from './postgres.js';

const withChdb = await chdbAvailable();
if (!withChdb && process.env.CI === 'true') {
  throw new Error('CI=true but chdb is not installed: the ClickHouse suites must run in CI (npm run chdb:install)');
}
if (!withChdb) {
  console.warn('ClickHouse suites skipped: chdb (the embedded ClickHouse, ~540 MB) is not installed; `npm run chdb:install` installs it');
}

/** The control state in PostgreSQL, the analytical data in ClickHouse. */
export const POSTGRES = 'postgres+clickhouse';
export type TestEngine = AnalyticsEngine | typeof POSTGRES;

/** The engine of the analytical data of a test engine. */
export const analyticsOf = (engine: TestEngine): AnalyticsEngine => (engine === POSTGRES ? 'clickhouse' : engine);

export const ENGINES: readonly AnalyticsEngine[] = withChdb ? ['duckdb', 'clickhouse'] : ['duckdb'];
export const CHDB_INSTALLED = withChdb;

/** ENGINES, and the PostgreSQL control plane: for the suites that run on it too (with chDB, this starts it). */
export const ENGINES_WITH_POSTGRES: readonly TestEngine[] = withChdb && await postgresRunning() ? [...ENGINES, POSTGRES] : ENGINES;
