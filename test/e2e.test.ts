// End to end through the API, on every store (the PostgreSQL control plane too): page views and events sent as an app and
// a browser would send them make a compile estimate come out right; with payment notifications and
// a relinked visitor, a saved audience refreshes, exports its members and delivers its diff.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES, type TestEngine } from './support/engines.js';
import { startReceiver } from './support/receiver.js';
import { controlRows } from './support/stored.js';
import { checkoutSession, deliver, invoice, notification } from './support/stripe.js';

const ever = { kind: 'ever' };
const did = (leaf: Record<string, unknown>) => ({ ...leaf, occurrence: { op: 'did', count: null, window: ever } });
const fromAi = did({ source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } } });
const signedUp = did({ source: 'product_event', name: 'signup' });
const churned = did({ source: 'product_event', name: 'churned' });

describe.each(ENGINES_WITH_POSTGRES)('%s: events and page views through the API feed the estimates', (engine: TestEngine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engine, at: new Date(Date.now() + 60_000) });
    const events = (batch: unknown[]) => t.post('/v1/events', { batch });
    // As the tracker sends them: a beacon's text/plain body, the publishable key in the query.
    for (const [visitor_id, url, referrer] of [
      ['va', 'https://shop.example/', 'https://chatgpt.com/'],
      ['vb', 'https://shop.example/?utm_source=perplexity', null],
      ['vc', 'https://shop.example/', 'https://www.google.com/'],
      ['vd', 'https://shop.example/pricing', 'https://perplexity.ai/search'],
      ['va', 'https://shop.example/pricing', 'https://shop.example/'],
    ]) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`,
        headers: { 'content-type': 'text/plain' }, payload: JSON.stringify({ visitor_id, url, referrer }) });
      expect(res.statusCode, res.body).toBe(200);
    }
    for (const res of [
      await events([{ event_name: 'signup', external_id: 'a', visitor_id: 'va' }, { event_name: 'signup', external_id: 'b', visitor_id: 'vb' }]),
      await events([{ event_name: 'signup', external_id: 'c', visitor_id: 'vc' }, { event_name: 'churned', external_id: 'b' }]),
    ]) expect(res.statusCode, res.body).toBe(200);
  });
  afterAll(() => t.close());

  const estimate = async (root: unknown) => {
    const res = await t.compile({ version: 1, root });
    expect(res.json().valid, res.body).toBe(true);
    return res.json().estimated_count.count as number;
  };

  it('counts visitors from AI assistants, anonymous ones included', async () => {
    expect(await estimate(fromAi)).toBe(3);
  });

  it('counts AI visitors who signed up, minus those who churned', async () => {
    expect(await estimate({ op: 'and', children: [fromAi, signedUp, { op: 'not', child: churned }] })).toBe(1);
    expect(await estimate({ op: 'and', children: [fromAi, signedUp, { ...churned, occurrence: { op: 'did_not', count: null, window: ever } }] })).toBe(1);
  });

  it('counts an internal navigation under its landing channel', async () => {
    const pricingFromAi = did({ source: 'pageview', filter: { path: { op: '=', value: '/pricing' }, channel_category: { op: '=', value: 'AI' } } });
    expect(await estimate(pricingFromAi)).toBe(2);
  });

  it('compares payload numbers beyond 64 bits instead of failing', async () => {
    expect((await t.post('/v1/events', { batch: [{ event_name: 'measured', external_id: 'a', properties: { big: 1e300 } }] })).statusCode).toBe(200);
    const measured = (op: string, value: number) => did({ source: 'product_event', name: 'measured', filter: { 'payload.big': { op, value } } });
    expect(await estimate(measured('=', 1e300))).toBe(1);
    expect(await estimate(measured('>', 2 ** 64))).toBe(1);
    expect(await estimate(measured('<', 2 ** 63))).toBe(0);
  });

  it('matches host filters written as URLs', async () => {
    expect(await estimate(did({ source: 'pageview', filter: { referrer_host: { op: '=', value: 'https://www.Google.com/' } } }))).toBe(1);
  });

  it('gives each visitor and person the channel of their earliest page view as first touch', async () => {
    const keys = await controlRows(t, 'SELECT v.visitor_id, v.visitor_key, v.person_key FROM visitors v WHERE v.workspace_id = $1', [t.ws.workspace_id]);
    const key = (id: string) => keys.find((k) => k.visitor_id === id)!;
    const later = new Date(Date.now() + 3_600_000).toISOString();
    // A later visit from Google does not change a first touch.
    const res = await t.app.inject({ method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`, headers: { 'content-type': 'application/json' },
      payload: { visitor_id: 'va', url: 'https://shop.example/', referrer: 'https://www.google.com/', timestamp: later } });
    expect(res.statusCode).toBe(200);
    const touch = await t.stores.analytics.firstTouchChannels(t.ws.workspace_id, {
      visitorKeys: ['va', 'vb', 'vc', 'vd'].map((v) => Number(key(v).visitor_key)),
      personKeys: [Number(key('va').person_key), Number(key('vc').person_key)],
    });
    expect([...touch.visitors.values()]).toEqual(expect.arrayContaining(['AI', 'AI', 'Organic Search', 'AI']));
    expect(touch.visitors.get(Number(key('va').visitor_key))).toBe('AI');
    expect(touch.visitors.get(Number(key('vc').visitor_key))).toBe('Organic Search');
    expect(touch.persons.get(Number(key('va').person_key))).toBe('AI');
    expect(touch.persons.get(Number(key('vc').person_key))).toBe('Organic Search');
  });
});

