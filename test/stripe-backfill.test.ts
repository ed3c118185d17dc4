// The Stripe backfill (decisions §14) against a loopback double of Stripe's list API
// (test/support/stripe-api.ts: the spec's parameters, auth, pagination, 429s), serving objects built
// from Stripe's published fixtures (test/fixtures/stripe): pages of two, rate limits, a failure
// mid-run and a resume; the same history sent as signed notifications gives the same revenue report,
// and a history partly notified before and after a backfill counts each payment once.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { Backfill, type BackfillOptions, stripeClient } from '../src/attribution/backfill.js';
import { PaymentWebhook } from '../src/attribution/webhook.js';
import { Ingest } from '../src/ingest/ingest.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { startStripeApi, type StripeApiData, type StripeApiDouble } from './support/stripe-api.js';
import {
  charge, checkoutSession, customer, deliver, invoice, invoicePayment, type Notification, notification, paymentIntent, refund, type StripeObject, subscription,
} from './support/stripe.js';

const KEY = 'rk_live_backfill_double';
const T0 = Date.parse('2025-09-01T00:00:00Z') / 1000;
const DAY = 86_400;
const iso = (s: number) => new Date(s * 1000).toISOString();

const live = <T extends StripeObject>(o: T, extra: Record<string, unknown> = {}): T => Object.assign(o, { livemode: true }, extra);

/**
 * A workspace's history: a customer's one-time payment refunded in part, a guest's payment in euros,
 * and a subscription (canceled since, so only status=all lists it) with two paid invoices. As the
 * list API shows the objects now, and as the notifications Stripe sent along the way.
 */
function history(): { data: StripeApiData; notifications: Notification[] } {
  const cusA = live(customer('cus_a', { email: 'ada@example.com' }), { created: T0 - DAY });
  const cusB = live(customer('cus_b', { email: 'bob@example.com' }), { created: T0 - 20 * DAY });
  const csA = live(checkoutSession('cus_a', { tr_user_id: 'u_a', tr_visitor_id: 'v_a' }, 'ada@example.com',
    { id: 'cs_a', mode: 'payment', payment_intent: 'pi_a', amount: 5000, created: T0 }));
  const piA = live(paymentIntent('cus_a', {}, { id: 'pi_a', latest_charge: 'ch_a', amount: 5000, created: T0 }));
  const chA = live(charge('cus_a', { id: 'ch_a', payment_intent: 'pi_a', amount: 5000, created: T0 + 60 }));
  const chARefunded = live(charge('cus_a', { id: 'ch_a', payment_intent: 'pi_a', amount: 5000, amount_refunded: 1000, created: T0 + 60 }));
  const reA = live(refund('ch_a', 'pi_a', { id: 're_a', amount: 1000, created: T0 + 10 * DAY, customer: 'cus_a' }));
  const csG = live(checkoutSession(null, { tr_visitor_id: 'v_g' }, 'guest@example.com',
    { id: 'cs_g', mode: 'payment', payment_intent: 'pi_g', amount: 3000, currency: 'eur', created: T0 + 2 * DAY }));
  const piG = live(paymentIntent(null, {}, { id: 'pi_g', latest_charge: 'ch_g', amount: 3000, currency: 'eur', created: T0 + 2 * DAY }));
  const chG = live(charge(null, { id: 'ch_g', payment_intent: 'pi_g', amount: 3000, created: T0 + 2 * DAY + 30 }), { currency: 'eur' });
  const subActive = live(subscription('cus_b', { id: 'sub_b', metadata: { tr_user_id: 'u_b' }, created: T0 - 20 * DAY }));
  const subCanceled = live(subscription('cus_b', { id: 'sub_b', status: 'canceled', metadata: { tr_user_id: 'u_b' }, created: T0 - 20 * DAY }),
    { canceled_at: T0 + 30 * DAY, ended_at: T0 + 30 * DAY });
  const paidB = [T0 - 20 * DAY + 100, T0 + 10 * DAY + 100];
  const invoices = paidB.map((at, i) => live(invoice('cus_b', { id: `in_b${i}`, amount: 2000, subscription: 'sub_b', created: at - 100, paid_at: at })));
  const pis = paidB.map((at, i) => live(paymentIntent('cus_b', {}, { id: `pi_b${i}`, latest_charge: `ch_b${i}`, amount: 2000, created: at })));
  const charges = paidB.map((at, i) => live(charge('cus_b', { id: `ch_b${i}`, payment_intent: `pi_b${i}`, amount: 2000, created: at })));
  const paying = paidB.map((_, i) => invoicePayment(`in_b${i}`, `pi_b${i}`));

  const event = (type: string, object: StripeObject, at: number) => notification(type, object, at, `evt_${type}_${object.id}_${at}`);
  const notifications = [
    event('customer.created', cusB, T0 - 20 * DAY), event('customer.subscription.created', subActive, T0 - 20 * DAY),
    ...paidB.flatMap((at, i) => [
      event('invoice.paid', invoices[i]!, at), event('payment_intent.succeeded', pis[i]!, at), event('charge.succeeded', charges[i]!, at),
      event('invoice_payment.paid', paying[i]!, at),
    ]),
    event('customer.created', cusA, T0 - DAY), event('checkout.session.completed', csA, T0 + 60), event('payment_intent.succeeded', piA, T0 + 60),
    event('charge.succeeded', chA, T0 + 60),
    event('checkout.session.completed', csG, T0 + 2 * DAY + 30), event('payment_intent.succeeded', piG, T0 + 2 * DAY + 30), event('charge.succeeded', chG, T0 + 2 * DAY + 30),
    event('refund.created', reA, T0 + 10 * DAY), event('charge.refunded', chARefunded, T0 + 10 * DAY),
    event('customer.subscription.deleted', subCanceled, T0 + 30 * DAY),
  ].sort((a, b) => a.created - b.created);
  const data: StripeApiData = {
    customers: [cusA, cusB], sessions: [csA, csG], paymentIntents: [piA, piG, ...pis], subscriptions: [subCanceled], invoices,
    invoicePayments: paying, charges: [chARefunded, chG, ...charges], refunds: [reA],
  };
  return { data, notifications };
}

