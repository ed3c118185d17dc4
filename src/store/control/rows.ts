// Rows of one workspace written in bulk: one INSERT for the new rows and one UPDATE for the changed
// ones, however many, their values bound as one JSON parameter (ControlDialect.jsonRows). Used by the
// grouped writes of payment notifications, on the control store and on DuckDB's payment tables.

import { stringifyWellFormed } from '../../well-formed.js';
import { instantText } from '../instants.js';
import type { ControlSql, ControlValue } from './store.js';

export type ColumnType = 'text' | 'bigint' | 'boolean' | 'time';

/** A table's key column (text, beside workspace_id) and the columns written; names are code's, never input. */
export interface RowsTable {
  name: string;
  key: string;
  columns: Record<string, ColumnType>;
}

export type Row = Record<string, ControlValue | undefined>;

const FIELDS = { text: 'text', bigint: 'bigint', boolean: 'boolean', time: 'text' } as const;

const quoted = (name: string) => `"${name}"`;
/** Instants travel as UTC text; the statement casts them. */
const valueOf = (name: string, type: ColumnType) => (type === 'time' ? `CAST(r.${quoted(name)} AS TIMESTAMP)` : `r.${quoted(name)}`);

function parts(tx: ControlSql, table: RowsTable, rows: Row[]) {
  const columns = { [table.key]: 'text' as ColumnType, ...table.columns };
  const fields = Object.fromEntries(Object.entries(columns).map(([name, type]) => [name, FIELDS[type]]));
  const json = stringifyWellFormed(rows.map((row) => Object.fromEntries(Object.entries(columns).map(([name, type]) => {
    const v = row[name] ?? null;
    return [name, type === 'time' && v instanceof Date ? instantText(v) : typeof v === 'bigint' ? Number(v) : v];
  }))));
  return { columns, from: tx.dialect.jsonRows('$2', 'r', fields), json };
}

export async function insertRows(tx: ControlSql, table: RowsTable, ws: string, rows: Row[]): Promise<void> {
  if (rows.length === 0) return;
  const { columns, from, json } = parts(tx, table, rows);
  const names = Object.keys(columns);
  await tx.run(`INSERT INTO ${table.name} (workspace_id, ${names.map(quoted).join(', ')})
    SELECT $1, ${names.map((name) => valueOf(name, columns[name]!)).join(', ')} FROM ${from}`, [ws, json]);
}

/** Overwrites every column of `table.columns` of the rows with these keys. */
export async function updateRows(tx: ControlSql, table: RowsTable, ws: string, rows: Row[]): Promise<void> {
  if (rows.length === 0) return;
  const { from, json } = parts(tx, table, rows);
  await tx.run(`UPDATE ${table.name} SET ${Object.entries(table.columns).map(([name, type]) => `${quoted(name)} = ${valueOf(name, type)}`).join(', ')}
    FROM ${from}
    WHERE ${table.name}.workspace_id = $1 AND ${table.name}.${quoted(table.key)} = r.${quoted(table.key)}`, [ws, json]);
}
