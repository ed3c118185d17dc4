// The test-only ClickHouse HTTP server over chDB (support/chdb-server.ts), which lets several
// processes share one embedded engine: @clickhouse/client reaches it as it reaches a server (query
// parameters, per-request settings, deduplicated inserts, errors with their codes, compression),
// another process sees what this one wrote, and the service's analytical store on it answers as on
// the in-process chDB from ingest to a delivered audience. Skipped where chdb is not installed
// (support/engines.ts says so, and fails under CI=true).

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { ClickHouseError, type ClickHouseClient, ClickHouseLogLevel, type ClickHouseSettings, createClient } from '@clickhouse/client';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { type ChdbServer, startChdbServer } from './support/chdb-server.js';
import { CHDB_INSTALLED } from './support/engines.js';
import { startReceiver } from './support/receiver.js';
import { checkoutSession, deliver, invoice, notification } from './support/stripe.js';

const REPO = join(import.meta.dirname, '..');

describe.skipIf(!CHDB_INSTALLED)('chdb-server', () => {
  let dir: string;
  let server: ChdbServer;
  let client: ClickHouseClient;
  const rows = async <T>(query: string, params?: Record<string, unknown>) =>
    (await client.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
  const failure = (run: () => Promise<unknown>) => run().then(() => expect.fail('no error'), (err: unknown) => err);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'chdb-server-'));
    server = await startChdbServer(join(dir, 'data'));
    // Errors are what some tests expect: the client's own log would print them again.
    client = createClient({ url: server.url, log: { level: ClickHouseLogLevel.OFF } });
    await client.command({ query: 'CREATE DATABASE shared' });
    // Deduplication of plain (not replicated) MergeTree inserts needs a window of remembered blocks.
    await client.command({ query: 'CREATE TABLE shared.rows (writer String, n UInt32) ENGINE = MergeTree ORDER BY (writer, n) SETTINGS non_replicated_deduplication_window = 100' });
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers /ping as a server does, and the client pings it', async () => {
    const res = await fetch(`${server.url}/ping`);
    expect([res.status, await res.text()]).toEqual([200, 'Ok.\n']);
    expect(await client.ping()).toEqual({ success: true });
    expect(await client.ping({ select: true })).toEqual({ success: true });
  });

  it('binds {name:Type} parameters from the text the client sends, whatever they hold', async () => {
    const text = "it's a \\ back\tslash\nand 'quotes' — ünïcode";
    const [row] = await rows<Record<string, unknown>>(
      `SELECT {s:String} AS s, {list:Array(String)} AS list, {none:Nullable(String)} AS none, toInt32({n:Int64} + 1) AS n, {n:Int64} AS quoted,
        toFloat64(toUnixTimestamp64Milli({at:DateTime64(3)})) AS at, {name:Identifier} AS ident FROM (SELECT 7 AS seven)`,
      { s: text, list: [text, 'b'], none: null, n: 41, at: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), name: 'seven' },
    );
    expect(row).toEqual({ s: text, list: [text, 'b'], none: null, n: 42, quoted: '41', at: Date.UTC(2026, 0, 2, 3, 4, 5, 678), ident: 7 });
  });

  it('keeps settings and parameters to their request', async () => {
    const limit = async (settings: Record<string, number>) =>
      (await (await client.query({ query: "SELECT getSetting('max_execution_time') AS s", format: 'JSONEachRow', clickhouse_settings: settings })).json<{ s: number }>())[0]!.s;
    expect([await limit({ max_execution_time: 123 }), await limit({})]).toEqual([123, 0]);
    // A later statement naming a parameter it does not send fails, as on a server.
    expect(await rows('SELECT {p:String} AS p', { p: 'sent' })).toEqual([{ p: 'sent' }]);
    expect(await failure(() => rows('SELECT {p:String} AS p'))).toBeInstanceOf(ClickHouseError);
    // Requests sent at once each get their own, queued on the one session.
    const many = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const result = await client.query({
        query: "SELECT {i:UInt32} AS i, toUInt32(getSetting('max_execution_time')) AS s", query_params: { i }, format: 'JSONEachRow',
        clickhouse_settings: i % 2 === 0 ? { max_execution_time: 100 + i } : {},
      });
      return (await result.json())[0];
    }));
    expect(many).toEqual(Array.from({ length: 40 }, (_, i) => ({ i, s: i % 2 === 0 ? 100 + i : 0 })));
  });

  it('stores an insert retried with its deduplication token once, and the next insert without a token', async () => {
    const insert = (values: { writer: string; n: number }[], settings: ClickHouseSettings) =>
      client.insert({ table: 'shared.rows', values, format: 'JSONEachRow', clickhouse_settings: settings });
    // Synchronous, for its summary (chDB reports no rows for an async insert).
    const first = await insert([{ writer: 'dedup', n: 1 }], { insert_deduplication_token: 'token-1', async_insert: 0 });
    expect(first.summary?.written_rows).toBe('1');
    await insert([{ writer: 'dedup', n: 1 }], { insert_deduplication_token: 'token-1' });
    // The same block without the token is a new insert: the token did not stay on the engine.
    await insert([{ writer: 'dedup', n: 1 }], {});
    // As the service's outbox sends its rows: the token in the statement, the NDJSON text as the body.
    for (let i = 0; i < 2; i++) {
      const result = await client.exec({
        query: "INSERT INTO shared.rows SETTINGS async_insert = 1, wait_for_async_insert = 1, async_insert_deduplicate = 1, insert_deduplication_token = 'token-2' FORMAT JSONEachRow",
        values: Readable.from(['{"writer":"dedup","n":2}\n']),
      });
      await result.stream.resume().toArray();
    }
    expect(await rows("SELECT n, toUInt32(count()) AS c FROM shared.rows WHERE writer = 'dedup' GROUP BY n ORDER BY n")).toEqual([{ n: 1, c: 2 }, { n: 2, c: 1 }]);
    // No data stores no rows, as over a server's HTTP interface.
    await (await client.exec({ query: 'INSERT INTO shared.rows FORMAT JSONEachRow', values: Readable.from([]) })).stream.resume().toArray();
  });

  it('answers errors with their ClickHouse code, and refuses what it cannot store whole', async () => {
    const unknownTable = await failure(() => rows('SELECT * FROM shared.missing'));
    expect(unknownTable).toBeInstanceOf(ClickHouseError);
    expect(unknownTable).toMatchObject({ code: '60', type: 'UNKNOWN_TABLE' });
    expect(await failure(() => client.command({ query: 'SELEC 1' }))).toMatchObject({ code: '62', type: 'SYNTAX_ERROR' });
    expect(await failure(() => client.command({ query: 'SELECT 1', clickhouse_settings: { no_such_setting: 1 } }))).toMatchObject({ code: '115', type: 'UNKNOWN_SETTING' });
    // Inline data that chDB's parser would end at the empty line: refused, not half stored.
    const res = await fetch(`${server.url}/?query=${encodeURIComponent('INSERT INTO shared.rows FORMAT JSONEachRow')}`, {
      method: 'POST', body: '{"writer":"gap","n":1}\n\n{"writer":"gap","n":2}\n',
    });
    expect([res.status, res.headers.get('x-clickhouse-exception-code')]).toEqual([500, '48']);
    expect(await rows("SELECT n FROM shared.rows WHERE writer = 'gap'")).toEqual([]);
  });

  it('takes compressed inserts and gives compressed answers', async () => {
    const compressed = createClient({ url: server.url, compression: { request: true, response: true }, log: { level: ClickHouseLogLevel.OFF } });
    try {
      await compressed.insert({ table: 'shared.rows', values: [{ writer: 'gzip', n: 1 }], format: 'JSONEachRow' });
      const result = await compressed.query({ query: "SELECT writer, n FROM shared.rows WHERE writer = 'gzip'", format: 'JSONEachRow' });
      expect(result.response_headers['content-encoding']).toBe('gzip');
      expect(await result.json()).toEqual([{ writer: 'gzip', n: 1 }]);
    } finally {
      await compressed.close();
    }
  });

  it('lets another process write and read the same tables', async () => {
    await client.insert({ table: 'shared.rows', values: [{ writer: 'parent', n: 1 }], format: 'JSONEachRow' });
    const counts = "SELECT writer, toUInt32(count()) AS c FROM shared.rows WHERE writer IN ('parent', 'child') GROUP BY writer ORDER BY writer";
    const script = `
      import { createClient } from '@clickhouse/client';
      const client = createClient({ url: process.env.CLICKHOUSE_URL });
      await client.insert({ table: 'shared.rows', values: [{ writer: 'child', n: 1 }, { writer: 'child', n: 2 }], format: 'JSONEachRow' });
      const seen = await client.query({ query: process.env.COUNTS, format: 'JSONEachRow' });
      console.log(JSON.stringify(await seen.json()));
      await client.close();`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO, env: { ...process.env, CLICKHOUSE_URL: server.url, COUNTS: counts },
    });
    const both = [{ writer: 'child', c: 2 }, { writer: 'parent', c: 1 }];
    expect(JSON.parse(stdout)).toEqual(both);
    expect(await rows(counts)).toEqual(both);
  });

  it('runs the service from ingest to a delivered audience as the in-process chDB does', async () => {
    const overHttp = await journey({ clickhouseUrl: server.url }, dir);
    const inProcess = await journey({}, dir);
    expect(overHttp).toEqual(inProcess);
    // What both saw, so that equal is not equally empty.
    expect(overHttp).toMatchObject({ estimates: [1, 1, 3], counts: [1, 0], members: [['ada', 'ada@example.com']], fromArrow: [['ada', 'ada@example.com']] });
  });
});

