// Every stored row of every table of a test app's stores, searched for strings: the control store
// (DuckDB or PostgreSQL), DuckDB's analytical tables, and ClickHouse's. A privacy test proves with it
// that no row anywhere holds an erased person's identifiers.

import { ClickHouseAnalytics } from '../../src/store/clickhouse/analytics.js';
import type { TestApp } from './app.js';

const text = (rows: unknown[]) => JSON.stringify(rows, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));

/** `table: needle` for each table holding a needle (case-insensitive). */
export async function tablesHolding(t: TestApp, needles: string[]): Promise<string[]> {
  const found: string[] = [];
  const search = (where: string, rows: unknown[]) => {
    const all = text(rows).toLowerCase();
    for (const needle of needles) if (all.includes(needle.toLowerCase())) found.push(`${where}: ${needle}`);
  };
  const control = t.stores.control;
  const schema = t.stores.duckdb ? 'main' : 'public';
  const tables = await control.all(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, [schema]);
  for (const { table_name: name } of tables) search(String(name), await control.all(`SELECT * FROM "${String(name)}"`));
  if (t.stores.analytics instanceof ClickHouseAnalytics) {
    const { client, database } = t.stores.analytics.ctx;
    const chTables = await (await client.query({ query: 'SELECT name FROM system.tables WHERE database = {db:String} AND engine LIKE \'%MergeTree%\'', query_params: { db: database }, format: 'JSONEachRow' })).json<{ name: string }>();
    for (const { name } of chTables) {
      search(`clickhouse.${name}`, await (await client.query({ query: `SELECT * FROM \`${database}\`.\`${name}\``, format: 'JSONEachRow' })).json());
    }
  }
  return found;
}
