// Units of work on ClickHouse (store/clickhouse/writes.ts, outbox.ts) when ClickHouse fails after
// the control transaction has committed: real failures (a dropped table, a store closed and opened
// again on the same files), never a mock. Skipped where chdb is not installed.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Ingest } from '../src/ingest/ingest.js';
import { PaymentWebhook } from '../src/attribution/webhook.js';
import { toAppError } from '../src/http/errors.js';
import { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import { clickhouseUnwritable, connectClickHouse } from '../src/store/clickhouse/client.js';
import type { ClickHouseContext } from '../src/store/clickhouse/context.js';
import { migrateClickHouse } from '../src/store/clickhouse/migrate.js';
import type { UnitsOptions } from '../src/store/clickhouse/writes.js';
import type { ControlStore } from '../src/store/control/store.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { Store } from '../src/store/duckdb/db.js';
import type { Stores } from '../src/store/open.js';
import { checkStores } from '../src/store/health.js';
import { startTestApp, type TestApp } from './support/app.js';
import { CHDB_INSTALLED } from './support/engines.js';
import { clickhouseOf, eventsByName, storedRows } from './support/stored.js';
import { deliver, invoice, notification, nowS, paymentIntent } from './support/stripe.js';

const outboxRows = async (control: ControlStore) => Number((await control.all('SELECT count(*) AS n FROM analytics_outbox'))[0]!.n);

/** What a failure is answered with over HTTP (a success resolves to 'resolved'). */
const answered = (work: Promise<unknown>) => work.then(() => 'resolved', toAppError);
const dropTable = (ctx: Pick<ClickHouseContext, 'client' | 'database'>, table: string) =>
  ctx.client.command({ query: `DROP TABLE ${ctx.database}.${table}` });

/** Inserts into `table` fail (a constraint no row meets) while reads go on; `allow` lifts it. */
const refuseInserts = (ctx: Pick<ClickHouseContext, 'client' | 'database'>, table: string) =>
  ctx.client.command({ query: `ALTER TABLE ${ctx.database}.${table} ADD CONSTRAINT closed CHECK 0` });
const allowInserts = (ctx: Pick<ClickHouseContext, 'client' | 'database'>, table: string) =>
  ctx.client.command({ query: `ALTER TABLE ${ctx.database}.${table} DROP CONSTRAINT closed` });

describe.skipIf(!CHDB_INSTALLED)('ClickHouse units of work through the app', () => {
  let t: TestApp;
  afterEach(async () => { await t.close(); });

  it('retries an insert that fails after the commit, with the same token: each message stored once, the outbox emptied', async () => {
    t = await startTestApp({ engine: 'clickhouse' });
    const ch = clickhouseOf(t)!;
    await dropTable(ch, 'events');
    const batch = (r: number) => ({ batch: Array.from({ length: 10 }, (_, i) => ({ event_name: `r${r}`, external_id: `u${i}`, message_id: `m${r}_${i}` })) });
    const answers = Promise.all([0, 1, 2].map((r) => t.post('/v1/events', batch(r))));
    // The control transactions commit and their rows wait in the outbox while the inserts fail.
    await vi.waitFor(async () => expect(await outboxRows(t.stores.control)).toBeGreaterThan(0), { timeout: 5000, interval: 20 });
    await migrateClickHouse(ch);
    for (const res of await answers) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().results.filter((r: { duplicate: boolean }) => r.duplicate)).toEqual([]);
    }
    expect(await eventsByName(t)).toEqual(new Map([['r0', 10], ['r1', 10], ['r2', 10]]));
    expect(await outboxRows(t.stores.control)).toBe(0);
    const again = await t.post('/v1/events', batch(1));
    expect(again.json().results.every((r: { duplicate: boolean }) => r.duplicate)).toBe(true);
    expect((await eventsByName(t)).get('r1')).toBe(10);
  });

  it('decides payment state on rows committed but not yet acknowledged: the earlier paid invoice arriving second wins', async () => {
    t = await startTestApp({ engine: 'clickhouse' });
    const ch = clickhouseOf(t)!;
    const T = nowS();
    expect((await deliver(t, notification('payment_intent.succeeded', paymentIntent('cus_p', { tr_user_id: 'up' }), T))).statusCode).toBe(200);
    await refuseInserts(ch, 'payment_events');
    const later = deliver(t, notification('invoice.paid', invoice('cus_p', { id: 'in_late', paid_at: T + 50 }), T + 50));
    await vi.waitFor(async () => expect(await outboxRows(t.stores.control)).toBeGreaterThan(0), { timeout: 5000, interval: 20 });
    const earlier = deliver(t, notification('invoice.paid', invoice('cus_p', { id: 'in_early', paid_at: T + 10 }), T + 10));
    // Both units committed: in_early's read saw in_late's first_paid_invoice before ClickHouse had it.
    await vi.waitFor(async () => {
      const tokens = await t.store.query('SELECT count(DISTINCT token) AS n FROM analytics_outbox');
      expect(Number(tokens[0]!.n)).toBe(2);
    }, { timeout: 5000, interval: 20 });
    await allowInserts(ch, 'payment_events');
    expect((await later).statusCode).toBe(200);
    expect((await earlier).statusCode).toBe(200);
    expect(await storedRows(t, 'payment_events', ['kind', 'object_id'])).toEqual([{ kind: 'first_paid_invoice', object_id: 'in_early' }]);
  });

  it('refuses with 400 property keys that ClickHouse would store as one path, and stores nothing of the batch', async () => {
    t = await startTestApp({ engine: 'clickhouse' });
    const res = await t.post('/v1/events', { batch: [
      { event_name: 'ok', external_id: 'k', message_id: 'k1' },
      { event_name: 'clash', external_id: 'k', properties: { list: [{ 'a.b': 1, 'a%2Eb': 2 }] } },
    ] });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/"a\.b" and "a%2Eb" are one path in ClickHouse/);
    expect(await eventsByName(t)).toEqual(new Map());
    expect((await t.post('/v1/events', { event_name: 'ok', external_id: 'k', message_id: 'k1' })).json().duplicate).toBe(false);
  });

  it('refuses with 400 a time in year 0, which ClickHouse would read back as another time', async () => {
    t = await startTestApp({ engine: 'clickhouse' });
    const res = await t.post('/v1/pageviews', { visitor_id: 'v0', url: 'https://shop.example/', timestamp: '0000-06-01T00:00:00Z' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/0000-06-01T00:00:00\.000Z is before year 1/);
    const year1 = await t.post('/v1/pageviews', { visitor_id: 'v0', url: 'https://shop.example/', timestamp: '0001-06-01T00:00:00Z' });
    expect(year1.statusCode).toBe(200);
    expect(await storedRows(t, 'pageviews', ['ts'])).toEqual([{ ts: new Date('0001-06-01T00:00:00Z') }]);
  });
});

