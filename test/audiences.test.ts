import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dataset } from '../src/store/layout.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { clickhouseOf, importRows } from './support/stored.js';

const START = new Date('2026-06-15T12:00:00Z');
const day = (iso: string) => new Date(`${iso}T12:00:00Z`);
const SECRET = 'whsec_test';

const ever = (name: string) => ({ version: 1, root: { source: 'product_event', name, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } });
const lastDays = (name: string, n: number) => ({
  version: 1, root: { source: 'product_event', name, occurrence: { op: 'did', count: null, window: { kind: 'last_n_days', n } } },
});

function dataset(): Partial<Dataset> {
  const ids = ['a0', 'a1', 'a2', 'a3', 'a4'];
  const person = (id: string, email: string | null) => ({ person_id: id, external_id: `u_${id}`, email, name: null, traits: null, created_at: day('2026-01-01') });
  return {
    persons: [...ids.map((id) => person(id, `${id}@example.com`)), person('w0', 'w0@example.com'), person('w1', null)],
    visitors: [{ visitor_id: 'anon1', person_id: null, first_seen_at: day('2026-06-01') }],
    events: [
      ...ids.map((id) => ({ event_id: `e_${id}`, event_name: 'signup', ts: day('2026-06-01'), person_id: id, visitor_id: null, properties: '{}' })),
      { event_id: 'e_anon', event_name: 'signup', ts: day('2026-06-02'), person_id: null, visitor_id: 'anon1', properties: '{}' },
      { event_id: 'v_w0', event_name: 'visit', ts: day('2026-06-10'), person_id: 'w0', visitor_id: null, properties: '{}' },
      { event_id: 'v_w1', event_name: 'visit', ts: day('2026-06-14'), person_id: 'w1', visitor_id: null, properties: '{}' },
    ],
  };
}

interface Received {
  body: { audience_id: string; snapshot_id: number; added: { person_id: string | null }[]; removed: { person_id: string | null }[] };
  verified: boolean;
}

