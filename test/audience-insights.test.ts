// Breakdowns, overlaps and the approximate count past the budget, through the public API on every
// engine (docs/criteria.md, "Estimates"): a scenario small enough to count by hand, then a fixture
// on which the sampled interval must hold the true count for 19 salts of 20 at least.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFixtures } from '../fixtures/generate.js';
import { compileCriteria, DEFAULT_SAMPLE } from '../src/audiences/compile.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES, ENGINES_WITH_POSTGRES } from './support/engines.js';
import { importParquet } from './support/stored.js';
import { deliver, notification, subscription } from './support/stripe.js';

const AT = new Date('2026-06-15T12:00:00Z');
const ever = { kind: 'ever' };
const envelope = (root: unknown) => ({ version: 1, root });
const signedUp = envelope({ source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: ever } });
const pro = envelope({ source: 'person', filter: { 'traits.plan': { op: '=', value: 'pro' } } });
const fromAi = envelope({ source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } }, occurrence: { op: 'did', count: null, window: ever } });

describe.each(ENGINES_WITH_POSTGRES)('%s: breakdowns and overlaps', (engine) => {
  let t: TestApp;
  const ok = async (url: string, body: unknown) => {
    const res = await t.post(url, body);
    expect(res.statusCode, res.body).toBeLessThan(300);
    return res.json();
  };
  const pageview = async (visitor: string, url: string, referrer: string | null) => {
    const res = await t.app.inject({
      method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`, headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ visitor_id: visitor, url, referrer }),
    });
    expect(res.statusCode, res.body).toBe(200);
  };

  beforeAll(async () => {
    t = await startTestApp({ engine, at: AT });
    // ada: AI first, then Google; bo: Google; di: Direct; cy: no page view; an anonymous visitor from ChatGPT.
    await pageview('v_ada', 'https://shop.example/', 'https://chatgpt.com/');
    await pageview('v_ada', 'https://shop.example/pricing', 'https://www.google.com/');
    await pageview('v_bo', 'https://shop.example/', 'https://www.google.com/');
    await pageview('v_di', 'https://shop.example/', null);
    await pageview('v_anon', 'https://shop.example/', 'https://chatgpt.com/');
    await ok('/v1/events', {
      batch: [
        { event_name: 'signup', user_id: 'ada', visitor_id: 'v_ada', traits: { plan: 'pro' } },
        { event_name: 'signup', user_id: 'bo', visitor_id: 'v_bo', traits: { plan: 'free' } },
        { event_name: 'signup', user_id: 'cy', traits: { plan: 'pro' } },
        { event_name: 'signup', user_id: 'di', visitor_id: 'v_di', traits: { seats: 3 } },
        { event_name: 'signup', visitor_id: 'v_anon' },
        // 25 persons with a distinct trait each: more values than a breakdown lists.
        ...Array.from({ length: 25 }, (_, i) => ({ event_name: 'invited', user_id: `guest_${i}`, traits: { n: i } })),
      ],
    });
    for (const [customer, user, status] of [['cus_ada', 'ada', 'active'], ['cus_bo', 'bo', 'canceled']] as const) {
      const res = await deliver(t, notification('customer.subscription.created', subscription(customer, { status, metadata: { tr_user_id: user } })));
      expect(res.statusCode, res.body).toBe(200);
    }
  });
  afterAll(() => t.close());

  const breakdown = async (criteria: unknown, by: string) => {
    const body = await ok('/v1/audiences/compile', { criteria_json: criteria, breakdown: by });
    expect(body.estimated_count).toMatchObject({ is_estimate: false, hit_limit: false });
    // The rows add up to the count.
    expect(body.breakdown.reduce((sum: number, row: { count: number }) => sum + row.count, 0)).toBe(body.estimated_count.count);
    return body.breakdown;
  };

  it('breaks an audience down by first-touch channel, a trait and the latest subscription status, most first', async () => {
    expect(await breakdown(signedUp, 'channel_category')).toEqual([
      { value: 'AI', count: 2 }, { value: 'Direct', count: 1 }, { value: 'Non-attributed', count: 1 }, { value: 'Organic Search', count: 1 },
    ]);
    expect(await breakdown(signedUp, 'traits.plan')).toEqual([{ value: 'pro', count: 2 }, { value: null, count: 2 }, { value: 'free', count: 1 }]);
    expect(await breakdown(signedUp, 'subscription.status')).toEqual([
      { value: null, count: 3 }, { value: 'active', count: 1 }, { value: 'canceled', count: 1 },
    ]);
  });

  it('lists the 20 most frequent values and the rest as (other)', async () => {
    const rows = await breakdown(envelope({ source: 'product_event', name: 'invited', occurrence: { op: 'did', count: null, window: ever } }), 'traits.n');
    // Numbers as their JSON text; ties by value.
    const top = Array.from({ length: 25 }, (_, i) => String(i)).sort().slice(0, 20);
    expect(rows).toEqual([...top.map((value) => ({ value, count: 1 })), { value: '(other)', count: 5 }]);
  });

  it('refuses an unknown breakdown or trait naming the field', async () => {
    for (const by of ['traits.nope', 'country', '']) {
      const res = await t.post('/v1/audiences/compile', { criteria_json: signedUp, breakdown: by });
      expect(res.statusCode, by).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/breakdown' }] });
    }
  });

  it('sizes two to four audiences, every intersection and the union in one call, saved ones by id', async () => {
    const saved = await ok('/v1/audiences', { name: 'from AI', criteria_json: fromAi });
    const body = await ok('/v1/audiences/overlap', { audiences: [{ criteria_json: signedUp }, { criteria_json: pro }, { audience_id: saved.id }] });
    expect(body).toEqual({
      hit_limit: false,
      sizes: [5, 2, 2],
      intersections: [{ of: [0, 1], count: 2 }, { of: [0, 2], count: 2 }, { of: [1, 2], count: 1 }, { of: [0, 1, 2], count: 1 }],
      union: 5,
    });
    const pair = await ok('/v1/audiences/overlap', { audiences: [{ criteria_json: pro }, { criteria_json: JSON.stringify(fromAi) }] });
    expect(pair).toEqual({ hit_limit: false, sizes: [2, 2], intersections: [{ of: [0, 1], count: 1 }], union: 3 });
  });

  it('answers every fault of an overlap at its path in the body, an unknown audience 404, and 400 outside 2..4', async () => {
    const bad = envelope({ source: 'person', filter: { 'traits.nope': { op: 'is_set' } } });
    const res = await t.post('/v1/audiences/overlap', { audiences: [{ criteria_json: bad }, { criteria_json: pro }, { criteria_json: { version: 2, root: {} } }] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_criteria', code: 'unknown_field', path: '/audiences/0/criteria_json/root/filter/traits.nope' });
    expect(res.json().errors.map((e: { code: string; path: string }) => `${e.code} ${e.path}`)).toEqual([
      'unknown_field /audiences/0/criteria_json/root/filter/traits.nope',
      'version_unsupported /audiences/2/criteria_json/version',
      'invalid_node /audiences/2/criteria_json/root',
    ]);
    expect((await t.post('/v1/audiences/overlap', { audiences: [{ audience_id: 'aud_missing' }, { criteria_json: pro }] })).statusCode).toBe(404);
    for (const audiences of [[{ criteria_json: pro }], Array(5).fill({ criteria_json: pro })]) {
      const out = await t.post('/v1/audiences/overlap', { audiences });
      expect(out.statusCode).toBe(400);
      expect(out.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/audiences' }] });
    }
  });
});

/** The fixture of the approximate counts, generated once for every engine's run. */
let fixture: Promise<string> | undefined;
const fixtureDir = () => (fixture ??= (async () => {
  const dir = mkdtempSync(join(tmpdir(), 'approximate-'));
  await generateFixtures({ people: 20_000, events: 100_000, pageviews: 20_000, seed: 11, out: dir });
  return dir;
})());
afterAll(async () => {
  if (fixture) rmSync(await fixture, { recursive: true, force: true });
});

describe.each(ENGINES)('%s: the approximate count past the budget', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    // No time for an exact count: every estimate answers from its sample.
    t = await startTestApp({ engine, exactShare: 0, at: new Date('2026-11-01T00:00:00Z') });
    await importParquet(t, await fixtureDir());
  });
  afterAll(() => t.close());

  const criteria = {
    'signed up': signedUp,
    'pro plan, not from AI': envelope({ op: 'and', children: [pro.root, { op: 'not', child: fromAi.root }] }),
    'viewed an item 3+ times': envelope({ source: 'product_event', name: 'view_item', occurrence: { op: 'did', count: { op: '>=', value: 3 }, window: ever } }),
  };

  it('answers hit_limit with the sampled count, its 95 % interval and fraction, and no breakdown', async () => {
    const body = await ok(t, { criteria_json: signedUp, breakdown: 'channel_category' });
    expect(body).toEqual({
      valid: true, is_time_windowed: false, breakdown: null,
      estimated_count: { count: null, is_estimate: true, hit_limit: true, approximate: { count: expect.any(Number), low: expect.any(Number), high: expect.any(Number), sample_fraction: 0.01 } },
    });
    const { approximate } = body.estimated_count;
    expect(approximate.low).toBeLessThanOrEqual(approximate.count);
    expect(approximate.high).toBeGreaterThan(approximate.count);
  });

  it.each(Object.entries(criteria))('holds the true count within the interval for at least 19 salts of 20: %s', async (_, tree) => {
    const exact = await compileCriteria(t.stores.analytics, t.ws.workspace_id, tree, { at: new Date('2026-11-01T00:00:00Z'), budgetMs: 60_000, exactShare: 1 });
    const truth = exact.valid ? exact.estimated_count.count! : NaN;
    expect(truth).toBeGreaterThan(500);
    let inside = 0;
    let sum = 0;
    for (let salt = 1; salt <= 20; salt++) {
      const sampled = await compileCriteria(t.stores.analytics, t.ws.workspace_id, tree, {
        at: new Date('2026-11-01T00:00:00Z'), budgetMs: 60_000, exactShare: 0, sample: { ...DEFAULT_SAMPLE, salt },
      });
      const approximate = sampled.valid ? sampled.estimated_count.approximate : null;
      if (!approximate) throw new Error('no approximate count');
      if (approximate.low <= truth && truth <= approximate.high) inside++;
      sum += approximate.count;
    }
    expect(inside).toBeGreaterThanOrEqual(19);
    // The scaled counts are unbiased: their mean is within 4 standard errors of the truth.
    const p = DEFAULT_SAMPLE.keep / DEFAULT_SAMPLE.modulus;
    expect(Math.abs(sum / 20 - truth)).toBeLessThan(4 * Math.sqrt((truth * (1 - p)) / p / 20));
  });
});

async function ok(t: TestApp, body: unknown) {
  const res = await t.post('/v1/audiences/compile', body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}