describe.each(ENGINES_WITH_POSTGRES)('%s: from ingest to a delivered audience', (engine: TestEngine) => {
  let t: TestApp;
  const send = (method: 'GET' | 'POST', url: string, body?: unknown) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${t.ws.secret_key}` }, ...(body === undefined ? {} : { payload: body as object }) });
  afterAll(() => t.close());

  it('ingests, relinks, attributes a payment, refreshes, exports and delivers the same members on every store', async () => {
    const at = new Date(Date.now() + 60_000);
    t = await startTestApp({ engine, at });
    const view = (visitor_id: string, referrer: string) => t.app.inject({ method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`,
      headers: { 'content-type': 'application/json' }, payload: { visitor_id, url: 'https://shop.example/', referrer } });
    for (const [visitor, referrer] of [['v_ada', 'https://chatgpt.com/'], ['v_bo', 'https://claude.ai/'], ['v_cy', 'https://www.google.com/']]) {
      expect((await view(visitor!, referrer!)).statusCode).toBe(200);
    }
    // Anonymous sign-ups, then the person each visitor turns out to be: the history moves with the link.
    const events = (batch: unknown[]) => t.post('/v1/events', { batch });
    expect((await events([{ event_name: 'signup', visitor_id: 'v_ada' }, { event_name: 'signup', visitor_id: 'v_bo' }])).statusCode).toBe(200);
    expect((await t.post('/v1/persons', { external_id: 'ada', email: 'ada@example.com', visitor_id: 'v_ada' })).statusCode).toBe(200);
    expect((await t.post('/v1/persons', { external_id: 'bo', email: 'bo@example.com', visitor_id: 'v_bo' })).statusCode).toBe(200);
    expect((await events([{ event_name: 'churned', external_id: 'bo' }])).statusCode).toBe(200);
    // Ada pays: the checkout carries her user id, the invoice is her first paid one.
    expect((await deliver(t, notification('checkout.session.completed', checkoutSession('cus_ada', { tr_user_id: 'ada' })))).statusCode).toBe(200);
    expect((await deliver(t, notification('invoice.paid', invoice('cus_ada')))).statusCode).toBe(200);

    const aiSignups = { version: 1, root: { op: 'and', children: [
      { source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } }, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } },
      { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } },
      { op: 'not', child: { source: 'product_event', name: 'churned', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
    ] } };
    const payers = { version: 1, root: { source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'ever' } } } };
    expect((await t.compile(aiSignups)).json().estimated_count.count).toBe(1);
    expect((await t.compile(payers)).json().estimated_count.count).toBe(1);

    const receiver = await startReceiver();
    try {
      const created = await t.post('/v1/audiences', {
        name: 'AI sign-ups who stayed', criteria_json: aiSignups, destinations: [{ type: 'webhook', url: receiver.url, secret: 'shh' }],
      });
      expect(created.statusCode, created.body).toBe(201);
      const id = created.json().id as string;
      const refreshed = await send('POST', `/v1/audiences/${id}/refresh`);
      expect(refreshed.json(), refreshed.body).toMatchObject({ status: 'ready', member_count: 1 });
      const members = await send('GET', `/v1/audiences/${id}/members`);
      expect(members.json().data).toEqual([{ person_id: expect.stringMatching(/^per_/), visitor_id: null, external_id: 'ada', email: 'ada@example.com' }]);
      const csv = await send('GET', `/v1/audiences/${id}/members?format=csv`);
      // ClickHouse quotes every string field, DuckDB only those that need it: the same rows either way.
      const rows = csv.body.trim().split('\n').map((line) => line.split(',').map((field) => field.replace(/^"(.*)"$/, '$1')));
      expect(rows).toEqual([['person_id', 'visitor_id', 'external_id', 'email'], [members.json().data[0].person_id, '', 'ada', 'ada@example.com']]);

      await t.app.audiences.scheduler.tick(at);
      await t.app.audiences.deliverer.idle();
      expect(receiver.accepted.map((p) => ({ added: p.added.map((m) => m.external_id), removed: p.removed }))).toEqual([{ added: ['ada'], removed: [] }]);

      // Ada churns: the next refresh removes her, and the receiver is told.
      expect((await events([{ event_name: 'churned', external_id: 'ada' }])).statusCode).toBe(200);
      expect((await send('POST', `/v1/audiences/${id}/refresh`)).json()).toMatchObject({ status: 'ready', member_count: 0 });
      await t.app.audiences.scheduler.tick(at);
      await t.app.audiences.deliverer.idle();
      expect(receiver.accepted.map((p) => ({ added: p.added.length, removed: p.removed.map((m) => m.external_id) })))
        .toEqual([{ added: 1, removed: [] }, { added: 0, removed: ['ada'] }]);
    } finally {
      receiver.close();
    }
  });
});
