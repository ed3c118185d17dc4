// What the analytical store of a test app holds, read from the engine it runs on: DuckDB's tables,
// or ClickHouse's, where state tables give the current row of each key (FINAL: ClickHouse's own
// merge rule, not the store's argMax) and withdrawn payment events are left out. Values come back
// alike from both: times as Date, integers as number, a key ClickHouse stores as 0 as null. And
// rows of the export layout loaded into the engine in use.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ClickHouseAnalytics } from '../../src/store/clickhouse/analytics.js';
import { quote } from '../../src/store/clickhouse/run.js';
import { type CustomerRecord, writeCustomers } from '../../src/store/control/payments.js';
import { savePersons, saveVisitors } from '../../src/store/control/people.js';
import { recordEventNames, recordPropertyPaths } from '../../src/store/control/properties.js';
import { NO_COPIES } from '../../src/store/mirror.js';
import type { ControlSql } from '../../src/store/control/store.js';
import { Store } from '../../src/store/duckdb/db.js';
import { importDataset, importParquetDir } from '../../src/store/duckdb/import.js';
import { propertyPaths } from '../../src/store/property-paths.js';
import { DATASET_TABLES, type Dataset } from '../../src/store/layout.js';
import type { TestApp } from './app.js';
import { loadDataset } from './clickhouse.js';

export type AnalyticalTable = 'events' | 'pageviews' | 'subscriptions' | 'invoices' | 'payment_events' | 'visitors' | 'persons' | 'payment_customers';

const STATE = new Set<AnalyticalTable>(['subscriptions', 'invoices', 'payment_events', 'visitors', 'persons', 'payment_customers']);
const TIMES = new Set(['ts', 'created_at', 'paid_at', 'received_at']);
const INTEGERS = new Set(['amount', 'amount_due', 'amount_paid', 'person_key', 'visitor_key', 'n']);
const KEYS = new Set(['person_key', 'visitor_key']);

function normalize(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    let v = typeof value === 'bigint' ? Number(value) : value;
    if (TIMES.has(name) && typeof v === 'string') v = new Date(`${v.replace(' ', 'T').slice(0, 23)}Z`);
    if (INTEGERS.has(name) && typeof v === 'string') v = Number(v);
    if (KEYS.has(name) && v === 0) v = null;
    out[name] = v;
  }
  return out;
}

/**
 * Rows of a statement on the control store (DuckDB's file or PostgreSQL), written once with `$n`
 * parameters as the control statements are; values as `normalize` gives them.
 */
export async function controlRows(t: TestApp, sql: string, params: (string | number | null)[] = []): Promise<Record<string, unknown>[]> {
  return (await t.stores.control.all(sql, params)).map(normalize);
}

/** The ClickHouse analytical store of the app, or null on DuckDB. */
export const clickhouseOf = (t: TestApp) => (t.stores.analytics instanceof ClickHouseAnalytics ? t.stores.analytics.ctx : null);

/**
 * `columns` (plain names, the same on both engines; `"interval"` quoted) of the workspace's rows of
 * `table`, ordered by `orderBy`. On DuckDB persons, visitors and payment_customers are the control
 * tables; on ClickHouse their mirrors.
 */
export async function storedRows(
  t: TestApp, table: AnalyticalTable, columns: string[], orderBy: string[] = [], ws = t.ws.workspace_id,
): Promise<Record<string, unknown>[]> {
  const order = orderBy.length > 0 ? ` ORDER BY ${orderBy.join(', ')}` : '';
  const ch = clickhouseOf(t);
  if (!ch) return (await t.store.query(`SELECT ${columns.join(', ')} FROM ${table} WHERE workspace_id = $1${order}`, [ws])).map(normalize);
  const current = `(SELECT * FROM ${ch.database}.${table}${STATE.has(table) ? ' FINAL' : ''} WHERE workspace_id = {ws:String})`;
  const live = table === 'payment_events' ? ' WHERE deleted = 0' : '';
  const result = await ch.client.query({ query: `SELECT ${columns.join(', ')} FROM ${current}${live}${order}`, query_params: { ws }, format: 'JSONEachRow' });
  return (await result.json<Record<string, unknown>>()).map(normalize);
}

/** The number of the workspace's rows of `table` (current ones, for a state table on ClickHouse). */
export async function storedCount(t: TestApp, table: AnalyticalTable, ws = t.ws.workspace_id): Promise<number> {
  return (await storedRows(t, table, ['1 AS one'], [], ws)).length;
}

/** Events stored per event name. */
export async function eventsByName(t: TestApp): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const { event_name } of await storedRows(t, 'events', ['event_name'])) counts.set(event_name as string, (counts.get(event_name as string) ?? 0) + 1);
  return counts;
}

/**
 * One-time payments (payments not paying a stored invoice), by payment_id: DuckDB's
 * one_time_payments view, or the same rule over the control store's payments and ClickHouse's
 * invoices. Amounts as numbers.
 */
export async function oneTimePayments(t: TestApp): Promise<Record<string, unknown>[]> {
  if (!clickhouseOf(t)) {
    return (await t.store.query('SELECT payment_id, customer_id, amount, currency FROM one_time_payments WHERE workspace_id = $1 ORDER BY payment_id',
      [t.ws.workspace_id])).map(normalize);
  }
  const invoices = new Set((await storedRows(t, 'invoices', ['invoice_id'])).map((r) => r.invoice_id));
  const payments = await controlRows(t, `SELECT payment_id, customer_id, amount, currency, invoice_id FROM payments
    WHERE workspace_id = $1 AND amount IS NOT NULL AND customer_id IS NOT NULL ORDER BY payment_id`, [t.ws.workspace_id]);
  return payments.filter((p) => !invoices.has(p.invoice_id)).map(({ invoice_id: _, ...p }) => p);
}

