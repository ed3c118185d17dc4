// CSV injection (OWASP, "CSV Injection"): a cell starting with =, +, -, @, a tab or a carriage
// return is read as a formula by spreadsheets, so every CSV the service and the CLI write prefixes
// such a cell with a single quote. Parquet, Arrow and JSON keep the raw values. Each engine applies
// the rule in SQL around the statement it writes (store/duckdb/db.ts copyTo, store/clickhouse/run.ts writeRows).

/** The characters that make a cell a formula, as a regular-expression class both engines read alike (RE2 and DuckDB's). */
export const FORMULA_START = '^[=+\\-@\\t\\r]';

/** What the cell becomes, in TypeScript (the engines' SQL does the same; tests hold them to it). */
export const neutralized = (cell: string): string => (new RegExp(FORMULA_START).test(cell) ? `'${cell}` : cell);
