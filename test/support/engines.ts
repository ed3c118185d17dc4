// The stores a suite runs against: DuckDB always, ClickHouse (the embedded chDB) when it is
// installed, and the many-node layout, the control state in PostgreSQL (test/support/postgres.ts)
// with ClickHouse analytics, when both run (in ENGINES_WITH_POSTGRES's suites, in place of the
// ClickHouse run). `npm test` without them says once that those runs were skipped; `.ci/run`
// installs chDB, and CI=true makes a missing chDB or PostgreSQL a failure.

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

/**
 * For the suites that run on PostgreSQL too (with chDB, this starts it): each engine once, DuckDB
 * and ClickHouse with its control state in PostgreSQL (the many-node layout). ClickHouse beside the
 * DuckDB control store is ENGINES's run: the analytical code is the same in both ClickHouse layouts,
 * and the control stores each run here, so a third run of these suites added time, not coverage
 * (bench/RESULTS.md, "Test suite times"). Without PostgreSQL: ENGINES.
 */
export const ENGINES_WITH_POSTGRES: readonly TestEngine[] = withChdb && await postgresRunning() ? ['duckdb', POSTGRES] : ENGINES;
