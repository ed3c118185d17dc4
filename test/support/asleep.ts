// Counts that never end on their own and hold an estimate place until their budget stops them,
// asleep: a blocker that burnt the cores for seconds took them from the test file running beside it.

/** DuckDB: a recursion that sleeps 50 ms a step; the interrupt stops it between steps. */
export const ASLEEP_DUCKDB = 'WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE sleep_ms(50) IS NULL) SELECT count(*) AS count FROM r';

/** ClickHouse: 50 ms asleep per block of numbers; max_execution_time stops it between blocks. */
export const ASLEEP_CLICKHOUSE = { sql: 'SELECT count() AS count FROM numbers(1000000000000) WHERE sleep(0.05) = 0', params: {} };
