// A touch can only acquire a customer before it pays (decisions §10): a payer's first touch is its
// earliest page view at or before its first payment, Non-attributed when it has none then; people
// who never paid keep their earliest page view. For any people, page views and payments (sent
// through the API and signed Stripe notifications), the revenue report's groups, GET /people's
// first_touch_channel and the channel_category breakdown all equal the rule computed here.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { checkoutSession, deliver, invoice, notification } from './support/stripe.js';
import { tierRuns } from './support/tier.js';

const START = Date.parse('2025-09-01T00:00:00Z') / 1000;
const DAY = 86_400;
/** Referrers and the channel category each gives (docs/channels.md). */
const REFERRERS = [
  { referrer: undefined, category: 'Direct' },
  { referrer: 'https://www.google.com/', category: 'Organic Search' },
  { referrer: 'https://chatgpt.com/', category: 'AI' },
] as const;

const touch = fc.record({ day: fc.integer({ min: 0, max: 20 }), source: fc.integer({ min: 0, max: REFERRERS.length - 1 }) });
const person = fc.record({
  touches: fc.array(touch, { maxLength: 3 }),
  /** The day of the first payment; undefined: never pays. */
  pays: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
  /** A page view at the very instant of the payment (it counts: at or before). */
  touchAtPayment: fc.option(fc.integer({ min: 0, max: REFERRERS.length - 1 }), { nil: undefined }),
});
type Person = typeof person extends fc.Arbitrary<infer P> ? P : never;

const NON_ATTRIBUTED = 'Non-attributed';

/** The rule, plainly: page views at distinct instants, the earliest at or before the first payment. */
function expectedTouch(p: Person, i: number): string {
  const paidAt = p.pays === undefined ? undefined : paymentTime(p.pays);
  const views = pageviews(p, i).filter((v) => paidAt === undefined || v.at <= paidAt).sort((a, b) => a.at - b.at);
  return views[0] ? REFERRERS[views[0].source]!.category : NON_ATTRIBUTED;
}

const paymentTime = (day: number) => START + day * DAY + 43_200;

function pageviews(p: Person, i: number): { at: number; source: number }[] {
  const views = p.touches.map((v, j) => ({ at: START + v.day * DAY + j * 3600 + i * 60, source: v.source }));
  if (p.pays !== undefined && p.touchAtPayment !== undefined) views.push({ at: paymentTime(p.pays), source: p.touchAtPayment });
  return views;
}

describe.each(ENGINES_WITH_POSTGRES)('first touch before the first payment on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ engine }); });
  afterAll(() => t.close());

  it('is the same rule in the revenue report, GET /people and the channel_category breakdown', async () => {
    await fc.assert(fc.asyncProperty(fc.array(person, { minLength: 1, maxLength: 4 }), async (people) => {
      const ws = await t.freshWorkspace();
      const ok = (res: { statusCode: number; body: string }) => expect(res.statusCode, res.body).toBe(200);
      for (const [i, p] of people.entries()) {
        for (const v of pageviews(p, i)) {
          const { referrer } = REFERRERS[v.source]!;
          ok(await t.post('/v1/pageviews', {
            visitor_id: `v_${i}`, url: 'https://shop.example/', timestamp: new Date(v.at * 1000).toISOString(), ...(referrer ? { referrer } : {}),
          }, ws.publishable_key));
        }
        ok(await t.post('/v1/events', { event_name: 'signup', user_id: `u_${i}`, visitor_id: `v_${i}`, timestamp: new Date(START * 1000).toISOString() }));
        if (p.pays === undefined) continue;
        const at = paymentTime(p.pays);
        ok(await deliver(t, notification('checkout.session.completed', checkoutSession(`cus_${i}`, { tr_user_id: `u_${i}` }, null, { created: START }), START)));
        ok(await deliver(t, notification('invoice.paid', invoice(`cus_${i}`, { amount: 1000 * (i + 1), paid_at: at, created: at }), at)));
      }

      const report = await t.post('/v1/reports/revenue', { from: '2025-08-01', to: '2025-10-01', interval: 'month', group_by: 'channel_category' });
      ok(report);
      const byGroup = new Map<string, number>();
      for (const r of report.json().rows as { group: string; revenue: Record<string, number> }[]) byGroup.set(r.group, (byGroup.get(r.group) ?? 0) + (r.revenue.usd ?? 0));
      const expectedGroups = new Map<string, number>();
      for (const [i, p] of people.entries()) {
        if (p.pays !== undefined) expectedGroups.set(expectedTouch(p, i), (expectedGroups.get(expectedTouch(p, i)) ?? 0) + 1000 * (i + 1));
      }
      expect(byGroup).toEqual(expectedGroups);

      for (const [i, p] of people.entries()) {
        const found = await t.app.inject({ method: 'GET', url: `/people?q=u_${i}`, headers: { authorization: `Bearer ${ws.secret_key}` } });
        ok(found);
        expect(found.json().data.map((r: { first_touch_channel: string }) => r.first_touch_channel), `u_${i}`).toEqual([expectedTouch(p, i)]);
      }

      const signedUp = { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } };
      const compiled = await t.post('/v1/audiences/compile', { criteria_json: { version: 1, root: signedUp }, breakdown: 'channel_category' });
      ok(compiled);
      const counts = new Map<string, number>();
      for (const [i, p] of people.entries()) counts.set(expectedTouch(p, i), (counts.get(expectedTouch(p, i)) ?? 0) + 1);
      const breakdown = compiled.json().breakdown as { value: string; count: number }[];
      expect(new Map(breakdown.map((r) => [r.value, r.count]))).toEqual(counts);
    }), { numRuns: tierRuns(20) });
  });

  it('credits nobody with a page view after the payment: the issue\'s invoice of 2025-11-23 and a visit of 2026-11-27', async () => {
    const ws = await t.freshWorkspace();
    const paid = Date.parse('2025-11-23T12:00:00Z') / 1000;
    expect((await t.post('/v1/pageviews', { visitor_id: 'v_late', url: 'https://shop.example/', referrer: 'https://chatgpt.com/', timestamp: '2026-11-27T09:00:00Z' }, ws.publishable_key)).statusCode).toBe(200);
    expect((await t.post('/v1/events', { event_name: 'signup', user_id: 'u_late', visitor_id: 'v_late' })).statusCode).toBe(200);
    expect((await deliver(t, notification('checkout.session.completed', checkoutSession('cus_late', { tr_user_id: 'u_late' }, null, { created: paid }), paid))).statusCode).toBe(200);
    const people = async () => (await t.app.inject({ method: 'GET', url: '/people?q=u_late', headers: { authorization: `Bearer ${ws.secret_key}` } })).json().data;
    // Not a payer yet: its earliest page view.
    expect(await people()).toEqual([expect.objectContaining({ first_touch_channel: 'AI' })]);
    expect((await deliver(t, notification('invoice.paid', invoice('cus_late', { amount: 4900, paid_at: paid, created: paid }), paid))).statusCode).toBe(200);
    expect(await people()).toEqual([expect.objectContaining({ first_touch_channel: NON_ATTRIBUTED })]);
    const report = await t.post('/v1/reports/revenue', { from: '2025-11-01', to: '2026-01-01', interval: 'month', group_by: 'channel_category' });
    expect(report.json().rows.map((r: { group: string }) => r.group)).toEqual([NON_ATTRIBUTED]);
  });
});
