// Refunds as Stripe announces them since API version 2022-11-15 (decisions §10): a Charge comes
// without its `refunds` list (the stripe package's Charge type has `refunds?`; the builders send it
// so, test/support/stripe.ts) and `amount_refunded` is its cumulative refunded amount. A
// charge.refunded (or charge.updated) counts what amount_refunded adds above the refunds known;
// refunds with ids, before or after, are reconciled with it: never more than amount_refunded,
// never twice. Signed with the stripe package, objects from Stripe's published fixtures.

import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { storedRows } from './support/stored.js';
import { charge, deliver, type Notification, notification, paymentIntent, refund } from './support/stripe.js';
import { tierRuns } from './support/tier.js';

const T = Date.parse('2025-10-01T00:00:00Z') / 1000;
const at = (s: number) => new Date(s * 1000);

let t: TestApp;

async function send(...events: Notification[]): Promise<void> {
  for (const e of events) {
    const res = await deliver(t, e);
    expect(res.statusCode, `${e.type}: ${res.body}`).toBe(200);
  }
}

/** A $99.00 payment of `cus_r` (payment intent pi_r, charge ch_r). */
const paid = (amount = 9900) => send(
  notification('payment_intent.succeeded', paymentIntent('cus_r', {}, { id: 'pi_r', latest_charge: 'ch_r', amount, created: T }), T),
  notification('charge.succeeded', charge('cus_r', { id: 'ch_r', payment_intent: 'pi_r', amount, created: T }), T),
);
/** A charge.refunded (or another charge notification) as the current API version sends it: no refunds list. */
const refunded = (amountRefunded: number, created: number, type = 'charge.refunded') =>
  notification(type, charge('cus_r', { id: 'ch_r', payment_intent: 'pi_r', amount: 9900, amount_refunded: amountRefunded, created: T }), created);
const refundCreated = (id: string, amount: number, created: number) =>
  notification('refund.created', refund('ch_r', 'pi_r', { id, amount, created }), created);

async function totals() {
  const res = await t.post('/v1/reports/revenue', { from: '2025-09-01', to: '2025-12-01', interval: 'month', group_by: 'channel_category' });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().totals as { revenue: Record<string, number>; refunds: Record<string, number>; refund_count: number };
}

const refundEvents = async () => (await storedRows(t, 'payment_events', ['kind', 'object_id', 'amount', 'ts'], ['object_id']))
  .filter((e) => e.kind === 'refund_issued').map(({ object_id, amount, ts }) => ({ object_id, amount, ts }));

describe.each(ENGINES_WITH_POSTGRES)('refunds announced by amount_refunded on %s', (engine) => {
  beforeAll(async () => { t = await startTestApp({ engine }); });
  beforeEach(() => t.freshWorkspace());
  afterAll(() => t.close());

  it('a charge.refunded of $9.00 without a refunds list takes a $99.00 payment to $90.00; its refund.created after changes nothing', async () => {
    await paid();
    await send(refunded(900, T + 10));
    expect(await totals()).toMatchObject({ revenue: { usd: 9000 }, refunds: { usd: 900 }, refund_count: 1 });
    expect(await refundEvents()).toEqual([{ object_id: 'ch_r#amount_refunded=900', amount: 900, ts: at(T + 10) }]);
    await send(refundCreated('re_1', 900, T + 9));
    expect(await totals()).toMatchObject({ revenue: { usd: 9000 }, refunds: { usd: 900 }, refund_count: 1 });
    expect(await refundEvents()).toEqual([{ object_id: 're_1', amount: 900, ts: at(T + 9) }]);
  });

  it('counts only what amount_refunded adds above the refunds with ids, level by level, and a refund with id arriving later takes its place', async () => {
    await paid();
    await send(refundCreated('re_a', 300, T + 5), refunded(300, T + 6), refunded(900, T + 20, 'charge.updated'));
    expect(await refundEvents()).toEqual([
      { object_id: 'ch_r#amount_refunded=900', amount: 600, ts: at(T + 20) },
      { object_id: 're_a', amount: 300, ts: at(T + 5) },
    ]);
    expect(await totals()).toMatchObject({ revenue: { usd: 9000 }, refunds: { usd: 900 }, refund_count: 2 });
    await send(refundCreated('re_b', 600, T + 19), refunded(900, T + 21));
    expect(await refundEvents()).toEqual([
      { object_id: 're_a', amount: 300, ts: at(T + 5) },
      { object_id: 're_b', amount: 600, ts: at(T + 19) },
    ]);
    expect(await totals()).toMatchObject({ revenue: { usd: 9000 }, refunds: { usd: 900 }, refund_count: 2 });
  });

  it('a lower amount_refunded announced later withdraws the levels above it; an earlier one arriving late does not', async () => {
    await paid();
    await send(refunded(900, T + 10), refunded(0, T + 5, 'charge.updated'));
    expect(await totals()).toMatchObject({ refunds: { usd: 900 }, refund_count: 1 });
    await send(refunded(0, T + 30, 'charge.updated'));
    expect(await totals()).toMatchObject({ revenue: { usd: 9900 }, refunds: { usd: 0 }, refund_count: 0 });
  });

  it('for refunds announced in any order, any of them without refund.created, some together: the charge\'s refunds total its amount_refunded', async () => {
    let run = 0;
    const parts = fc.array(fc.record({ amount: fc.integer({ min: 1, max: 3000 }), withId: fc.boolean() }), { minLength: 1, maxLength: 4 });
    await fc.assert(fc.asyncProperty(parts, fc.integer({ min: 0, max: 1_000_000 }), fc.boolean(), async (refunds, seed, together) => {
      if (run++ > 0) await t.freshWorkspace();
      await paid();
      let level = 0;
      const events: Notification[] = [];
      for (const [i, r] of refunds.entries()) {
        level += r.amount;
        const created = T + 10 * (i + 1);
        if (r.withId) events.push(refundCreated(`re_${i}`, r.amount, created));
        events.push(refunded(level, created + 1));
      }
      const shuffled = events.map((e, i) => ({ e, k: (seed * (i + 7919)) % 104_729 })).sort((a, b) => a.k - b.k).map(({ e }) => e);
      if (together) {
        const answers = await Promise.all(shuffled.map((e) => deliver(t, e)));
        for (const res of answers) expect(res.statusCode, res.body).toBe(200);
      } else {
        await send(...shuffled);
      }
      const figures = await totals();
      expect(figures.refunds).toEqual({ usd: level });
      expect(figures.revenue).toEqual({ usd: 9900 - level });
      const withIds = (await refundEvents()).filter((e) => String(e.object_id).startsWith('re_'));
      expect(withIds.map((e) => [e.object_id, e.amount])).toEqual(refunds.flatMap((r, i) => (r.withId ? [[`re_${i}`, r.amount]] : [])));
    }), { numRuns: tierRuns(25) });
  });
});