let t: TestApp;
let api: StripeApiDouble;
const { data, notifications } = history();

const ok = (res: { statusCode: number; body: string }) => expect(res.statusCode, res.body).toBe(200);

/** The visitors' page views and the sign-ups that link them to u_a and u_b. */
async function visits(): Promise<void> {
  const views = [['v_a', 'https://www.google.com/', T0 - 5 * DAY], ['v_g', 'https://chatgpt.com/', T0 - 3 * DAY], ['v_b', null, T0 - 25 * DAY]] as const;
  for (const [visitor_id, referrer, at] of views) {
    ok(await t.post('/v1/pageviews', {
      visitor_id, timestamp: iso(at), url: `https://example.com/pricing${referrer ? '' : '?utm_source=news&utm_medium=email'}`, ...(referrer ? { referrer } : {}),
    }, t.ws.publishable_key));
  }
  for (const [user_id, visitor_id] of [['u_a', 'v_a'], ['u_b', 'v_b']]) {
    ok(await t.post('/v1/events', { event_name: 'signup', user_id, visitor_id, timestamp: iso(T0 - 30 * DAY) }));
  }
}

async function send(ns: Notification[]): Promise<void> {
  for (const n of ns) ok(await deliver(t, n));
}

function backfill(options: Partial<BackfillOptions> = {}) {
  const webhook = new PaymentWebhook(t.stores, new Ingest(t.stores));
  return new Backfill(webhook, t.stores.control).run(t.ws.workspace_id, stripeClient(KEY, api.url), {
    since: null, mode: 'live', pageSize: 2, rateLimitWaitMs: 1, ...options,
  });
}

/** The revenue reports of the history's months, by first touch and by a model splitting each payment. */
async function reports(models = ['first_touch']): Promise<unknown[]> {
  const out = [];
  for (const model of models) {
    const res = await t.post('/v1/reports/revenue', { from: '2025-08-01', to: '2025-11-01', interval: 'month', group_by: 'channel_category', model });
    ok(res);
    out.push(res.json());
  }
  return out;
}

describe.each(ENGINES_WITH_POSTGRES)('stripe backfill on %s', (engine) => {
  let notified: unknown[];

  beforeAll(async () => {
    // A budget no report of this file reaches on a loaded machine: the figures are what is tested here.
    [t, api] = await Promise.all([startTestApp({ engine, budgetMs: 60_000 }), startStripeApi(KEY, data)]);
    await visits();
    await send(notifications);
    notified = await reports(['first_touch', 'linear']);
  });
  beforeEach(async () => {
    await t.freshWorkspace();
    await visits();
  });
  afterAll(() => Promise.all([t.close(), api.close()]));

  it('the notified history reports what the objects hold: $40 + 2 × $20 − $10 refunded, €30', () => {
    expect((notified[0] as { totals: unknown }).totals).toEqual({
      revenue: { eur: 3000, usd: 8000 }, refunds: { eur: 0, usd: 1000 }, refund_count: 1, paying_customers: 3, new_paying_customers: 3,
    });
  });

  it('pages of two through 429s and a failure, resumed where it stopped: the same reports as the notifications gave', async () => {
    const first = api.requests.length;
    api.faultAt(first + 2, 'rate_limit');
    api.faultAt(first + 3, 'rate_limit');
    api.faultAt(first + 7, 'fail');
    await expect(backfill()).rejects.toThrow(/unknown error/);
    // The failed request asked for the page after the last one applied: the resume asks for it again, first.
    const failed = api.requests[first + 6]!;
    const result = await backfill();
    expect(result.complete).toBe(true);
    expect(api.requests[first + 7]).toEqual(failed);
    expect(await reports(['first_touch', 'linear'])).toEqual(notified);
    // Read to the end, the cursors are gone: a second backfill reads everything again, and changes nothing.
    expect((await backfill()).types.every((ty) => ty.done && ty.read > 0)).toBe(true);
    expect(await reports()).toEqual(notified.slice(0, 1));
  });

  it('notifications before and after a backfill of the same objects: each payment and refund counted once', async () => {
    const half = Math.floor(notifications.length / 2);
    await send(notifications.slice(0, half));
    expect((await backfill({ pageSize: 100 })).complete).toBe(true);
    await send(notifications.slice(half));
    expect(await reports()).toEqual(notified.slice(0, 1));
  });

  it('--since leaves out the objects created before it', async () => {
    expect((await backfill({ since: '2025-09-05' })).complete).toBe(true);
    const [report] = await reports() as { totals: unknown }[];
    // The second invoice (its payment intent and charge too), and the refund, which names its customer.
    expect(report!.totals).toMatchObject({ revenue: { usd: 1000 }, refunds: { usd: 1000 }, paying_customers: 1 });
  });

  it('a key the API refuses fails the backfill with Stripe\'s message, nothing read', async () => {
    const webhook = new PaymentWebhook(t.stores, new Ingest(t.stores));
    await expect(new Backfill(webhook, t.stores.control).run(t.ws.workspace_id, stripeClient('rk_live_other', api.url), { since: null, mode: 'live' }))
      .rejects.toThrow(/Invalid API Key/);
  });
});

