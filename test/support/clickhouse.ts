// ClickHouse for tests: an embedded chDB reached through @clickhouse/client (the code path a server
// or cluster uses), and a loader from the export layout (layout.ts) into the analytical tables of
// store/clickhouse/schema.ts. chDB is not a dependency (a ~540 MB download): `openChdb` answers
// null when it is not installed, and the suites that need it skip.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { type ClickHouseClient, createClient } from '@clickhouse/client';
import { clickhouseSchema, EVENT_INSERT_SETTINGS, propertyObjects, VISITOR_LINKS } from '../../src/store/clickhouse/schema.js';
import type { Dataset } from '../../src/store/layout.js';
import { type ChdbEngineModule, holdEngine } from '../../src/store/clickhouse/embedded.js';

export const CHDB_MISSING = 'ClickHouse tests skipped: chdb is not installed (`npm run chdb:install` installs it).';

export const DATABASE = 'analytics';

export interface Chdb {
  client: ClickHouseClient;
  close(): Promise<void>;
}

interface ChdbModules {
  connection: { createChdbConnection(options: { path: string }): never };
  engine: ChdbEngineModule & { drainPending(): Promise<void> };
}

/** The chdb package, or null when it is not installed (imported by a computed name: no static type dependency). */
async function chdbModules(): Promise<ChdbModules | null> {
  const load = (name: string) => import(name);
  try {
    return { connection: await load('chdb/connection'), engine: await load('chdb') };
  } catch (error) {
    // Not installed (the package, or its native library's package); anything else is a real fault.
    if (['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND'].includes((error as { code?: string }).code ?? '')) return null;
    throw error;
  }
}

/**
 * An embedded chDB in a fresh temporary directory with the single-node schema created. chDB binds
 * one data directory per process, so a test file opens one and closes it in afterAll.
 */
