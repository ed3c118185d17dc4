// POST /v1/reports/revenue (issue 18 §2) on every engine layout: one scenario built through the
// public API (page views, events, persons, signed Stripe notifications), every figure checked
// against a hand-computed expectation, then the request faults.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { checkoutSession, deliver, invoice, notification, refund } from './support/stripe.js';

const s = (iso: string) => Date.parse(iso) / 1000;

let t: TestApp;

async function ok(res: { statusCode: number; body: string }): Promise<void> {
  expect(res.statusCode, res.body).toBe(200);
}

const pageview = (visitor_id: string, timestamp: string, url: string, referrer?: string) =>
  t.post('/v1/pageviews', { visitor_id, url, timestamp, ...(referrer ? { referrer } : {}) }, t.ws.publishable_key).then(ok);

const send = async (type: string, object: Record<string, unknown>, at: string) => ok(await deliver(t, notification(type, object, s(at))));

/**
 * Customers, by hand:
 * - cus_a (person u_a, plan basic): visitors v_a1 (Google 10-01, Direct 10-25) and v_a2 (ChatGPT 10-20);
 *   invoices 5000 usd paid 11-03 and 12-02; a 1000 usd refund 12-05. First touch Organic Search, last AI.
 * - a guest paying 3000 eur on 11-10, visitor v_b (anonymous): newsletter 11-09 09:00, Direct 10:00. Email both ways.
 * - cus_c: no metadata, no email: Non-attributed; 2000 usd 11-15; a 500 refund that then failed (not counted).
 * - cus_d (person u_d, plan pro): v_d Direct 11-01, Google 11-20 (after paying); 4000 usd 11-05. Direct both ways.
 * - cus_f (person u_f, no plan, no page view): 1000 usd 10-15 (before the range) and 11-20. Non-attributed, not new.
 */
async function scenario(): Promise<void> {
  await t.post('/v1/persons', { external_id: 'u_a', traits: { plan: 'basic' } }).then(ok);
  await t.post('/v1/persons', { external_id: 'u_d', traits: { plan: 'pro' } }).then(ok);
  await t.post('/v1/persons', { external_id: 'u_f', traits: { company: 'F' } }).then(ok);
  await pageview('v_a1', '2025-10-01T09:00:00Z', 'https://shop.example/', 'https://www.google.com/');
  await pageview('v_a2', '2025-10-20T09:00:00Z', 'https://shop.example/pricing', 'https://chatgpt.com/');
  await pageview('v_a1', '2025-10-25T09:00:00Z', 'https://shop.example/');
  await pageview('v_b', '2025-11-09T09:00:00Z', 'https://shop.example/?utm_source=newsletter&utm_medium=email&utm_campaign=nov');
  await pageview('v_b', '2025-11-09T10:00:00Z', 'https://shop.example/checkout');
  await pageview('v_d', '2025-11-01T08:00:00Z', 'https://shop.example/');
  await pageview('v_d', '2025-11-20T08:00:00Z', 'https://shop.example/', 'https://www.google.com/');
  for (const [user_id, visitor_id] of [['u_a', 'v_a1'], ['u_a', 'v_a2'], ['u_d', 'v_d']]) {
    await t.post('/v1/events', { event_name: 'signup', user_id, visitor_id, timestamp: '2025-10-30T00:00:00Z' }).then(ok);
  }

  await send('checkout.session.completed', checkoutSession('cus_a', { tr_user_id: 'u_a' }, null, { created: s('2025-11-03T10:00:00Z') }), '2025-11-03T10:00:00Z');
  for (const [id, at] of [['in_a1', '2025-11-03T10:00:05Z'], ['in_a2', '2025-12-02T10:00:00Z']] as const) {
    await send('invoice.paid', invoice('cus_a', { id, amount: 5000, paid_at: s(at), created: s(at) }), at);
  }
  await send('refund.created', refund('ch_a', null, { id: 're_a', amount: 1000, created: s('2025-12-05T00:00:00Z'), customer: 'cus_a' }), '2025-12-05T00:00:00Z');

  await send('checkout.session.completed', checkoutSession(null, { tr_visitor_id: 'v_b' }, 'b@example.com',
    { mode: 'payment', amount: 3000, currency: 'eur', created: s('2025-11-10T12:00:00Z') }), '2025-11-10T12:00:00Z');

  await send('invoice.paid', invoice('cus_c', { id: 'in_c', amount: 2000, paid_at: s('2025-11-15T00:00:00Z'), created: s('2025-11-15T00:00:00Z') }), '2025-11-15T00:00:00Z');
  await send('refund.created', refund('ch_c', null, { id: 're_c', amount: 500, created: s('2025-11-16T00:00:00Z'), customer: 'cus_c' }), '2025-11-16T00:00:00Z');
  await send('refund.updated', refund('ch_c', null, { id: 're_c', amount: 500, status: 'failed', created: s('2025-11-16T00:00:00Z'), customer: 'cus_c' }), '2025-11-17T00:00:00Z');

  await send('checkout.session.completed', checkoutSession('cus_d', { tr_user_id: 'u_d' }, null, { created: s('2025-11-05T00:00:00Z') }), '2025-11-05T00:00:00Z');
  await send('invoice.paid', invoice('cus_d', { id: 'in_d', amount: 4000, paid_at: s('2025-11-05T00:00:10Z'), created: s('2025-11-05T00:00:10Z') }), '2025-11-05T00:00:10Z');

  await send('checkout.session.completed', checkoutSession('cus_f', { tr_user_id: 'u_f' }, null, { created: s('2025-10-15T00:00:00Z') }), '2025-10-15T00:00:00Z');
  for (const [id, at] of [['in_f1', '2025-10-15T00:00:10Z'], ['in_f2', '2025-11-20T00:00:00Z']] as const) {
    await send('invoice.paid', invoice('cus_f', { id, amount: 1000, paid_at: s(at), created: s(at) }), at);
  }
}

