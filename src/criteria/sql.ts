// The SQL printers of a plan, the only place that writes criteria SQL: what both dialects decide
// alike (print/walker.ts), and one Printer (print/printer.ts) per dialect: DuckDB's
// (print/duckdb.ts, the default store) and ClickHouse's (print/clickhouse.ts, the analytical store
// of a scaled-out deployment).

export type { Printer } from './print/printer.js';
export {
  type CompiledQuery, duckdbPrinter, printBreakdown, printCount, printMembers, printOverlap, printProfiles, printRevenue, typedColumn,
} from './print/duckdb.js';
export type { SqlParam } from './print/walker.js';
export { CLICKHOUSE_QUERY_SETTINGS, type ClickHouseParam, type ClickHouseQuery, clickhousePrinter, ClickHousePrinter } from './print/clickhouse.js';
export { duckdbSplitSql } from './print/duckdb-lift.js';
export { clickhouseSplitSql } from './print/clickhouse-lift.js';
