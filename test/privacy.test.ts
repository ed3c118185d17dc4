// Privacy requests (decisions §12) on every engine layout: a delete leaves no row holding the
// person's identifiers anywhere, estimates stop counting it, revenue totals stay; suppression
// stores nothing of the identifiers; retention erases old rows; a request left running resumes.

import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE_DEFAULTS } from '../src/audiences/service.js';
import { startTestApp, type TestApp } from './support/app.js';
import { startReceiver } from './support/receiver.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { tablesHolding } from './support/scan.js';
import { ATTRIBUTION_MODELS } from '../src/criteria/attribution.js';
import { submitRequest } from '../src/privacy/requests.js';
import { MAX_ATTEMPTS } from '../src/privacy/worker.js';
import { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import { checkoutSession, deliver, invoice, notification, nowS, refund } from './support/stripe.js';

let t: TestApp;
const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: { op: '>=', value: 1 }, window: { kind: 'ever' } } } };
const count = async () => (await t.compile(signedUp)).json().estimated_count.count as number;
const revenue = async () => (await t.post('/v1/reports/revenue', { from: '2020-01-01', to: '2030-01-01', interval: 'month', group_by: 'channel_category' })).json().totals;

async function request(type: string, identifiers: Record<string, string>[]) {
  const res = await t.post('/v1/privacy/requests', { type, identifiers });
  expect(res.statusCode).toBe(202);
  await t.app.privacy.worker.idle();
  return (await get(`/v1/privacy/requests/${res.json().id}`)).json();
}