describe.skipIf(!CHDB_INSTALLED)('ClickHouse rows left by a failure or a crash', () => {
  let dir: string;
  let database: string;
  // chDB keeps an in-memory data directory while a connection holds it: this one outlives the stores.
  let keeper: Awaited<ReturnType<typeof connectClickHouse>>;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ch-outbox-'));
    keeper = await connectClickHouse({ path: ':memory:', database: 'unused' });
  });
  afterAll(async () => {
    await keeper.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The stores as openStores builds them for ClickHouse, with the unit options under test. */
  async function open(path: string, units: UnitsOptions, Analytics = ClickHouseAnalytics): Promise<Stores & { analytics: ClickHouseAnalytics }> {
    const duckdb = await Store.open(path);
    const control = new DuckDBControl(duckdb);
    const client = await connectClickHouse({ path: ':memory:', database });
    const ctx = { client, database, control };
    await migrateClickHouse(ctx);
    const analytics = new Analytics(ctx, {}, units);
    return {
      control, analytics, duckdb, close: async () => { await analytics.close(); await control.close(); },
      health: (timeoutMs) => checkStores({ duckdb: () => duckdb.unwritable(), clickhouse: () => clickhouseUnwritable(client, { path: ':memory:', database }, timeoutMs) }, timeoutMs),
    };
  }

  const events = async (ctx: ClickHouseContext) => {
    const result = await ctx.client.query({ query: `SELECT message_id FROM ${ctx.database}.events ORDER BY message_id`, format: 'JSONEachRow' });
    return (await result.json<{ message_id: string }>()).map((r) => r.message_id);
  };

  it('answers an error when ClickHouse stays down, keeps the rows, and stores them once at the next start, even replayed twice', async () => {
    database = `outbox_${randomUUID().replaceAll('-', '')}`;
    const path = join(dir, 'crash.duckdb');
    const first = await open(path, { insertRetryMs: 100, sweepEveryMs: 3_600_000 });
    const ws = (await new Workspaces(first.control).create('w')).workspace_id;
    await dropTable(first.analytics.ctx, 'events');
    const ingest = new Ingest(first);
    await expect(answered(ingest.events(ws, [{ event_name: 'kept', external_id: 'c', message_id: 'm_kept' }]))).resolves.toMatchObject({ code: 'analytics_delayed', status: 503 });
    // Committed all the same: the message id is claimed, the person exists, the rows wait.
    expect(await ingest.events(ws, [{ event_name: 'kept', external_id: 'c', message_id: 'm_kept' }])).toEqual([{ event_id: null, person_id: null, duplicate: true }]);
    const [kept] = await first.control.all("SELECT token, table_name, body FROM analytics_outbox WHERE table_name = 'events'");
    expect(kept).toBeDefined();
    await first.close();

    // The next start recreates the table (migrate) and its sweeper inserts what was left.
    const second = await open(path, { sweepEveryMs: 3_600_000 });
    await vi.waitFor(async () => expect(await outboxRows(second.control)).toBe(0), { timeout: 10_000, interval: 20 });
    expect(await events(second.analytics.ctx)).toEqual(['m_kept']);
    // A crash after ClickHouse acknowledged, before the outbox row was deleted: replayed, stored once (same token).
    await second.control.transaction((tx) => tx.run('INSERT INTO analytics_outbox (token, table_name, body, created_at) VALUES ($1, $2, $3, current_timestamp)',
      [kept!.token as string, kept!.table_name as string, kept!.body as string]));
    await second.close();
    const third = await open(path, { sweepEveryMs: 3_600_000 });
    await vi.waitFor(async () => expect(await outboxRows(third.control)).toBe(0), { timeout: 10_000, interval: 20 });
    expect(await events(third.analytics.ctx)).toEqual(['m_kept']);
    await third.close();
  });

  it('stores rows the unit gave up on with the periodic sweeper once ClickHouse is back', async () => {
    database = `outbox_${randomUUID().replaceAll('-', '')}`;
    const stores = await open(join(dir, 'sweep.duckdb'), { insertRetryMs: 0, sweepEveryMs: 50 });
    try {
      const ws = (await new Workspaces(stores.control).create('w')).workspace_id;
      const ingest = new Ingest(stores);
      // A group commit whose insert fails: its requests fail, and are never run again (their message ids stay claimed once).
      await refuseInserts(stores.analytics.ctx, 'events');
      const batches = [0, 1, 2].map((r) => ingest.events(ws, [{ event_name: 'grouped', external_id: `g${r}`, message_id: `g${r}` }]));
      for (const outcome of await Promise.all(batches.map(answered))) expect(outcome).toMatchObject({ code: 'analytics_delayed', status: 503 });
      expect(await ingest.events(ws, [0, 1, 2].map((r) => ({ event_name: 'grouped', external_id: `g${r}`, message_id: `g${r}` }))))
        .toEqual(Array(3).fill({ event_id: null, person_id: null, duplicate: true }));
      const webhook = new PaymentWebhook(stores, ingest);
      await refuseInserts(stores.analytics.ctx, 'payment_events');
      const paid = { id: 'evt_swept', type: 'invoice.paid', created: new Date(), livemode: true, object: invoice('cus_s', { id: 'in_s' }) };
      await expect(answered(webhook.apply(ws, paid))).resolves.toMatchObject({ code: 'analytics_delayed', status: 503 });
      expect(await webhook.apply(ws, paid)).toEqual({ duplicate: true });
      await allowInserts(stores.analytics.ctx, 'payment_events');
      await allowInserts(stores.analytics.ctx, 'events');
      await vi.waitFor(async () => expect(await outboxRows(stores.control)).toBe(0), { timeout: 10_000, interval: 20 });
      expect(await events(stores.analytics.ctx)).toEqual(['g0', 'g1', 'g2']);
      const result = await stores.analytics.ctx.client.query({
        query: `SELECT kind, object_id FROM ${database}.payment_events WHERE workspace_id = {ws:String}`, query_params: { ws }, format: 'JSONEachRow',
      });
      expect(await result.json()).toEqual([{ kind: 'first_paid_invoice', object_id: 'in_s' }]);
    } finally {
      await stores.close();
    }
  });

  it('inserts a batch table once while another table of it is refused: the sweeper waits for every insert of an attempt', async () => {
    database = `outbox_${randomUUID().replaceAll('-', '')}`;
    const stores = await open(join(dir, 'partial.duckdb'), { insertRetryMs: 0, sweepEveryMs: 20 });
    try {
      const ws = (await new Workspaces(stores.control).create('w')).workspace_id;
      const webhook = new PaymentWebhook(stores, new Ingest(stores));
      // The batch's invoice is refused at once; its payment event's insert waits for the flush
      // meanwhile, over several sweeps.
      await refuseInserts(stores.analytics.ctx, 'invoices');
      const paid = { id: 'evt_partial', type: 'invoice.paid', created: new Date(), livemode: true, object: invoice('cus_p', { id: 'in_p' }) };
      await expect(answered(webhook.apply(ws, paid))).resolves.toMatchObject({ code: 'analytics_delayed', status: 503 });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await allowInserts(stores.analytics.ctx, 'invoices');
      await vi.waitFor(async () => expect(await outboxRows(stores.control)).toBe(0), { timeout: 10_000, interval: 20 });
      const rows = async (table: string) => Number((await (await stores.analytics.ctx.client.query({
        query: `SELECT count() AS n FROM ${database}.${table} WHERE workspace_id = {ws:String}`, query_params: { ws }, format: 'JSONEachRow',
      })).json<{ n: number | string }>())[0]!.n);
      // Without FINAL: a second insert of the same rows would show until a merge.
      expect(await rows('payment_events')).toBe(1);
      expect(await rows('invoices')).toBe(1);
    } finally {
      await stores.close();
    }
  });

  it('keeps versions counting up after a restart on a clock that went back: the latest link wins', async () => {
    database = `outbox_${randomUUID().replaceAll('-', '')}`;
    const path = join(dir, 'clock.duckdb');
    const first = await open(path, {});
    const ws = (await new Workspaces(first.control).create('w')).workspace_id;
    await new Ingest(first).person(ws, { external_id: 'before', visitor_id: 'v_clock' });
    await first.close();
    // A new process: modules loaded afresh (a version clock that starts from nothing), on a clock an hour behind.
    vi.resetModules();
    const fresh = await import('../src/store/clickhouse/analytics.js');
    const { Ingest: FreshIngest } = await import('../src/ingest/ingest.js');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 3_600_000 });
    try {
      const second = await open(path, {}, fresh.ClickHouseAnalytics);
      try {
        const { person_id } = await new FreshIngest(second).person(ws, { external_id: 'after', visitor_id: 'v_clock' });
        const [owner] = await second.control.all('SELECT person_key FROM persons WHERE person_id = $1', [person_id]);
        const link = await second.analytics.ctx.client.query({
          query: `SELECT argMax(person_key, version) AS person_key FROM ${database}.visitors WHERE workspace_id = {ws:String} AND visitor_id = 'v_clock'`,
          query_params: { ws }, format: 'JSONEachRow',
        });
        expect((await link.json<{ person_key: number }>())[0]!.person_key).toBe(Number(owner!.person_key));
      } finally {
        await second.close();
      }
    } finally {
      vi.useRealTimers();
    }
  });
});