export async function openChdb(): Promise<Chdb | null> {
  const chdb = await chdbModules();
  if (!chdb) return null;
  const dir = await mkdtemp(join(tmpdir(), 'chdb-'));
  const engine = holdEngine(chdb.engine, dir);
  const client = createClient({ connection: chdb.connection.createChdbConnection({ path: engine.path }) });
  // Twice: every statement is idempotent, as `migrate` on every start needs.
  for (let i = 0; i < 2; i++) {
    for (const statement of clickhouseSchema({ database: DATABASE })) await client.command({ query: statement });
  }
  // chDB's connection ignores the client's `database` option; its one session keeps USE.
  await client.command({ query: `USE ${DATABASE}` });
  return {
    client,
    async close() {
      await client.close();
      engine.release();
      await chdb.engine.drainPending();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const ts = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');

/** The keys a load gave to public ids. */
export interface LoadedKeys {
  personKey: ReadonlyMap<string, number>;
  visitorKey: ReadonlyMap<string, number>;
}

/** Keys unique across workspaces, as the store's sequences give them. */
let lastKey = 0;

/**
 * Loads a dataset into workspace `ws`. State tables get a stale older version of each row first,
 * in its own insert (its own part), so reads must pick the newest version whatever the merge state:
 * visitors linked elsewhere, persons (traits included) and customers with other values, subscriptions and invoices
 * with shifted fields (NULLs becoming values and back), and a payment event withdrawn later.
 * `keys`: the keys another store gave the public ids (the same profiles in both); else new ones.
 */
export async function loadDataset(client: ClickHouseClient, ws: string, ds: Dataset, keys?: LoadedKeys): Promise<LoadedKeys> {
  const personKey = keys?.personKey ?? new Map(ds.persons.map((p) => [p.person_id, ++lastKey]));
  const visitorKey = keys?.visitorKey ?? new Map(ds.visitors.map((v) => [v.visitor_id, ++lastKey]));
  const pk = (id: string | null) => (id === null ? 0 : personKey.get(id) ?? 0);
  const vk = (id: string | null) => (id === null ? 0 : visitorKey.get(id) ?? 0);
  const insert = (table: string, values: Record<string, unknown>[]) =>
    values.length === 0 ? Promise.resolve() : client.insert({ table, values, format: 'JSONEachRow' });
  const otherPerson = (i: number) => (ds.persons.length > 1 ? ds.persons[(i + 1) % ds.persons.length]!.person_id : null);

  // Traits as the mirror holds them: the merged object's JSON text ('{}' for none).
  const persons = ds.persons.map((p) => ({ workspace_id: ws, person_key: pk(p.person_id), person_id: p.person_id,
    external_id: p.external_id, email: p.email?.trim().toLowerCase() ?? null, traits: p.traits ?? '{}' }));
  await insert('persons', persons.map((p, i) => ({ ...p, external_id: i % 3 === 0 ? null : 'stale', email: 'stale@example.com',
    traits: i % 2 === 0 ? '{}' : '{"plan":"pro","seats":10,"beta":true,"company":{"size":50,"name":"Acme"}}', version: 1 })));
  await insert('persons', persons.map((p) => ({ ...p, version: 2 })));

  const visitors = ds.visitors.map((v) => ({ workspace_id: ws, visitor_key: vk(v.visitor_id), visitor_id: v.visitor_id, person_key: pk(v.person_id) }));
  await insert('visitors', visitors.map((v, i) => ({ ...v, person_key: i % 2 === 0 ? pk(otherPerson(i)) : 0, version: 1 })));
  await insert('visitors', visitors.map((v) => ({ ...v, version: 2 })));
  // Links of old versions: the dictionary must be reloaded to see them (store/clickhouse/links.ts).
  await client.command({ query: `SYSTEM RELOAD DICTIONARY ${VISITOR_LINKS}` });

  // Events as written NDJSON, so each properties document reaches ClickHouse as the text it was.
  const events = ds.events.map((e) => `{${[
    `"workspace_id":${JSON.stringify(ws)}`, `"event_id":${JSON.stringify(e.event_id)}`, '"message_id":null',
    `"event_name":${JSON.stringify(e.event_name)}`, `"ts":"${ts(e.ts)}"`, `"received_at":"${ts(e.ts)}"`,
    `"person_key":${pk(e.person_id)}`, `"visitor_key":${vk(e.visitor_id)}`,
    `"properties":${e.properties}`, `"property_objects":${JSON.stringify(propertyObjects(JSON.parse(e.properties)))}`,
  ].join(',')}}`);
  if (events.length > 0) {
    // insert() takes rows as objects only; exec() sends the text as the body of INSERT … FORMAT.
    await client.exec({ query: 'INSERT INTO events FORMAT JSONEachRow', values: Readable.from([`${events.join('\n')}\n`]), clickhouse_settings: EVENT_INSERT_SETTINGS });
  }

  await insert('pageviews', ds.pageviews.map((pv) => ({
    workspace_id: ws, pageview_id: pv.pageview_id, visitor_key: vk(pv.visitor_id), ts: ts(pv.ts), url: pv.url, referrer: pv.referrer,
    title: null, host: pv.host, path: pv.path, referrer_host: pv.referrer_host, source: pv.source, medium: pv.medium,
    campaign: pv.campaign, channel: pv.channel, channel_category: pv.channel_category,
  })));

  const customers = ds.customers.map((c) => ({ workspace_id: ws, customer_id: c.customer_id, person_key: pk(c.person_id), visitor_key: vk(c.visitor_id) }));
  await insert('payment_customers', customers.map((c, i) => ({ ...c, person_key: pk(otherPerson(i)), visitor_key: 0, version: 1 })));
  await insert('payment_customers', customers.map((c) => ({ ...c, version: 2 })));

  const subscriptions = ds.subscriptions.map((s) => ({ workspace_id: ws, subscription_id: s.subscription_id, customer_id: s.customer_id,
    status: s.status, price_id: s.price_id, product_id: s.product_id, interval: s.interval, amount: s.amount, currency: s.currency,
    cancel_at_period_end: s.cancel_at_period_end, created_at: ts(s.created_at) }));
  await insert('subscriptions', subscriptions.map((s) => ({ ...s, status: s.status === 'active' ? 'canceled' : 'active',
    price_id: s.price_id === null ? 'price_pro' : null, amount: s.amount === null ? 1900 : null, currency: s.currency ?? 'usd',
    cancel_at_period_end: !s.cancel_at_period_end, version: 1 })));
  await insert('subscriptions', subscriptions.map((s) => ({ ...s, version: 2 })));

  const invoices = ds.invoices.map((i) => ({ workspace_id: ws, invoice_id: i.invoice_id, customer_id: i.customer_id,
    subscription_id: i.subscription_id, status: i.status, amount_due: i.amount_due, amount_paid: i.amount_paid,
    currency: i.currency, created_at: ts(i.created_at), paid_at: i.amount_paid > 0 ? ts(i.created_at) : null }));
  // Paid when it has an amount paid, at its creation, as DuckDB's import stores it (store/duckdb/import.ts).
  await insert('invoices', invoices.map((i) => ({ ...i, status: i.status === 'paid' ? 'open' : 'paid', amount_paid: i.amount_paid + 1, currency: 'gbp',
    paid_at: i.paid_at === null ? i.created_at : null, version: 1 })));
  await insert('invoices', invoices.map((i) => ({ ...i, version: 2 })));

  const paymentEvents = ds.payment_events.map((e) => ({ workspace_id: ws, kind: e.kind, customer_id: e.customer_id, object_id: e.object_id,
    ts: ts(e.ts), amount: null, currency: null }));
  const withdrawn = ds.customers.map((c, i) => ({ workspace_id: ws, kind: 'refund_issued', customer_id: c.customer_id,
    object_id: `withdrawn${i}`, ts: ts(new Date(Date.UTC(2026, 5, 1))), amount: null, currency: null }));
  await insert('payment_events', [...paymentEvents, ...withdrawn].map((e) => ({ ...e, version: 1, deleted: 0 })));
  await insert('payment_events', withdrawn.map((e) => ({ ...e, version: 2, deleted: 1 })));
  return { personKey, visitorKey };
}