/** Keys of the workspace's persons and visitors by public id, as the control store holds them. */
async function keysOf(control: ControlSql, ws: string): Promise<{ personKey: Map<string, number>; visitorKey: Map<string, number> }> {
  const keyOf = async (sql: string) => new Map((await control.all(sql, [ws])).map((r) => [String(r.id), Number(r.k)]));
  return {
    personKey: await keyOf('SELECT person_id AS id, person_key AS k FROM persons WHERE workspace_id = $1'),
    visitorKey: await keyOf('SELECT visitor_id AS id, visitor_key AS k FROM visitors WHERE workspace_id = $1'),
  };
}

/**
 * The control rows of an import on PostgreSQL (imports write the DuckDB file only): persons,
 * visitors, customers and the property catalog, written with the control statements.
 */
async function importControlRows(t: TestApp, ws: string, data: Partial<Dataset>): Promise<void> {
  const control = t.stores.control;
  const [persons, visitors] = [data.persons ?? [], data.visitors ?? []];
  // Keys ascending in row order, as the DuckDB import gives them (pages of deliveries follow them).
  const ascending = (keys: number[]) => keys.sort((x, y) => x - y);
  const [pk, vk] = [ascending(await control.nextKeys('person_keys', persons.length)), ascending(await control.nextKeys('visitor_keys', visitors.length))];
  const paths = new Map<string, { event_name: string; path: string }>();
  for (const e of data.events ?? []) {
    for (const path of propertyPaths(JSON.parse(e.properties))) paths.set(`${e.event_name}\0${path}`, { event_name: e.event_name, path });
  }
  const now = new Date();
  await control.transaction(async (tx) => {
    // ClickHouse gets its copies of these rows from the load that follows (importRows).
    const writes = { control: tx, mirror: NO_COPIES };
    await savePersons(writes, ws, persons.map((p, i) => ({
      person_key: pk[i]!, person_id: p.person_id, external_id: p.external_id === null ? null : String(p.external_id),
      email: p.email?.trim().toLowerCase() ?? null,
    })), [], new Map(persons.map((p, i) => [pk[i]!, { traits: p.traits === null ? undefined : JSON.parse(p.traits), name: p.name ?? undefined }])), now);
    const { personKey } = await keysOf(tx, ws);
    const keyOf = (personId: string | null) => (personId === null ? null : personKey.get(personId) ?? null);
    // As the import marks them: visitors of events stored without a person.
    const anonymous = new Set((data.events ?? []).filter((e) => keyOf(e.person_id) === null).map((e) => e.visitor_id));
    await saveVisitors(writes, ws, visitors.map((v, i) => ({
      visitor_key: vk[i]!, visitor_id: v.visitor_id, person_key: keyOf(v.person_id), first_seen_at: v.first_seen_at,
      anonymous_events: anonymous.has(v.visitor_id),
    })), [], [], now);
    const { visitorKey } = await keysOf(tx, ws);
    await writeCustomers(writes, ws, (data.customers ?? []).map((c): CustomerRecord => {
      const email = c.email?.trim().toLowerCase() ?? null;
      return {
        customer_id: c.customer_id, email, customer_email: null, customer_email_created: null, payment_email: email, payment_email_created: null,
        person_key: keyOf(c.person_id), visitor_key: c.visitor_id === null ? null : visitorKey.get(c.visitor_id) ?? null, tr_user_id: null,
        tr_visitor_id: c.visitor_id, tr_user_id_created: null, tr_visitor_id_created: null, link_state: c.link_state,
      };
    }), [], [], now);
    await recordPropertyPaths(tx, ws, [...paths.values()]);
    await recordEventNames(tx, ws, [...new Set((data.events ?? []).map((e) => e.event_name))]);
  });
}

/**
 * Loads rows of the export layout into workspace `ws` of the app's stores. On ClickHouse the control
 * store gets them too (persons' and visitors' keys, the property catalog), then the analytical
 * tables get them under those keys.
 */
export async function importRows(t: TestApp, data: Partial<Dataset>, ws = t.ws.workspace_id): Promise<void> {
  if (t.stores.duckdb) await importDataset(t.store, ws, data);
  else await importControlRows(t, ws, data);
  const ch = clickhouseOf(t);
  if (!ch) return;
  const keys = await keysOf(t.stores.control, ws);
  const full = Object.fromEntries(DATASET_TABLES.map((table) => [table, data[table] ?? []])) as unknown as Dataset;
  // The loader names tables unqualified; chDB's one session keeps USE (the store qualifies its own).
  await ch.client.command({ query: `USE ${quote(ch.database)}` });
  await loadDataset(ch.client, ws, full, keys);
}

/**
 * Imports a directory of export-layout parquet files (the fixture generator's) into workspace `ws`:
 * on ClickHouse, their rows as importRows loads them, read with DuckDB (a database of its own when
 * the control state is in PostgreSQL).
 */
export async function importParquet(t: TestApp, dir: string, ws = t.ws.workspace_id): Promise<void> {
  if (!clickhouseOf(t)) return importParquetDir(t.store, ws, dir);
  const reader = t.stores.duckdb ?? await Store.open(':memory:');
  const data: Partial<Record<string, unknown[]>> = {};
  try {
    for (const table of DATASET_TABLES) {
      const file = join(dir, `${table}.parquet`);
      if (!existsSync(file)) continue;
      const rows = await reader.query('SELECT * FROM read_parquet($1)', [file]);
      data[table] = rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])));
    }
  } finally {
    if (reader !== t.stores.duckdb) await reader.close();
  }
  await importRows(t, data as Partial<Dataset>, ws);
}
