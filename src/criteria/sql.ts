// The SQL printers of a plan, the only place that writes criteria SQL: what both dialects decide
// alike (print/walker.ts), DuckDB's statements (print/duckdb.ts, the default store) and
// ClickHouse's (print/clickhouse.ts, the analytical store of a scaled-out deployment).

export { type CompiledQuery, printBreakdown, printCount, printMembers, printOverlap, printProfiles, printRevenue, typedColumn } from './print/duckdb.js';
export type { SqlParam } from './print/walker.js';
export { CLICKHOUSE_QUERY_SETTINGS, type ClickHouseParam, type ClickHouseQuery, clickhousePrinter } from './print/clickhouse.js';