const report = (body: Record<string, unknown>) => t.post('/v1/reports/revenue', { from: '2025-11-01', to: '2026-01-01', interval: 'month', group_by: 'channel_category', ...body });

async function rowsOf(body: Record<string, unknown>): Promise<unknown> {
  const res = await report(body);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().hit_limit, 'the budget ran out').toBe(false);
  return res.json();
}

const row = (bucket: string, group: string | null, revenue: Record<string, number>, o: { refunds?: Record<string, number>; refund_count?: number; paying: number; new: number }) => ({
  bucket, group, revenue, refunds: o.refunds ?? Object.fromEntries(Object.keys(revenue).map((c) => [c, 0])),
  refund_count: o.refund_count ?? 0, paying_customers: o.paying, new_paying_customers: o.new,
});

const NOV = '2025-11-01';
const DEC = '2025-12-01';

describe.each(ENGINES_WITH_POSTGRES)('revenue report on %s', (engine) => {
  beforeAll(async () => {
    // A budget for a shared machine: these reports take seconds on chDB when the cores are busy.
    t = await startTestApp({ engine, budgetMs: 60_000 });
    await scenario();
  });
  afterAll(() => t.close());

  it('attributes each customer to its first touch, Non-attributed without one, totals the processor\'s', async () => {
    expect(await rowsOf({})).toEqual({
      from: '2025-11-01T00:00:00.000Z', to: '2026-01-01T00:00:00.000Z', interval: 'month', group_by: 'channel_category', model: 'first_touch',
      lookback_days: null, half_life_days: null, hit_limit: false, currencies: ['eur', 'usd'],
      rows: [
        row(NOV, 'Organic Search', { usd: 5000 }, { paying: 1, new: 1 }),
        row(NOV, 'Direct', { usd: 4000 }, { paying: 1, new: 1 }),
        row(NOV, 'Email', { eur: 3000 }, { paying: 1, new: 1 }),
        row(NOV, 'Non-attributed', { usd: 3000 }, { paying: 2, new: 1 }),
        row(DEC, 'Organic Search', { usd: 4000 }, { refunds: { usd: 1000 }, refund_count: 1, paying: 1, new: 0 }),
      ],
      totals: { revenue: { eur: 3000, usd: 16000 }, refunds: { eur: 0, usd: 1000 }, refund_count: 1, paying_customers: 5, new_paying_customers: 4 },
    });
  });

  it('splits each payment over the touches of its lookback by model, a refund as the payment before it', async () => {
    // cus_a's touches: Organic Search 10-01, AI 10-20, Direct 10-25; the guest's Email then Direct; cus_d's Direct.
    expect((await rowsOf({ model: 'linear' }) as { rows: unknown[] }).rows).toEqual([
      row(NOV, 'Direct', { usd: 1668 + 4000, eur: 1500 }, { paying: 3, new: 3 }),
      row(NOV, 'Non-attributed', { usd: 3000 }, { paying: 2, new: 1 }),
      row(NOV, 'AI', { usd: 1666 }, { paying: 1, new: 1 }),
      row(NOV, 'Organic Search', { usd: 1666 }, { paying: 1, new: 1 }),
      row(NOV, 'Email', { eur: 1500 }, { paying: 1, new: 1 }),
      row(DEC, 'Direct', { usd: 1668 - 334 }, { refunds: { usd: 334 }, refund_count: 1, paying: 1, new: 0 }),
      row(DEC, 'AI', { usd: 1666 - 333 }, { refunds: { usd: 333 }, refund_count: 1, paying: 1, new: 0 }),
      row(DEC, 'Organic Search', { usd: 1666 - 333 }, { refunds: { usd: 333 }, refund_count: 1, paying: 1, new: 0 }),
    ]);
    const sorted = (rows: unknown[][]) => rows.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    const revenues = async (body: Record<string, unknown>) => {
      const answer = await rowsOf(body) as { rows: { bucket: string; group: string; revenue: Record<string, number> }[]; totals: unknown };
      return { rows: sorted(answer.rows.map((r) => [r.bucket, r.group, r.revenue])), totals: answer.totals };
    };
    const last = await revenues({ model: 'last_touch' });
    expect(last.rows).toEqual(sorted([
      [DEC, 'Direct', { usd: 4000 }], [NOV, 'Direct', { eur: 3000, usd: 9000 }], [NOV, 'Non-attributed', { usd: 3000 }],
    ]));
    expect((await revenues({ model: 'last_non_direct' })).rows).toEqual(sorted([
      [DEC, 'AI', { usd: 4000 }], [NOV, 'AI', { usd: 5000 }], [NOV, 'Direct', { usd: 4000 }], [NOV, 'Email', { eur: 3000 }], [NOV, 'Non-attributed', { usd: 3000 }],
    ]));
    // 40 % to the first and the last touch, 20 % between; 50/50 with two.
    expect((await revenues({ model: 'position_based' })).rows).toEqual(sorted([
      [DEC, 'AI', { usd: 1000 - 200 }], [DEC, 'Direct', { usd: 2000 - 400 }], [DEC, 'Organic Search', { usd: 2000 - 400 }],
      [NOV, 'AI', { usd: 1000 }], [NOV, 'Direct', { eur: 1500, usd: 6000 }], [NOV, 'Email', { eur: 1500 }],
      [NOV, 'Non-attributed', { usd: 3000 }], [NOV, 'Organic Search', { usd: 2000 }],
    ]));
    // A 20-day lookback: cus_a's December payment (and its refund) has no touch since 11-12.
    expect((await revenues({ model: 'last_non_direct', lookback_days: 20 })).rows).toEqual(sorted([
      [DEC, 'Non-attributed', { usd: 4000 }], [NOV, 'AI', { usd: 5000 }], [NOV, 'Direct', { usd: 4000 }], [NOV, 'Email', { eur: 3000 }], [NOV, 'Non-attributed', { usd: 3000 }],
    ]));
    // Weights halve every half_life_days back from the latest touch: cus_a's Direct (0 days) > AI (5) > Organic Search (24).
    const decay = await rowsOf({ model: 'time_decay', half_life_days: 3, to: '2025-12-01' }) as { rows: { group: string; revenue: { usd?: number } }[]; half_life_days: number };
    expect(decay.half_life_days).toBe(3);
    const usd = Object.fromEntries(decay.rows.map((r) => [r.group, r.revenue.usd ?? 0]));
    expect(usd['Direct']! - 4000).toBeGreaterThan(usd['AI']!);
    expect(usd['AI']).toBeGreaterThan(usd['Organic Search']!);
    expect(usd['Direct']! - 4000 + usd['AI']! + usd['Organic Search']!).toBe(5000);
    for (const model of ['last_touch', 'last_non_direct', 'linear', 'position_based', 'time_decay']) {
      expect((await revenues({ model })).totals, model).toEqual(last.totals);
    }
  });

  it('groups by a touch column', async () => {
    const campaigns = await rowsOf({ group_by: 'campaign', interval: 'week', from: '2025-11-10', to: '2025-11-17' }) as { rows: unknown[] };
    // The week of Monday 11-10: the guest (campaign nov) and cus_c (Non-attributed); its refund failed.
    expect(campaigns.rows).toEqual([
      row('2025-11-10', 'nov', { eur: 3000 }, { paying: 1, new: 1 }),
      row('2025-11-10', 'Non-attributed', { usd: 2000 }, { paying: 1, new: 1 }),
    ]);
    const days = await rowsOf({ group_by: 'landing_path', interval: 'day', from: '2025-11-03T00:00:00Z', to: '2025-11-06T00:00:00+00:00' }) as { rows: unknown[] };
    expect(days.rows).toEqual([row('2025-11-03', '/', { usd: 5000 }, { paying: 1, new: 1 }), row('2025-11-05', '/', { usd: 4000 }, { paying: 1, new: 1 })]);
  });

  it('groups by a trait of the customer\'s person: its value, null without it, Non-attributed without a person', async () => {
    const traits = await rowsOf({ group_by: 'traits.plan', to: '2025-12-01' }) as { rows: unknown[] };
    expect(traits.rows).toEqual([
      row(NOV, 'Non-attributed', { eur: 3000, usd: 2000 }, { paying: 2, new: 2 }),
      row(NOV, 'basic', { usd: 5000 }, { paying: 1, new: 1 }),
      row(NOV, 'pro', { usd: 4000 }, { paying: 1, new: 1 }),
      row(NOV, null, { usd: 1000 }, { paying: 1, new: 0 }),
    ]);
  });

  it('restricts to the people of a trait filter, of criteria, or of a saved audience', async () => {
    const pro = await rowsOf({ filter: { 'traits.plan': { op: '=', value: 'pro' } } }) as { rows: unknown[]; totals: unknown; currencies: string[] };
    expect(pro.rows).toEqual([row(NOV, 'Direct', { usd: 4000 }, { paying: 1, new: 1 })]);
    expect(pro.totals).toEqual({ revenue: { usd: 4000 }, refunds: { usd: 0 }, refund_count: 0, paying_customers: 1, new_paying_customers: 1 });
    const criteria = { version: 1, root: { source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } }, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };
    const ai = await rowsOf({ criteria_json: criteria }) as { rows: { bucket: string; group: string; revenue: unknown }[] };
    expect(ai.rows.map((r) => [r.bucket, r.group, r.revenue])).toEqual([[NOV, 'Organic Search', { usd: 5000 }], [DEC, 'Organic Search', { usd: 4000 }]]);
    const saved = await t.post('/v1/audiences', { name: 'AI', criteria_json: criteria });
    expect(saved.statusCode, saved.body).toBe(201);
    expect(await rowsOf({ audience_id: saved.json().id })).toEqual(await rowsOf({ criteria_json: criteria }));
  });

  it('answers an empty report for a range without money', async () => {
    expect(await rowsOf({ from: '2024-01-01', to: '2024-02-01' })).toMatchObject({
      hit_limit: false, currencies: [], rows: [],
      totals: { revenue: {}, refunds: {}, refund_count: 0, paying_customers: 0, new_paying_customers: 0 },
    });
  });

  it('reports group_by, filter and criteria faults with their codes and paths into the body', async () => {
    const res = await report({
      group_by: 'traits.nope', filter: { 'traits.plan': { op: 'like', value: 'p' }, 'traits.nope': { op: 'is_set' } },
      criteria_json: { version: 1, root: { op: 'not', child: { source: 'person' } } },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({
      error: 'invalid_criteria', code: 'unknown_field', path: '/group_by',
      errors: [
        { code: 'unknown_field', path: '/group_by' },
        { code: 'unknown_op', path: '/filter/traits.plan/op' },
        { code: 'unknown_field', path: '/filter/traits.nope' },
        { code: 'unanchored_negation', path: '/criteria_json/root' },
      ],
    });
  });

  it('refuses a malformed request naming each field, and a range past 1,000 buckets', async () => {
    const bad = await report({ from: 'yesterday', interval: 'hour', model: 'u_shaped' });
    expect(bad.statusCode, bad.body).toBe(400);
    expect(bad.json().error).toBe('invalid_request');
    expect(bad.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['/from', '/interval', '/model']);
    for (const [body, field] of [[{ lookback_days: 30 }, '/lookback_days'], [{ model: 'linear', half_life_days: 7 }, '/half_life_days'],
      [{ model: 'linear', lookback_days: 0 }, '/lookback_days'], [{ model: 'time_decay', half_life_days: -1 }, '/half_life_days']] as const) {
      const res = await report(body);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request', errors: [{ field }] });
    }
    const both = await report({ criteria_json: {}, audience_id: 'aud_1' });
    expect(both.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/audience_id' }] });
    const long = await report({ from: '2020-01-01', to: '2023-01-01', interval: 'day' });
    expect(long.statusCode, long.body).toBe(400);
    expect(long.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/to' }] });
    expect((await report({ from: '2020-01-01', to: '2023-01-01', interval: 'week' })).statusCode).toBe(200);
    expect((await report({ from: '2025-12-01', to: '2025-11-01' })).statusCode).toBe(400);
    expect((await report({ audience_id: 'aud_missing' })).statusCode).toBe(404);
  });
});

describe('revenue report budget', () => {
  it('answers hit_limit with no rows and null totals once the budget has run out', async () => {
    t = await startTestApp({ budgetMs: 0 });
    try {
      const res = await report({});
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ hit_limit: true, currencies: [], rows: [], totals: null });
    } finally {
      await t.close();
    }
  });
});