/** A webhook receiver that checks X-Signature and answers 503 to the first `failures` requests. */
async function receiver(failures: number): Promise<{ url: string; accepted: Received[]; requests: number; server: Server }> {
  const state = { url: '', accepted: [] as Received[], requests: 0, server: null as unknown as Server };
  state.server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c.toString('utf8'); });
    req.on('end', () => {
      state.requests++;
      const header = String(req.headers['x-signature'] ?? '');
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
      const verified = !!match && createHmac('sha256', SECRET).update(`${match[1]}.${raw}`).digest('hex') === match[2];
      if (!verified) return res.writeHead(400).end('bad signature');
      if (state.requests <= failures) return res.writeHead(503).end('busy');
      state.accepted.push({ body: JSON.parse(raw), verified });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}/hook`;
  return state;
}

describe.each(ENGINES_WITH_POSTGRES)('%s: audiences', (engine) => {
  let t: TestApp;
  let now = START;
  const send = (method: 'GET' | 'PATCH' | 'DELETE' | 'POST', url: string, body?: unknown, key?: string) => t.app.inject({
    method, url,
    headers: { authorization: `Bearer ${key ?? t.ws.secret_key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const create = async (body: Record<string, unknown>) => {
    const res = await t.post('/v1/audiences', body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string } & Record<string, unknown>;
  };
  const allMembers = async (id: string, limit = 2) => {
    const out: unknown[] = [];
    let cursor: string | null = null;
    do {
      const res = await send('GET', `/v1/audiences/${id}/members?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as { data: unknown[]; next_cursor: string | null };
      out.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  };

  /** The current snapshot's diff of an audience, as (change, count), from the engine holding it. */
  const diffOf = async (id: string) => {
    const ch = clickhouseOf(t);
    if (!ch) {
      const rows = await t.store.query(`SELECT d.change, count(*) AS n FROM audience_diffs d JOIN audiences a USING (audience_id, snapshot_id)
        WHERE a.audience_id = $1 GROUP BY d.change`, [id]);
      return rows.map((r) => [r.change, Number(r.n)]);
    }
    const [current] = await t.stores.control.all('SELECT snapshot_id FROM audiences WHERE audience_id = $1', [id]);
    const rows = await (await ch.client.query({
      query: `SELECT change, count() AS n FROM ${ch.database}.audience_diffs WHERE audience_id = {id:String} AND snapshot_id = {s:UInt64} GROUP BY change`,
      query_params: { id, s: Number(current!.snapshot_id) }, format: 'JSONEachRow',
    })).json<{ change: string; n: string }>();
    return rows.map((r) => [r.change, Number(r.n)]);
  };
  /** Takes the events table away (a refresh then fails) and back, on the engine holding it. */
  const renameEvents = async (from: string, to: string) => {
    const ch = clickhouseOf(t);
    if (ch) await ch.client.command({ query: `RENAME TABLE ${ch.database}.${from} TO ${ch.database}.${to}` });
    else await t.store.query(`ALTER TABLE ${from} RENAME TO ${to}`);
  };

  beforeAll(async () => {
    t = await startTestApp({
      engine,
      clock: () => now,
      audiences: { delivery: { ...(await import('../src/audiences/service.js')).AUDIENCE_DEFAULTS.delivery, backoffBaseMs: 5, backoffMaxMs: 20, maxTries: 4 } },
    });
    await importRows(t, dataset());
  });
  afterAll(() => t.close());

  it('creates, lists, reads, changes and deletes an audience without echoing secrets', async () => {
    const created = await create({
      name: 'Signed up', criteria_json: ever('signup'), refresh_every: '15m',
      destinations: [{ type: 'webhook', url: 'http://127.0.0.1:1/hook', secret: 'shh' }],
    });
    expect(created).toMatchObject({
      name: 'Signed up', status: 'pending', member_count: null, last_refreshed_at: null, is_time_windowed: false,
      refresh_every: '15m', last_error: null, criteria_json: ever('signup'), next_refresh_at: START.toISOString(),
    });
    expect(created.destinations).toEqual([{ id: expect.stringMatching(/^dst_/), type: 'webhook', url: 'http://127.0.0.1:1/hook' }]);
    expect(JSON.stringify(created)).not.toContain('shh');

    const list = await send('GET', '/v1/audiences');
    expect(list.json().data.map((a: { id: string }) => a.id)).toContain(created.id);
    expect((await send('GET', `/v1/audiences/${created.id}`)).json()).toEqual(created);

    const patched = await send('PATCH', `/v1/audiences/${created.id}`, { name: 'Renamed', refresh_every: '1d', criteria_json: JSON.stringify(lastDays('signup', 30)) });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ name: 'Renamed', refresh_every: '1d', is_time_windowed: true, criteria_json: lastDays('signup', 30) });
    expect(JSON.stringify(patched.json())).not.toContain('shh');

    expect((await send('DELETE', `/v1/audiences/${created.id}`)).json()).toEqual({ id: created.id, deleted: true });
    expect((await send('GET', `/v1/audiences/${created.id}`)).statusCode).toBe(404);
  });

  it('answers invalid criteria with 400 invalid_criteria, the first error at the top level, and saves nothing', async () => {
    const before = (await send('GET', '/v1/audiences')).json().data.length;
    const bad = { version: 1, root: { op: 'not', child: ever('signup').root } };
    const res = await t.post('/v1/audiences', { name: 'x', criteria_json: bad });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      error: 'invalid_criteria', code: 'unanchored_negation', path: '/root', message: expect.any(String),
      errors: [{ code: 'unanchored_negation', path: '/root', message: expect.any(String) }],
    });
    expect((await send('GET', '/v1/audiences')).json().data.length).toBe(before);

    const kept = await create({ name: 'kept', criteria_json: ever('signup') });
    const patch = await send('PATCH', `/v1/audiences/${kept.id}`, { criteria_json: { version: 2, root: ever('signup').root } });
    expect(patch.statusCode).toBe(400);
    expect(patch.json()).toMatchObject({ error: 'invalid_criteria', code: 'version_unsupported', path: '/version' });
    expect((await send('GET', `/v1/audiences/${kept.id}`)).json().criteria_json).toEqual(ever('signup'));
    await send('DELETE', `/v1/audiences/${kept.id}`);
  });

  it('answers bad input on every route with 4xx JSON naming the field, never a 500', async () => {
    const cases: [number, string, Awaited<ReturnType<typeof send>>][] = [
      [400, 'refresh_every', await t.post('/v1/audiences', { name: 'x', criteria_json: ever('signup'), refresh_every: '1m' })],
      [400, 'refresh_every', await t.post('/v1/audiences', { name: 'x', criteria_json: ever('signup'), refresh_every: '2x' })],
      [400, 'name', await t.post('/v1/audiences', { criteria_json: ever('signup') })],
      [400, 'criteria_json', await t.post('/v1/audiences', { name: 'x' })],
      [400, 'destinations', await t.post('/v1/audiences', { name: 'x', criteria_json: ever('signup'), destinations: [{ type: 'webhook', url: 'ftp://x' }] })],
      [400, 'destinations', await t.post('/v1/audiences', { name: 'x', criteria_json: ever('signup'), destinations: [{ type: 'carrier_pigeon' }] })],
      [400, 'invalid_json', await t.post('/v1/audiences', '{"name":')],
      [400, 'body', await t.post('/v1/audiences', [1, 2])],
      [403, 'forbidden', await send('GET', '/v1/audiences', undefined, t.ws.publishable_key)],
      [404, 'not_found', await send('GET', '/v1/audiences/aud_nope')],
      [404, 'not_found', await send('PATCH', '/v1/audiences/aud_nope', { name: 'y' })],
      [404, 'not_found', await send('DELETE', '/v1/audiences/aud_nope')],
      [404, 'not_found', await send('POST', '/v1/audiences/aud_nope/refresh')],
      [404, 'not_found', await send('GET', '/v1/audiences/aud_nope/members')],
      [404, 'not_found', await send('GET', '/v1/audiences/aud_nope/deliveries')],
    ];
    const a = await create({ name: 'inputs', criteria_json: ever('signup') });
    cases.push(
      [400, 'refresh_every', await send('PATCH', `/v1/audiences/${a.id}`, { refresh_every: '0h' })],
      [400, 'name', await send('PATCH', `/v1/audiences/${a.id}`, { name: '' })],
      [400, 'limit', await send('GET', `/v1/audiences/${a.id}/members?limit=0`)],
      [400, 'format', await send('GET', `/v1/audiences/${a.id}/members?format=xml`)],
      [400, 'cursor', await send('GET', `/v1/audiences/${a.id}/members?cursor=garbage`)],
      [400, 'limit', await send('GET', `/v1/audiences/${a.id}/deliveries?limit=abc`)],
    );
    for (const [status, named, res] of cases) {
      expect(res.statusCode, res.body).toBe(status);
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.body).toContain(named);
    }
    await send('DELETE', `/v1/audiences/${a.id}`);
  });

  it('writes a snapshot and its diff on refresh, and pages through the members', async () => {
    const a = await create({ name: 'signups', criteria_json: ever('signup') });
    const res = await send('POST', `/v1/audiences/${a.id}/refresh`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ready', member_count: 6, last_refreshed_at: START.toISOString() });
    expect(res.json().next_refresh_at).toBe(new Date(START.getTime() + 3_600_000).toISOString());

    const members = await allMembers(a.id);
    expect(members).toHaveLength(6);
    expect(members).toContainEqual({ person_id: 'a0', visitor_id: null, external_id: 'u_a0', email: 'a0@example.com' });
    expect(members).toContainEqual({ person_id: null, visitor_id: 'anon1', external_id: null, email: null });

    expect(await diffOf(a.id)).toEqual([['added', 6]]);

    // An unchanged second refresh: an empty diff, the same members.
    const again = await send('POST', `/v1/audiences/${a.id}/refresh`);
    expect(again.json()).toMatchObject({ status: 'ready', member_count: 6 });
    const snapshots = await t.stores.control.all('SELECT added_count, removed_count FROM audience_snapshots WHERE audience_id = $1 ORDER BY snapshot_id', [a.id]);
    expect(snapshots.map((s) => [Number(s.added_count), Number(s.removed_count)])).toEqual([[6, 0], [0, 0]]);
    await send('DELETE', `/v1/audiences/${a.id}`);
  });

  it('is pending and due at once after a PATCH that changes its criteria, ready with the new count after the refresh', async () => {
    const a = await create({ name: 'to change', criteria_json: ever('signup') });
    expect((await send('POST', `/v1/audiences/${a.id}/refresh`)).json()).toMatchObject({ status: 'ready', member_count: 6 });
    const renamed = await send('PATCH', `/v1/audiences/${a.id}`, { name: 'same criteria', criteria_json: ever('signup') });
    expect(renamed.json()).toMatchObject({ status: 'ready', member_count: 6 });

    const patched = await send('PATCH', `/v1/audiences/${a.id}`, { criteria_json: ever('visit') });
    expect(patched.json()).toMatchObject({ status: 'pending', next_refresh_at: now.toISOString() });
    expect((await send('GET', `/v1/audiences/${a.id}`)).json()).toMatchObject({ status: 'pending' });
    expect((await send('POST', `/v1/audiences/${a.id}/refresh`)).json()).toMatchObject({ status: 'ready', member_count: 2 });
    await send('DELETE', `/v1/audiences/${a.id}`);
  });

  it('rolls a last_n_days window with the clock and delivers the removal, retried past two 503s', async () => {
    const hook = await receiver(2);
    try {
      now = START;
      const a = await create({
        name: 'visited this week', criteria_json: lastDays('visit', 7), refresh_every: '1d',
        destinations: [{ type: 'webhook', url: hook.url, secret: SECRET }],
      });
      await t.app.audiences.scheduler.tick(now);
      await t.app.audiences.deliverer.idle();
      expect(hook.requests).toBe(3);
      expect(hook.accepted).toHaveLength(1);
      expect(hook.accepted[0]!.body.added.map((m) => m.person_id).sort()).toEqual(['w0', 'w1']);
      const log = (await send('GET', `/v1/audiences/${a.id}/deliveries`)).json().data;
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ status: 'delivered', pages_delivered: 1 });
      expect(log[0].attempts.map((x: { http_status: number; ok: boolean }) => [x.http_status, x.ok])).toEqual([[503, false], [503, false], [200, true]]);

      // Not due yet: nothing happens.
      now = new Date(START.getTime() + 3_600_000);
      await t.app.audiences.scheduler.tick(now);
      await t.app.audiences.deliverer.idle();
      expect(hook.accepted).toHaveLength(1);

      // w0's only visit (06-10) is now eight days old.
      now = day('2026-06-18');
      await t.app.audiences.scheduler.tick(now);
      await t.app.audiences.deliverer.idle();
      const audience = (await send('GET', `/v1/audiences/${a.id}`)).json();
      expect(audience).toMatchObject({ status: 'ready', member_count: 1, last_refreshed_at: now.toISOString() });
      expect(await allMembers(a.id)).toEqual([{ person_id: 'w1', visitor_id: null, external_id: 'u_w1', email: null }]);
      expect(hook.accepted).toHaveLength(2);
      expect(hook.accepted[1]!.body).toMatchObject({ audience_id: a.id, added: [], removed: [{ person_id: 'w0' }] });
      await send('DELETE', `/v1/audiences/${a.id}`);
    } finally {
      now = START;
      hook.server.close();
    }
  });

  it('exports parquet, Arrow and CSV equal to the JSON members', async () => {
    const a = await create({ name: 'export', criteria_json: ever('signup') });
    await send('POST', `/v1/audiences/${a.id}/refresh`);
    const json = await allMembers(a.id, 1000);
    const dir = await mkdtemp(join(tmpdir(), 'export-test-'));
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      const parquet = await send('GET', `/v1/audiences/${a.id}/members?format=parquet`);
      expect(parquet.statusCode).toBe(200);
      await writeFile(join(dir, 'm.parquet'), parquet.rawPayload);
      const csv = await send('GET', `/v1/audiences/${a.id}/members?format=csv`);
      expect(csv.headers['content-type']).toMatch(/text\/csv/);
      await writeFile(join(dir, 'm.csv'), csv.rawPayload);
      for (const read of [`read_parquet('${join(dir, 'm.parquet')}')`, `read_csv('${join(dir, 'm.csv')}', all_varchar = true)`]) {
        const rows = (await conn.runAndReadAll(`SELECT person_id, visitor_id, external_id, email FROM ${read}`)).getRowObjectsJS();
        expect(rows).toEqual(json);
      }

      const arrow = await send('GET', `/v1/audiences/${a.id}/members?format=arrow`);
      expect(arrow.headers['content-type']).toBe('application/vnd.apache.arrow.stream');
      const table = tableFromIPC(arrow.rawPayload);
      expect(table.toArray().map((r) => ({ ...r.toJSON() }))).toEqual(json);
    } finally {
      conn.closeSync();
      db.closeSync();
      await rm(dir, { recursive: true, force: true });
      await send('DELETE', `/v1/audiences/${a.id}`);
    }
  });

  it('exports an audience that has no snapshot yet as an empty Arrow stream', async () => {
    const a = await create({ name: 'empty', criteria_json: ever('signup') });
    const arrow = await send('GET', `/v1/audiences/${a.id}/members?format=arrow`);
    expect(tableFromIPC(arrow.rawPayload).numRows).toBe(0);
    await send('DELETE', `/v1/audiences/${a.id}`);
  });

  it('marks a failed refresh failed with the reason, keeps the previous snapshot, and retries on the next tick', async () => {
    now = START;
    const a = await create({ name: 'fragile', criteria_json: ever('signup') });
    await t.app.audiences.scheduler.tick(now);
    await t.app.audiences.deliverer.idle();
    expect((await send('GET', `/v1/audiences/${a.id}`)).json()).toMatchObject({ status: 'ready', member_count: 6 });

    await renameEvents('events', 'events_away');
    try {
      const failed = await send('POST', `/v1/audiences/${a.id}/refresh`);
      expect(failed.statusCode).toBe(200);
      expect(failed.json()).toMatchObject({ status: 'failed', member_count: 6, last_error: expect.stringMatching(/events/) });
      expect(await allMembers(a.id, 1000)).toHaveLength(6);
    } finally {
      await renameEvents('events_away', 'events');
    }
    now = new Date(START.getTime() + 60_000);
    await t.app.audiences.scheduler.tick(now);
    await t.app.audiences.deliverer.idle();
    expect((await send('GET', `/v1/audiences/${a.id}`)).json()).toMatchObject({ status: 'ready', member_count: 6, last_error: null });
    await send('DELETE', `/v1/audiences/${a.id}`);
    now = START;
  });

  it("keeps audiences, snapshots, members and deliveries of one workspace out of another's", async () => {
    const hook = await receiver(0);
    const other = await t.workspaces.create('other');
    await importRows(t, {
      persons: [{ person_id: 'b0', external_id: 'u_b0', email: 'b0@example.com', name: null, traits: null, created_at: day('2026-01-01') }],
      events: [{ event_id: 'e_b0', event_name: 'signup', ts: day('2026-06-01'), person_id: 'b0', visitor_id: null, properties: '{}' }],
    }, other.workspace_id);
    const body = { criteria_json: ever('signup'), destinations: [{ type: 'webhook', url: hook.url, secret: SECRET }] };
    const a = await create({ name: 'mine', ...body });
    const created = await t.post('/v1/audiences', { name: 'theirs', ...body }, other.secret_key);
    expect(created.statusCode, created.body).toBe(201);
    const b = created.json() as { id: string };
    try {
      expect((await send('POST', `/v1/audiences/${a.id}/refresh`)).json()).toMatchObject({ status: 'ready', member_count: 6 });
      expect((await send('POST', `/v1/audiences/${b.id}/refresh`, undefined, other.secret_key)).json()).toMatchObject({ status: 'ready', member_count: 1 });
      await t.app.audiences.deliverer.idle();
      expect(hook.accepted).toHaveLength(2);

      // Every row of the audience tables carries the workspace of its audience (joined without it).
      const ch = clickhouseOf(t);
      const tables: Record<string, string> = {
        audience_snapshots: 'audience_snapshots x JOIN audiences a ON a.audience_id = x.audience_id',
        audience_deliveries: 'audience_deliveries x JOIN audiences a ON a.audience_id = x.audience_id',
        audience_destinations: 'audience_destinations x JOIN audiences a ON a.audience_id = x.audience_id',
        audience_delivery_attempts: 'audience_delivery_attempts x JOIN audience_deliveries d ON d.delivery_id = x.delivery_id JOIN audiences a ON a.audience_id = d.audience_id',
        // Members and diffs live beside the control tables on DuckDB only (in ClickHouse otherwise: below).
        ...(ch ? {} : {
          audience_members: 'audience_members x JOIN audience_snapshots s ON s.snapshot_id = x.snapshot_id JOIN audiences a ON a.audience_id = s.audience_id',
          audience_diffs: 'audience_diffs x JOIN audiences a ON a.audience_id = x.audience_id',
        }),
      };
      for (const [table, from] of Object.entries(tables)) {
        const [row] = await t.stores.control.all(`SELECT count(*) AS n, count(DISTINCT a.workspace_id) AS workspaces,
            count(*) FILTER (WHERE x.workspace_id IS DISTINCT FROM a.workspace_id) AS wrong
          FROM ${from} WHERE a.audience_id IN ($1, $2)`, [a.id, b.id]);
        expect({ table, n: Number(row!.n) > 0, workspaces: Number(row!.workspaces), wrong: Number(row!.wrong) })
          .toEqual({ table, n: true, workspaces: 2, wrong: 0 });
      }
      if (ch) {
        const snapshots = await t.stores.control.all('SELECT workspace_id, audience_id, snapshot_id FROM audiences WHERE audience_id IN ($1, $2)', [a.id, b.id]);
        for (const table of ['audience_members', 'audience_diffs']) {
          for (const s of snapshots) {
            const rows = await (await ch.client.query({
              query: `SELECT DISTINCT workspace_id FROM ${ch.database}.${table} WHERE snapshot_id = {s:UInt64}`,
              query_params: { s: Number(s.snapshot_id) }, format: 'JSONEachRow',
            })).json<{ workspace_id: string }>();
            expect({ table, rows }).toEqual({ table, rows: [{ workspace_id: s.workspace_id }] });
          }
        }
      }

      // Workspace B's key cannot see A's audience, its members or its deliveries.
      for (const path of ['', '/members', '/members?format=csv', '/deliveries']) {
        const res = await send('GET', `/v1/audiences/${a.id}${path}`, undefined, other.secret_key);
        expect(res.statusCode, `${path}: ${res.body}`).toBe(404);
      }
      const theirs = await send('GET', `/v1/audiences/${b.id}/members`, undefined, other.secret_key);
      expect(theirs.json().data).toEqual([{ person_id: 'b0', visitor_id: null, external_id: 'u_b0', email: 'b0@example.com' }]);
    } finally {
      hook.server.close();
      await send('DELETE', `/v1/audiences/${a.id}`);
      await send('DELETE', `/v1/audiences/${b.id}`, undefined, other.secret_key);
    }
  });
});
