// The revenue report's totals are the processor's: for any set of paid invoices, one-time payments
// and refunds (signed notifications, some payers linked to visitors, some not), the totals per
// currency are the payments minus the refunds of the range, and the rows add up to the totals.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/store/control/workspaces.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { checkoutSession, deliver, notification, refund, sendPayment } from './support/stripe.js';
import { tierRuns } from './support/tier.js';

const START = Date.parse('2025-09-01T00:00:00Z') / 1000;
const DAY = 86_400;
const REFERRERS = [null, 'https://www.google.com/', 'https://chatgpt.com/'];

const money = fc.record({ amount: fc.integer({ min: 1, max: 100_000 }), currency: fc.constantFrom('usd', 'eur'), day: fc.integer({ min: 0, max: 59 }) });
const payer = fc.record({
  /** A visitor with a page view of this referrer linked through metadata, or none (Non-attributed). */
  referrer: fc.option(fc.integer({ min: 0, max: REFERRERS.length - 1 }), { nil: undefined }),
  payments: fc.array(fc.record({ oneTime: fc.boolean(), money }), { minLength: 1, maxLength: 3 }),
  refunds: fc.array(money, { maxLength: 2 }),
});

interface Figures { revenue: Record<string, number>; refunds: Record<string, number>; refund_count: number; paying_customers: number }

const add = (into: Record<string, number>, currency: string, amount: number) => { into[currency] = (into[currency] ?? 0) + amount; };

describe.each(ENGINES)('revenue report totals on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ engine }); });
  afterAll(() => t.close());

  it('are the payments minus the refunds of the range, per currency, and the sum of the rows', async () => {
    let run = 0;
    await fc.assert(fc.asyncProperty(fc.array(payer, { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 30 }), async (payers, fromDay) => {
      const ws: CreatedWorkspace = await t.workspaces.create(`property ${run++}`);
      const send = async (type: string, object: Record<string, unknown>, at: number) => {
        const res = await deliver(t, notification(type, object, at), { workspaceId: ws.workspace_id, secret: ws.stripe_webhook_secret });
        expect(res.statusCode, res.body).toBe(200);
      };
      const [from, to] = [START + fromDay * DAY, START + 60 * DAY];
      const expected = { revenue: {}, refunds: {}, refund_count: 0, paying_customers: 0 } as Figures;
      for (const [i, p] of payers.entries()) {
        const customer = `cus_${i}`;
        if (p.referrer !== undefined) {
          const referrer = REFERRERS[p.referrer];
          const res = await t.post('/v1/pageviews', {
            visitor_id: `v_${i}`, url: 'https://shop.example/', timestamp: new Date((START - DAY) * 1000).toISOString(), ...(referrer ? { referrer } : {}),
          }, ws.publishable_key);
          expect(res.statusCode, res.body).toBe(200);
          await send('checkout.session.completed', checkoutSession(customer, { tr_visitor_id: `v_${i}` }, null, { created: START - DAY }), START - DAY);
        }
        let pays = false;
        for (const [j, { oneTime, money: m }] of p.payments.entries()) {
          const at = START + m.day * DAY + j;
          await sendPayment(send, customer, { oneTime, ...m }, at);
          if (at >= from && at < to) {
            add(expected.revenue, m.currency, m.amount);
            add(expected.refunds, m.currency, 0);
            pays = true;
          }
        }
        if (pays) expected.paying_customers++;
        for (const m of p.refunds) {
          const at = START + m.day * DAY;
          await send('refund.created', { ...refund(`ch_${i}`, null, { amount: m.amount, created: at, customer }), currency: m.currency }, at);
          if (at >= from && at < to) {
            add(expected.revenue, m.currency, -m.amount);
            add(expected.refunds, m.currency, m.amount);
            expected.refund_count++;
          }
        }
      }
      const res = await t.post('/v1/reports/revenue', {
        from: new Date(from * 1000).toISOString(), to: new Date(to * 1000).toISOString(), interval: 'week', group_by: 'channel_category',
      }, ws.secret_key);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json() as { rows: Figures[]; totals: Figures; currencies: string[] };
      expect(body.totals).toMatchObject(expected);
      expect(body.currencies).toEqual(Object.keys(expected.revenue).sort());
      const summed = { revenue: {}, refunds: {}, refund_count: 0 } as Omit<Figures, 'paying_customers'>;
      for (const r of body.rows) {
        for (const [c, v] of Object.entries(r.revenue)) add(summed.revenue, c, v);
        for (const [c, v] of Object.entries(r.refunds)) add(summed.refunds, c, v);
        summed.refund_count += r.refund_count;
      }
      expect(summed).toEqual({ revenue: expected.revenue, refunds: expected.refunds, refund_count: expected.refund_count });
    }), { numRuns: tierRuns(10) });
  });
});
