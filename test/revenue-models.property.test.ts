// Every attribution model hands out exactly the money (decisions §14): for random page views,
// payments and refunds sent through the API, each per-payment model's rows equal a plain TypeScript
// reference of it (test/support/attribution-reference.ts), and every model's totals, first_touch's
// included, are the payments minus the refunds sent, on every engine.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWorkspace } from '../src/store/control/workspaces.js';
import { type Model, type Money, referenceRevenue, type Touch } from './support/attribution-reference.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { checkoutSession, deliver, notification, refund, sendPayment } from './support/stripe.js';
import { tierRuns, withinTestTimeout } from './support/tier.js';

const START = Date.parse('2025-09-01T00:00:00Z') / 1000;
const DAY = 86_400;
/** Referrers and the channel_category each gets (docs/channels.md). */
const REFERRERS: [string | null, string][] = [[null, 'Direct'], ['https://www.google.com/', 'Organic Search'], ['https://chatgpt.com/', 'AI']];
const MODELS: Model[] = ['last_touch', 'last_non_direct', 'linear', 'position_based', 'time_decay'];

const money = fc.record({ amount: fc.integer({ min: 1, max: 100_000 }), currency: fc.constantFrom('usd', 'eur'), day: fc.integer({ min: 0, max: 59 }) });
const payer = fc.record({
  linked: fc.boolean(),
  /** Page views: a referrer and a day from 100 days before START to the end of the payments. */
  pageviews: fc.array(fc.record({ referrer: fc.nat(REFERRERS.length - 1), day: fc.integer({ min: -100, max: 59 }), second: fc.nat(DAY - 1) }), { maxLength: 6 }),
  payments: fc.array(fc.record({ oneTime: fc.boolean(), money }), { minLength: 1, maxLength: 3 }),
  refunds: fc.array(money, { maxLength: 2 }),
});
const settings = fc.record({ lookbackDays: fc.integer({ min: 1, max: 120 }), halfLifeDays: fc.integer({ min: 1, max: 30 }), fromDay: fc.integer({ min: 0, max: 30 }) });

interface Row { bucket: string; group: string; revenue: Record<string, number> }
interface Answer { hit_limit: boolean; rows: Row[]; totals: { revenue: Record<string, number>; refunds: Record<string, number>; refund_count: number } }

describe.each(ENGINES)('attribution models on %s', (engine) => {
  let t: TestApp;
  // A budget for a shared machine: each report must answer, however busy the cores.
  beforeAll(async () => { t = await startTestApp({ engine, budgetMs: 120_000 }); });
  afterAll(() => t.close());

  it('give each model\'s reference rows, and totals equal to the money sent whatever the model', async () => {
    let run = 0;
    await fc.assert(fc.asyncProperty(fc.array(payer, { minLength: 1, maxLength: 4 }), settings, async (payers, s) => {
      const ws: CreatedWorkspace = await t.workspaces.create(`models ${run++}`);
      const send = async (type: string, object: Record<string, unknown>, at: number) => {
        const res = await deliver(t, notification(type, object, at), { workspaceId: ws.workspace_id, secret: ws.stripe_webhook_secret });
        expect(res.statusCode, res.body).toBe(200);
      };
      const sent: Money[] = [];
      const touchesOf = new Map<string, Touch[]>();
      for (const [i, p] of payers.entries()) {
        const customer = `cus_${i}`;
        if (p.linked) {
          const touches: Touch[] = [];
          for (const [k, v] of p.pageviews.entries()) {
            // Distinct times: the order of a payer's touches never rests on their ids.
            const ms = (START + v.day * DAY + v.second) * 1000 + k;
            const [referrer, group] = REFERRERS[v.referrer]!;
            const res = await t.post('/v1/pageviews', {
              visitor_id: `v_${i}`, url: 'https://shop.example/', timestamp: new Date(ms).toISOString(), ...(referrer ? { referrer } : {}),
            }, ws.publishable_key);
            expect(res.statusCode, res.body).toBe(200);
            touches.push({ ms, id: String(k), group, direct: group === 'Direct' });
          }
          touchesOf.set(customer, touches);
          await send('checkout.session.completed', checkoutSession(customer, { tr_visitor_id: `v_${i}` }, null, { created: START - 200 * DAY }), START - 200 * DAY);
        }
        for (const [j, { oneTime, money: m }] of p.payments.entries()) {
          const at = START + m.day * DAY + j;
          await sendPayment(send, customer, { oneTime, ...m }, at);
          sent.push({ customer, ms: at * 1000, amount: m.amount, currency: m.currency, payment: true });
        }
        for (const m of p.refunds) {
          const at = START + m.day * DAY;
          await send('refund.created', { ...refund(`ch_${i}`, null, { amount: m.amount, created: at, customer }), currency: m.currency }, at);
          sent.push({ customer, ms: at * 1000, amount: m.amount, currency: m.currency, payment: false });
        }
      }
      const [from, to] = [(START + s.fromDay * DAY) * 1000, (START + 60 * DAY) * 1000];
      const totals = { revenue: {} as Record<string, number>, refunds: {} as Record<string, number>, refund_count: 0 };
      for (const m of sent.filter((x) => x.ms >= from && x.ms < to)) {
        totals.revenue[m.currency] = (totals.revenue[m.currency] ?? 0) + (m.payment ? m.amount : -m.amount);
        totals.refunds[m.currency] = (totals.refunds[m.currency] ?? 0) + (m.payment ? 0 : m.amount);
        if (!m.payment) totals.refund_count++;
      }
      const report = async (body: Record<string, unknown>): Promise<Answer> => {
        const res = await t.post('/v1/reports/revenue', {
          from: new Date(from).toISOString(), to: new Date(to).toISOString(), interval: 'month', group_by: 'channel_category', ...body,
        }, ws.secret_key);
        expect(res.statusCode, res.body).toBe(200);
        const answer = res.json() as Answer;
        expect(answer.hit_limit).toBe(false);
        return answer;
      };
      expect((await report({})).totals).toMatchObject(totals);
      for (const model of MODELS) {
        const answer = await report({ model, lookback_days: s.lookbackDays, ...(model === 'time_decay' ? { half_life_days: s.halfLifeDays } : {}) });
        expect(answer.totals, model).toMatchObject(totals);
        const expected = referenceRevenue(sent, touchesOf, { model, ...s, from, to });
        const rows = new Map(answer.rows.map((r) => [`${r.bucket} ${r.group}`, r.revenue]));
        expect(rows, model).toEqual(expected);
      }
    }), { numRuns: tierRuns(10), plugins: withinTestTimeout() });
  });
});
