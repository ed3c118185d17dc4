// The analytical stores a suite runs against: DuckDB always, ClickHouse (the embedded chDB) when
// it is installed. `npm test` without it says once that the ClickHouse runs were skipped; `.ci/run`
// installs it, and CI=true makes its absence a failure rather than a skip.

import { chdbAvailable } from '../../src/store/clickhouse/client.js';
import type { AnalyticsEngine } from '../../src/store/open.js';

const withChdb = await chdbAvailable();
if (!withChdb && process.env.CI === 'true') {
  throw new Error('CI=true but chdb is not installed: the ClickHouse suites must run in CI (npm run chdb:install)');
}
if (!withChdb) {
  console.warn('ClickHouse suites skipped: chdb (the embedded ClickHouse, ~540 MB) is not installed; `npm run chdb:install` installs it');
}

export const ENGINES: readonly AnalyticsEngine[] = withChdb ? ['duckdb', 'clickhouse'] : ['duckdb'];
export const CHDB_INSTALLED = withChdb;