describe('the Stripe list API double refuses what Stripe refuses', () => {
  let double: StripeApiDouble;
  beforeAll(async () => { double = await startStripeApi(KEY, data); });
  afterAll(() => double.close());
  const get = (path: string, key: string | null = KEY) => fetch(`${double.url}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

  it('answers 401 without the key, 400 to a parameter the endpoint does not take, a limit over 100 or an unknown starting_after', async () => {
    expect((await get('/v1/customers', null)).status).toBe(401);
    expect(await (await get('/v1/customers?status=all')).json()).toMatchObject({ error: { code: 'parameter_unknown', param: 'status' } });
    expect((await get('/v1/charges?limit=101')).status).toBe(400);
    expect(await (await get('/v1/refunds?starting_after=re_nope')).json()).toMatchObject({ error: { code: 'resource_missing' } });
  });

  it('lists subscriptions without the canceled ones unless status=all', async () => {
    expect((await (await get('/v1/subscriptions')).json()).data).toEqual([]);
    expect((await (await get('/v1/subscriptions?status=all')).json()).data.map((s: { id: string }) => s.id)).toEqual(['sub_b']);
  });
});

describe('the command line on a database file: workspace create, stripe backfill, rates load, report --currency', () => {
  let double: StripeApiDouble;
  const dir = mkdtempSync(join(tmpdir(), 'backfill-cli-'));
  const file = join(dir, 'service.duckdb');
  beforeAll(async () => { double = await startStripeApi(KEY, data); });
  afterAll(async () => {
    await double.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
    let [out, err] = ['', ''];
    const sink = (append: (s: string) => void) => new Writable({ write(chunk: Buffer, _e, done) { append(chunk.toString()); done(); } });
    const code = await main(args, { stdout: sink((x) => { out += x; }), stderr: sink((x) => { err += x; }), env: { ...process.env, STRIPE_API_BASE: double.url } });
    return { code, out, err };
  }

  it('reads the history through STRIPE_API_BASE and reports it in USD at the day\'s rates', async () => {
    const created = await cli('workspace', 'create', 'shop', '--data', file, '--json');
    expect(created.code, created.err).toBe(0);
    const ws = JSON.parse(created.out).workspace_id as string;
    const wrongMode = await cli('stripe', 'backfill', 'shop', '--api-key', 'rk_test_x', '--data', file);
    expect([wrongMode.code, wrongMode.err]).toEqual([1, expect.stringMatching(/counts Stripe's live mode/)]);
    const run = await cli('stripe', 'backfill', 'shop', '--api-key', KEY, '--data', file, '--json');
    expect(run.code, run.err).toBe(0);
    expect(JSON.parse(run.out)).toMatchObject({ workspace_id: ws, complete: true });
    // A USD rate for each weekday of August and September 2025, in the ECB's layout (newest first).
    const days = Array.from({ length: 61 }, (_, i) => new Date(Date.UTC(2025, 7, 1 + i))).filter((d) => d.getUTCDay() % 6 !== 0).reverse();
    const usd = (d: Date) => (1.1 + d.getUTCDate() / 1000).toFixed(4);
    writeFileSync(join(dir, 'rates.csv'), `Date,USD,JPY,\n${days.map((d) => `${d.toISOString().slice(0, 10)},${usd(d)},N/A,`).join('\n')}\n`);
    const loaded = await cli('rates', 'load', join(dir, 'rates.csv'), '--data', file);
    expect(loaded.code, loaded.err).toBe(0);
    const report = await cli('report', '--data', file, '--workspace', ws, '--from', '2025-08-01', '--to', '2025-10-01', '--currency', 'usd', '--json');
    expect(report.code, report.err).toBe(0);
    // $80.00 net in USD, and the guest's €30.00 at the rate of its day (2025-09-03, a Wednesday).
    const eurToUsd = Math.floor(3000 * Number(usd(new Date(Date.UTC(2025, 8, 3)))) * 100 / 100 + 0.5);
    expect(JSON.parse(report.out).totals.revenue).toEqual({ usd: 8000 + eurToUsd });
  });
});
