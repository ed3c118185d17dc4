// Privacy passes under load (decisions §12): deletes while ingest writes the same workspace's
// persons, events and page views all reach `done` and leave nothing of the deleted persons; a
// workspace's waiting requests are taken in bounded batches, all of them done.

import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { tablesHolding } from './support/scan.js';
import { submitRequest } from '../src/privacy/requests.js';
import { PrivacyWorker } from '../src/privacy/worker.js';
import { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import { unfinishedRequests } from '../src/store/control/privacy.js';
import type { ControlSql } from '../src/store/control/store.js';
import { controlSql } from '../src/store/duckdb/control.js';

let t: TestApp;
/** The app's log lines at warn and above. */
const logged: Record<string, unknown>[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line) logged.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});
const pro = { version: 1, root: { source: 'person', filter: { 'traits.plan': { op: '=', value: 'pro' } } } };
const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => { t = await startTestApp({ engine, budgetMs: 60_000, logger: { level: 'warn', stream: logStream } }); });
  afterAll(async () => { await t.close(); });

  it('deletes under concurrent ingest of the same workspace all reach done and leave nothing of the deleted persons', async () => {
    const ws = await t.freshWorkspace();
    const doomed = Array.from({ length: 6 }, (_, i) => `gone-${ws.workspace_id.slice(-6)}-${i}`);
    const kept = Array.from({ length: 6 }, (_, i) => `kept-${i}`);
    for (const id of [...doomed, ...kept]) {
      expect((await t.post('/v1/events', { batch: [
        { event_name: 'signup', user_id: id, visitor_id: `v-${id}`, email: `${id}@example.com`, traits: { plan: 'pro', [`only_${id}`.replaceAll('-', '_')]: 1 } },
        { event_name: 'login', user_id: id, properties: { n: 1 } },
      ] })).statusCode).toBe(200);
      await t.post('/v1/pageviews', { visitor_id: `v-${id}`, url: `https://shop.example/?ref=${id}` });
    }
    // Ingest keeps writing the kept persons' traits, events and page views, and new persons', until every delete is done.
    let ingesting = true;
    let round = 0;
    const ingest = async () => {
      while (ingesting) {
        const id = kept[round % kept.length]!;
        const n = round++;
        const answers = await Promise.all([
          t.post('/v1/events', { batch: [
            { event_name: 'login', user_id: id, traits: { plan: n % 2 ? 'pro' : 'free', seen: n } },
            { event_name: 'signup', user_id: `new-${n}`, visitor_id: `v-new-${n}`, traits: { plan: 'free' } },
          ] }),
          t.post('/v1/pageviews', { visitor_id: `v-${id}`, url: `https://shop.example/p/${n}` }),
          t.post('/v1/persons', { external_id: id, traits: { seen: n } }),
        ]);
        for (const res of answers) expect(res.statusCode, res.body).toBe(200);
      }
    };
    // …and audiences are refreshed meanwhile: a refresh writes the audience rows a delete makes due.
    const audiences: string[] = [];
    for (const plan of ['pro', 'free']) {
      const created = await t.post('/v1/audiences', { name: plan, criteria_json: { ...pro, root: { ...pro.root, filter: { 'traits.plan': { op: '=', value: plan } } } } });
      expect(created.statusCode, created.body).toBe(201);
      audiences.push(created.json().id as string);
    }
    let refreshes = 0;
    const refresh = async () => {
      while (ingesting) {
        const res = await t.post(`/v1/audiences/${audiences[refreshes++ % audiences.length]!}/refresh`, {});
        expect([200, 409], res.body).toContain(res.statusCode);
      }
    };
    const writers = [ingest(), ingest(), refresh()];
    const ids: string[] = [];
    try {
      for (const pair of [doomed.slice(0, 2), doomed.slice(2, 4), doomed.slice(4)]) {
        const res = await t.post('/v1/privacy/requests', { type: 'delete', identifiers: pair.map((external_id) => ({ external_id })) });
        expect(res.statusCode).toBe(202);
        ids.push(res.json().id as string);
      }
      await t.app.privacy.worker.idle();
      // A pass that failed for good waits for the next tick, as in production.
      for (let tick = 0; tick < 5 && (await statuses(ids)).some((s) => s !== 'done' && s !== 'failed'); tick++) await t.app.privacy.worker.tick();
    } finally {
      ingesting = false;
      await Promise.all(writers);
    }
    const answers = await Promise.all(ids.map(async (id) => (await get(`/v1/privacy/requests/${id}`)).json()));
    expect(answers.map((a) => [a.status, a.error])).toEqual(ids.map(() => ['done', null]));
    expect(answers.reduce((n, a) => n + a.counts.persons, 0)).toBe(doomed.length);
    expect(round).toBeGreaterThan(0);
    expect(refreshes).toBeGreaterThan(0);
    // The public ids kept for the audiences' removals go once each has refreshed.
    for (const id of audiences) expect((await t.post(`/v1/audiences/${id}/refresh`, {})).statusCode).toBe(200);
    await t.app.privacy.worker.tick();
    expect(await tablesHolding(t, doomed)).toEqual([]);
    expect(await tablesHolding(t, kept.slice(0, 1))).not.toEqual([]);
  });

  it('a pass that fails is logged through the app\'s logger with its request ids and error', async () => {
    const ws = await t.freshWorkspace();
    await t.post('/v1/events', { event_name: 'signup', user_id: 'lin', visitor_id: 'v-lin' });
    const id = (await submitRequest(t.stores.control, ws.workspace_id, { type: 'delete', identifiers: [{ external_id: 'lin' }] }, new Date())).request_id;
    logged.length = 0;
    // A real fault, not one tried again at once: the page views table is missing.
    await renameTable('pageviews', 'pageviews_away');
    try {
      await t.app.privacy.worker.tick();
    } finally {
      await renameTable('pageviews_away', 'pageviews');
    }
    expect(logged).toEqual([expect.objectContaining({
      level: 50, msg: 'privacy pass failed', workspace_id: ws.workspace_id, request_ids: [id], retry: false,
      err: expect.objectContaining({ message: expect.stringContaining('pageviews') }),
    })]);
    expect((await get(`/v1/privacy/requests/${id}`)).json().status).toBe('running');
    await t.app.privacy.worker.tick();
    expect((await get(`/v1/privacy/requests/${id}`)).json()).toMatchObject({ status: 'done', counts: { persons: 1 } });
  });

  it('a pass that loses a write to a concurrent transaction (a refresh adopting its snapshot) is tried again at once and done', async () => {
    const ws = await t.freshWorkspace();
    await t.post('/v1/events', { event_name: 'signup', user_id: 'mo', traits: { plan: 'pro' } });
    const audience = (await t.post('/v1/audiences', { name: 'pro', criteria_json: pro })).json().id as string;
    expect((await t.post(`/v1/audiences/${audience}/refresh`, {})).statusCode).toBe(200);
    logged.length = 0;
    // As a refresh's transaction, on a connection of its own, holds the audience row the delete makes due.
    const adopt = async (sql: ControlSql) => {
      await sql.run('UPDATE audiences SET next_refresh_at = $3 WHERE workspace_id = $1 AND audience_id = $2', [ws.workspace_id, audience, new Date(Date.now() + 86_400_000)]);
      const kicked = t.post('/v1/privacy/requests', { type: 'delete', identifiers: [{ external_id: 'mo' }] });
      // DuckDB fails the delete's write at once (and it is tried again); PostgreSQL makes it wait for this commit.
      for (let waited = 0; waited < 40 && !logged.some((l) => l.retry === true); waited++) await sleep(25);
      return kicked;
    };
    const submitted = await (t.stores.duckdb ? t.stores.duckdb.transactionWithin(60_000, (conn) => adopt(controlSql(conn))) : t.stores.control.transaction(adopt));
    await t.app.privacy.worker.idle();
    const answer = (await get(`/v1/privacy/requests/${submitted.json().id as string}`)).json();
    expect(answer).toMatchObject({ status: 'done', counts: { persons: 1 } });
    const retried = logged.filter((l) => l.retry === true);
    if (t.stores.duckdb) {
      expect(retried).toEqual([expect.objectContaining({ level: 40, request_ids: [answer.id], err: expect.objectContaining({ message: expect.stringMatching(/conflict/i) }) })]);
    } else {
      expect(retried).toEqual([]);
    }
  });

  it('a workspace\'s many waiting requests are taken in bounded batches, every one done', async () => {
    const ws = await t.freshWorkspace();
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      const type = i % 3 === 0 ? 'suppress' : 'delete';
      ids.push((await submitRequest(t.stores.control, ws.workspace_id, { type, identifiers: [{ external_id: `many-${i}` }] }, new Date())).request_id);
    }
    expect((await unfinishedRequests(t.stores.control, ws.workspace_id, 5)).map((r) => r.request_id)).toEqual(ids.slice(0, 5));
    const worker = new PrivacyWorker(t.stores, { clock: () => new Date(), intervalMs: 60_000, batchRequests: 5 });
    await worker.tick();
    expect(await statuses(ids)).toEqual(ids.map(() => 'done'));
  });
});

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await get(`/v1/privacy/requests/${id}`)).json().status as string));
}

async function renameTable(from: string, to: string): Promise<void> {
  const analytics = t.stores.analytics;
  if (analytics instanceof ClickHouseAnalytics) {
    const { client, database } = analytics.ctx;
    await client.command({ query: `RENAME TABLE \`${database}\`.${from} TO \`${database}\`.${to}` });
  } else {
    await t.stores.control.run(`ALTER TABLE ${from} RENAME TO ${to}`);
  }
}