/** Meta's custom audience users edge as a loopback double: what it was sent (the delivery tests check its request shapes). */
const meta: { method: string; url: string; body: { payload: { data: string[] } } }[] = [];
const metaServer = createServer((req, res) => {
  let raw = '';
  req.on('data', (c: Buffer) => { raw += c.toString('utf8'); });
  req.on('end', () => {
    meta.push({ method: req.method!, url: req.url!, body: raw ? JSON.parse(raw) : null });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ audience_id: '42', num_received: 1, num_invalid_entries: 0 }));
  });
});
await new Promise<void>((resolve) => metaServer.listen(0, '127.0.0.1', resolve));
const metaBaseUrl = `http://127.0.0.1:${(metaServer.address() as AddressInfo).port}/meta`;

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => { t = await startTestApp({ engine, budgetMs: 120_000, audiences: { delivery: { ...AUDIENCE_DEFAULTS.delivery, metaBaseUrl, backoffBaseMs: 5 } } }); });
  afterAll(async () => { await t.close(); });

  it('an audience drops a deleted member at its next refresh and its destinations receive the removal', async () => {
    await t.freshWorkspace();
    const receiver = await startReceiver();
    meta.length = 0;
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: 'fay-ext', email: 'fay@example.com', visitor_id: 'v-fay' },
      { event_name: 'signup', user_id: 'gus-ext', email: 'gus@example.com' },
    ] });
    const audience = await t.post('/v1/audiences', {
      name: 'signed up', criteria_json: signedUp,
      destinations: [{ type: 'webhook', url: receiver.url, secret: 'whsec_test_0123456789' }, { type: 'meta_custom_audience', audience_id: '42', access_token: 'tok' }],
    });
    expect(audience.statusCode, audience.body).toBe(201);
    const deliver = async () => {
      await t.app.audiences.scheduler.tick(new Date());
      await t.app.audiences.deliverer.idle();
    };
    await deliver();
    expect(receiver.members()).toHaveLength(2);

    expect(await request('delete', [{ email: 'fay@example.com' }])).toMatchObject({ status: 'done', counts: { persons: 1 } });
    await deliver();
    const removed = receiver.accepted.flatMap((p) => p.removed);
    expect(removed).toEqual([expect.objectContaining({ external_id: 'fay-ext', email: 'fay@example.com' })]);
    expect(receiver.members()).toHaveLength(1);
    const hash = createHash('sha256').update('fay@example.com').digest('hex');
    expect(meta.filter((r) => r.method === 'DELETE').map((r) => r.body.payload.data)).toEqual([[hash]]);
    // Once delivered, the departure goes too: nothing of the person is left.
    await t.app.privacy.worker.tick();
    expect(await tablesHolding(t, ['fay-ext', 'fay@example.com', 'v-fay'])).toEqual([]);
    receiver.close();
  });

  it('a delete leaves no row holding the person\'s identifiers, and revenue totals unchanged', async () => {
    await t.freshWorkspace();
    await t.post('/v1/pageviews', { visitor_id: 'v-ada-1', url: 'https://shop.example/?ref=ada', referrer: 'https://chatgpt.com/' });
    await t.post('/v1/pageviews', { visitor_id: 'v-ada-2', url: 'https://shop.example/pricing' });
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: 'ada-ext-77', visitor_id: 'v-ada-1', email: 'ada.l@example.com', traits: { ada_only_trait: 'x', plan: 'pro' } },
      { event_name: 'login', user_id: 'ada-ext-77', visitor_id: 'v-ada-2' },
      { event_name: 'signup', user_id: 'bob-ext-5', traits: { plan: 'free' } },
    ] });
    await t.post('/v1/persons', { external_id: 'ada-ext-77', name: 'Ada Lovelace-Byron' });
    const T = nowS();
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_ada', { tr_user_id: 'ada-ext-77', tr_visitor_id: 'v-ada-1' }, 'ada.l@example.com'), T));
    await deliver(t, notification('invoice.paid', invoice('cus_ada'), T));
    const before = await revenue();
    expect(before.revenue).not.toEqual({});
    expect(await count()).toBe(2);
    const needles = ['ada-ext-77', 'ada.l@example.com', 'v-ada-1', 'v-ada-2', 'Lovelace-Byron', 'ref=ada', 'ada_only_trait'];
    expect((await tablesHolding(t, needles)).length).toBeGreaterThan(0);

    const done = await request('delete', [{ external_id: 'ada-ext-77' }]);
    expect(done).toMatchObject({ status: 'done', counts: { persons: 1, visitors: 2, events: 2, pageviews: 2, customers: 1 } });
    expect(done.identifiers).toEqual([{ kind: 'external_id', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect(await tablesHolding(t, needles)).toEqual([]);
    expect(await count()).toBe(1);
    expect(await revenue()).toEqual(before);
    expect((await get('/v1/definitions')).json().traits).toEqual(['plan']);
    expect((await get('/people?q=ada')).json().data).toEqual([expect.objectContaining({ person_id: null, email: null, customer_ids: ['cus_ada'] })]);
    // The identifiers are new people from then on, unless suppressed.
    const again = await t.post('/v1/events', { event_name: 'signup', user_id: 'ada-ext-77' });
    expect(again.json().person_id).not.toBeNull();
    expect(await count()).toBe(2);
  });

  it('a revenue report by channel is the same before and after deleting a payer, for every model', async () => {
    await t.freshWorkspace();
    const S = nowS() - 30 * 86_400;
    const at = (day: number) => new Date((S + day * 86_400) * 1000).toISOString();
    const views: [string, number, string | null, string][] = [
      ['v-ann-a', 1, 'https://www.google.com/', '?ref=ann'], ['v-ann-a', 8, 'https://chatgpt.com/', '?utm_campaign=spring&ref=ann'],
      ['v-ann-b', 12, null, ''], ['v-ann-a', 16, null, '?utm_campaign=late&ref=ann'], ['v-ann-b', 29, 'https://chatgpt.com/', ''],
      ['v-bo', 5, 'https://www.google.com/', '?utm_campaign=spring'], ['v-bo', 14, null, ''],
    ];
    for (const [visitor, day, referrer, query] of views) {
      const res = await t.post('/v1/pageviews', { visitor_id: visitor, url: `https://shop.example/${query}`, timestamp: at(day), ...(referrer ? { referrer } : {}) });
      expect(res.statusCode, res.body).toBe(200);
    }
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: 'ann-ext', visitor_id: 'v-ann-a', email: 'ann@example.com' },
      { event_name: 'login', user_id: 'ann-ext', visitor_id: 'v-ann-b' },
    ] });
    const day = (d: number) => S + d * 86_400;
    // Ann pays through two customers (the first touch counts up to her first payment over both), with a refund.
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_ann1', { tr_user_id: 'ann-ext' }, null, { created: day(0) }), day(0)));
    await deliver(t, notification('invoice.paid', invoice('cus_ann1', { amount: 5000, paid_at: day(10), created: day(10) }), day(10)));
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_ann2', { tr_visitor_id: 'v-ann-b' }, null,
      { mode: 'payment', amount: 3100, created: day(18) }), day(18)));
    await deliver(t, notification('refund.created', refund('ch_ann', null, { amount: 700, created: day(20), customer: 'cus_ann1' }), day(20)));
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_bo', { tr_visitor_id: 'v-bo' }, null, { created: day(0) }), day(0)));
    await deliver(t, notification('invoice.paid', invoice('cus_bo', { amount: 2000, paid_at: day(15), created: day(15) }), day(15)));

    const reports = async () => {
      const answers: unknown[] = [];
      // Every model by channel (each report costs seconds on a loaded chDB).
      for (const model of ATTRIBUTION_MODELS) {
        const res = await t.post('/v1/reports/revenue', { from: at(-1).slice(0, 10), to: at(31).slice(0, 10), interval: 'week', group_by: 'channel_category', model,
          ...(model === 'first_touch' ? {} : { lookback_days: 30 }), ...(model === 'time_decay' ? { half_life_days: 3 } : {}) });
        expect(res.statusCode, res.body).toBe(200);
        answers.push(res.json());
      }
      return answers;
    };
    const before = await reports();
    const groups = JSON.stringify(before);
    expect(groups).toContain('"group":"AI"');
    expect(await request('delete', [{ email: 'ann@example.com' }])).toMatchObject({ status: 'done', counts: { persons: 1, customers: 2 } });
    expect(await tablesHolding(t, ['ann-ext', 'ann@example.com', 'v-ann-a', 'v-ann-b', 'ref=ann'])).toEqual([]);
    expect(await reports()).toEqual(before);
  });

  it('suppressed identifiers are stored nowhere on any ingest path, and unsuppress lifts it', async () => {
    await t.freshWorkspace();
    expect(await request('suppress', [{ email: ' Cy@Example.com ' }, { visitor_id: 'v-cy' }, { external_id: 'cy-ext' }])).toMatchObject({ status: 'done' });
    const events = await t.post('/v1/events', { batch: [
      { event_name: 'signup', email: 'cy@example.com' },
      { event_name: 'signup', user_id: 'cy-ext' },
      { event_name: 'signup', visitor_id: 'v-cy' },
      { event_name: 'signup', user_id: 'dee' },
    ] });
    expect(events.json()).toMatchObject({ accepted: 1, suppressed: 3 });
    expect((await t.post('/v1/persons', { external_id: 'cy-ext', traits: { a: 1 } })).json()).toEqual({ person_id: null, suppressed: true });
    expect((await t.post('/v1/pageviews', { visitor_id: 'v-cy', url: 'https://shop.example/' })).json()).toEqual({ accepted: 0, suppressed: 1 });
    const T = nowS();
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_cy', { tr_user_id: 'cy-ext', tr_visitor_id: 'v-cy' }, 'cy@example.com'), T));
    expect(await tablesHolding(t, ['cy-ext', 'cy@example.com', 'v-cy'])).toEqual([]);
    expect(await count()).toBe(1);

    expect(await request('unsuppress', [{ email: 'cy@example.com' }])).toMatchObject({ status: 'done' });
    expect((await t.post('/v1/events', { event_name: 'signup', email: 'cy@example.com' })).json().person_id).not.toBeNull();
  });

  it('a request left running by a stopped process is done by the next pass', async () => {
    await t.freshWorkspace();
    await t.post('/v1/events', { event_name: 'signup', user_id: 'eve-ext', visitor_id: 'v-eve' });
    // As a process killed after it resolved the identifiers and erased the control rows leaves it.
    const row = await t.post('/v1/privacy/requests', { type: 'delete', identifiers: [{ visitor_id: 'v-eve' }] });
    await t.app.privacy.worker.idle();
    const id = row.json().id as string;
    await t.stores.control.run("UPDATE privacy_requests SET status = 'running', finished_at = NULL WHERE request_id = $1", [id]);
    await t.app.privacy.worker.tick();
    expect((await get(`/v1/privacy/requests/${id}`)).json()).toMatchObject({ status: 'done' });
    expect(await tablesHolding(t, ['eve-ext', 'v-eve'])).toEqual([]);
  });

  it('requests done in one pass each count their own rows', async () => {
    await t.freshWorkspace();
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: 'hal', visitor_id: 'v-hal' }, { event_name: 'login', user_id: 'hal' }, { event_name: 'signup', user_id: 'ivy' },
    ] });
    await t.post('/v1/pageviews', { visitor_id: 'v-hal', url: 'https://shop.example/' });
    // Both wait before the worker looks: one pass takes them together.
    const ids = [];
    for (const external_id of ['hal', 'ivy']) {
      ids.push((await submitRequest(t.stores.control, t.ws.workspace_id, { type: 'delete', identifiers: [{ external_id }] }, new Date())).request_id);
    }
    await t.app.privacy.worker.tick();
    const [hal, ivy] = await Promise.all(ids.map(async (id) => (await get(`/v1/privacy/requests/${id}`)).json()));
    expect(hal).toMatchObject({ status: 'done', counts: { persons: 1, visitors: 1, events: 2, pageviews: 1, customers: 0 } });
    expect(ivy).toMatchObject({ status: 'done', counts: { persons: 1, visitors: 0, events: 1, pageviews: 0, customers: 0 } });
  });

  it('a request whose passes keep failing ends failed with the error, and one stopped too often ends failed', async () => {
    await t.freshWorkspace();
    await t.post('/v1/events', { event_name: 'signup', user_id: 'jo', visitor_id: 'v-jo' });
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_jo', { tr_user_id: 'jo' }), nowS()));
    const submit = async () => (await submitRequest(t.stores.control, t.ws.workspace_id, { type: 'delete', identifiers: [{ external_id: 'jo' }] }, new Date())).request_id;
    // A real fault: the table the delete freezes the payer's attribution into is missing.
    const clickhouse = t.stores.analytics instanceof ClickHouseAnalytics ? t.stores.analytics.ctx : null;
    const rename = (from: string, to: string) => (clickhouse
      ? clickhouse.client.command({ query: `RENAME TABLE \`${clickhouse.database}\`.${from} TO \`${clickhouse.database}\`.${to}` })
      : t.stores.control.run(`ALTER TABLE ${from} RENAME TO ${to}`));
    const failing = await submit();
    await rename('frozen_touches', 'frozen_touches_away');
    try {
      for (let pass = 1; pass <= MAX_ATTEMPTS; pass++) {
        expect((await get(`/v1/privacy/requests/${failing}`)).json().status).toBe(pass === 1 ? 'pending' : 'running');
        await t.app.privacy.worker.tick();
      }
    } finally {
      await rename('frozen_touches_away', 'frozen_touches');
    }
    expect((await get(`/v1/privacy/requests/${failing}`)).json()).toMatchObject({ status: 'failed', error: expect.stringContaining('frozen_touches') });

    const stopped = await submit();
    await t.stores.control.run("UPDATE privacy_requests SET status = 'running', attempts = $2 WHERE request_id = $1", [stopped, MAX_ATTEMPTS]);
    await t.app.privacy.worker.tick();
    expect((await get(`/v1/privacy/requests/${stopped}`)).json()).toMatchObject({ status: 'failed', error: expect.stringContaining('stopped') });
    // The failed requests are no longer worked on; a new one is.
    const again = await submit();
    await t.app.privacy.worker.tick();
    expect((await get(`/v1/privacy/requests/${again}`)).json()).toMatchObject({ status: 'done', counts: { persons: 1, customers: 1 } });
  });

  it('retention erases the events and page views older than the workspace keeps', async () => {
    await t.freshWorkspace();
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await t.post('/v1/events', { batch: [{ event_name: 'signup', user_id: 'old', timestamp: old }, { event_name: 'signup', user_id: 'new' }] });
    await t.post('/v1/pageviews', { visitor_id: 'v-old', url: 'https://shop.example/', timestamp: old });
    expect(await count()).toBe(2);
    const patched = await t.app.inject({
      method: 'PATCH', url: '/v1/workspace', headers: { authorization: `Bearer ${t.ws.secret_key}` }, payload: { retention_days: 30 },
    });
    expect(patched.json()).toMatchObject({ retention_days: 30 });
    const erased = await t.app.privacy.retention.run();
    expect(erased.get(t.ws.workspace_id)).toEqual({ events: 1, pageviews: 1 });
    expect(await count()).toBe(1);
  });

  it('refuses malformed requests naming the field', async () => {
    await t.freshWorkspace();
    const bad = await t.post('/v1/privacy/requests', { type: 'delete', identifiers: [{ email: 'a@b.c', external_id: 'x' }] });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('identifiers/0');
    expect((await t.post('/v1/privacy/requests', { type: 'forget', identifiers: [{ email: 'a@b.c' }] })).statusCode).toBe(400);
    expect((await t.post('/v1/privacy/requests', { type: 'delete', identifiers: [] })).statusCode).toBe(400);
    expect((await get('/v1/privacy/requests/prv_nope')).statusCode).toBe(404);
    await request('suppress', [{ email: 'a@b.c' }]);
    await request('unsuppress', [{ email: 'a@b.c' }]);
    const first = (await get('/v1/privacy/requests?limit=1')).json();
    expect(first.data).toEqual([expect.objectContaining({ type: 'unsuppress', status: 'done' })]);
    const second = (await get(`/v1/privacy/requests?limit=1&cursor=${first.next_cursor}`)).json();
    expect(second).toEqual({ data: [expect.objectContaining({ type: 'suppress' })], next_cursor: null });
  });
});