/**
 * Ingest (page views, events, a relink, a payment) over the service's API, estimates, an audience
 * refreshed, its members as JSON, CSV, Parquet and Arrow, and the diffs delivered: the outcome
 * without the ids each run makes up.
 */
async function journey(options: { clickhouseUrl?: string }, dir: string) {
  const at = new Date(Date.now() + 60_000);
  const t: TestApp = await startTestApp({ engine: 'clickhouse', at, ...options });
  const receiver = await startReceiver();
  try {
    const send = (method: 'GET' | 'POST', url: string) => t.app.inject({ method, url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    const ok = (res: { statusCode: number; body: string }) => expect(res.statusCode, res.body).toBeLessThan(300);
    for (const [visitor, referrer] of [['v_ada', 'https://chatgpt.com/'], ['v_bo', 'https://claude.ai/'], ['v_cy', 'https://www.google.com/']]) {
      ok(await t.app.inject({ method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`, headers: { 'content-type': 'text/plain' },
        payload: JSON.stringify({ visitor_id: visitor, url: 'https://shop.example/pricing', referrer }) }));
    }
    const events = (batch: unknown[]) => t.post('/v1/events', { batch });
    ok(await events([{ event_name: 'signup', visitor_id: 'v_ada', properties: { plan: "pro's", seats: 3 } }, { event_name: 'signup', visitor_id: 'v_bo' }]));
    ok(await t.post('/v1/persons', { external_id: 'ada', email: 'ada@example.com', visitor_id: 'v_ada' }));
    ok(await t.post('/v1/persons', { external_id: 'bo', email: 'bo@example.com', visitor_id: 'v_bo' }));
    ok(await events([{ event_name: 'churned', external_id: 'bo' }]));
    ok(await deliver(t, notification('checkout.session.completed', checkoutSession('cus_ada', { tr_user_id: 'ada' }))));
    ok(await deliver(t, notification('invoice.paid', invoice('cus_ada'))));

    const ever = { kind: 'ever' };
    const aiSignups = { version: 1, root: { op: 'and', children: [
      { source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } }, occurrence: { op: 'did', count: null, window: ever } },
      { source: 'product_event', name: 'signup', filter: { 'payload.plan': { op: '=', value: "pro's" } }, occurrence: { op: 'did', count: null, window: ever } },
      { op: 'not', child: { source: 'product_event', name: 'churned', occurrence: { op: 'did', count: null, window: ever } } },
    ] } };
    const payers = { version: 1, root: { source: 'payments', event: 'first_paid_invoice', occurrence: { window: ever } } };
    const pricing = { version: 1, root: { source: 'pageview', filter: { path: { op: '=', value: '/pricing' } }, occurrence: { op: 'did', count: null, window: ever } } };
    const estimates: number[] = [];
    for (const criteria of [aiSignups, payers, pricing]) estimates.push((await t.compile(criteria)).json().estimated_count.count);

    const created = await t.post('/v1/audiences', { name: 'AI sign-ups', criteria_json: aiSignups, destinations: [{ type: 'webhook', url: receiver.url, secret: 'shh' }] });
    ok(created);
    const id = created.json().id as string;
    const refreshed = (await send('POST', `/v1/audiences/${id}/refresh`)).json();
    const members = (await send('GET', `/v1/audiences/${id}/members`)).json().data.map((m: { external_id: string; email: string }) => [m.external_id, m.email]);
    // Without the person_id column, which each run makes up.
    const csv = (await send('GET', `/v1/audiences/${id}/members?format=csv`)).body.trim().split('\n')
      .map((line) => line.split(',').slice(1).map((field) => field.replace(/^"(.*)"$/, '$1')));
    const parquet = join(dir, `members-${options.clickhouseUrl === undefined ? 'in-process' : 'http'}.parquet`);
    await writeFile(parquet, (await send('GET', `/v1/audiences/${id}/members?format=parquet`)).rawPayload);
    const fromParquet = (await t.store.query(`SELECT external_id, email FROM read_parquet('${parquet}')`)).map((r) => [r.external_id, r.email]);
    const fromArrow = tableFromIPC((await send('GET', `/v1/audiences/${id}/members?format=arrow`)).rawPayload).toArray()
      .map((r: { external_id: string | null; email: string | null }) => [r.external_id, r.email]);

    await t.app.audiences.scheduler.tick(at);
    await t.app.audiences.deliverer.idle();
    ok(await events([{ event_name: 'churned', external_id: 'ada' }]));
    const second = (await send('POST', `/v1/audiences/${id}/refresh`)).json();
    await t.app.audiences.scheduler.tick(at);
    await t.app.audiences.deliverer.idle();
    const delivered = receiver.accepted.map((p) => ({ added: p.added.map((m) => m.external_id), removed: p.removed.map((m) => m.external_id) }));
    return { estimates, counts: [refreshed.member_count, second.member_count], members, csv, fromParquet, fromArrow, delivered };
  } finally {
    receiver.close();
    await t.close();
  }
}
