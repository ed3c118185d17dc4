// Revenue data written the way users write it: page views (referrers and UTM tags, so several
// channels) and identifying events through the HTTP routes, payments as signed Stripe notifications
// through the webhook route, all through the real app (Fastify's inject: routes, validation and
// stores, no socket). The lift bench writes its whole dataset so; the revenue bench a slice beside
// its import.

import Stripe from 'stripe';
import { buildApp } from '../../src/http/app.js';
import { parseEcbRates } from '../../src/reports/rates.js';
import { writeRates } from '../../src/store/control/rates.js';
import type { CreatedWorkspace } from '../../src/store/control/workspaces.js';
import type { Stores } from '../../src/store/open.js';
import { seededRandom } from '../../test/support/random.js';
import { checkoutSession, invoice, notification } from '../../test/support/stripe.js';

const DAY = 86_400_000;
const REFERRERS = ['https://www.google.com/', 'https://chatgpt.com/', null, 'https://www.facebook.com/', null];
const CURRENCIES = ['usd', 'usd', 'eur', 'gbp'];
/** Customers in flight together, as a processor's retries and bursts deliver them (each one's in order). */
const IN_FLIGHT = 32;
const stripe = new Stripe('sk_test_dummy');

export interface RevenueSlice {
  people: number;
  /** The end of the year the page views and payments fall in. */
  now: Date;
  /** Prefixes every id written (visitors, users, emails, customers, invoices), apart from an imported dataset's. */
  prefix: string;
  log: (line: string) => void;
}

export type App = Awaited<ReturnType<typeof buildApp>>;

/** An app over `stores` whose rate limits never stop a bench's writes. */
export const benchApp = (stores: Stores): Promise<App> =>
  buildApp({ stores, estimateBudgetMs: 600_000, rateLimits: { ingestPerMinute: 1e9, notificationsPerMinute: 1e9, perMinute: 1e9 } });

/** Calls a route with the workspace's key and answers its JSON (untyped, as inject's); a status past 2xx throws. */
export async function call(app: App, method: 'POST' | 'GET', url: string, key: string, body?: unknown) {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { payload: body as object }) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return res.json();
}

const inBatches = async (count: number, size: number, send: (from: number, to: number) => Promise<unknown>) => {
  for (let from = 0; from < count; from += size) await send(from, Math.min(count, from + size));
};

/**
 * Two page views a person from channels that differ over the year, each visitor identified by an
 * event, and one person in ten paying (a checkout, then three monthly invoices, in USD, EUR or GBP)
 * by notifications signed with the workspace's webhook secret. The same calls every time (seeded).
 */
export async function writeRevenueSlice(app: App, ws: CreatedWorkspace, slice: RevenueSlice): Promise<void> {
  const { people, now, prefix, log } = slice;
  const yearAgo = now.getTime() - 365 * DAY;
  const random = seededRandom(38);
  const at = () => new Date(yearAgo + Math.floor(random() * 360 * DAY));
  const t0 = performance.now();
  await inBatches(people, 250, (from, to) => call(app, 'POST', '/v1/pageviews', ws.publishable_key, {
    batch: Array.from({ length: to - from }, (_, i) => from + i).flatMap((p) => [0, 1].map((k) => ({
      visitor_id: `${prefix}v${p}`, url: `https://shop.example/${k === 0 && p % 3 === 0 ? '?utm_source=newsletter&utm_medium=email&utm_campaign=c' : 'pricing'}`,
      referrer: REFERRERS[(p + k) % REFERRERS.length], timestamp: at().toISOString(),
    }))),
  }));
  await inBatches(people, 500, (from, to) => call(app, 'POST', '/v1/events', ws.secret_key, {
    batch: Array.from({ length: to - from }, (_, i) => from + i).map((p) => ({
      event_name: 'signup', user_id: `${prefix}u${p}`, email: `${prefix}p${p}@example.com`, visitor_id: `${prefix}v${p}`, timestamp: new Date(yearAgo).toISOString(),
    })),
  }));
  const written = performance.now();
  log(`${(2 * people).toLocaleString('en-US')} page views and ${people.toLocaleString('en-US')} identified people through the routes in ${((written - t0) / 1000).toFixed(0)} s`);

  let notifications = 0;
  const deliver = async (object: ReturnType<typeof notification>) => {
    const payload = JSON.stringify(object);
    const res = await app.inject({ method: 'POST', url: `/v1/webhooks/stripe/${ws.workspace_id}`, payload,
      headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: ws.stripe_webhook_secret }) } });
    if (res.statusCode !== 200) throw new Error(res.body);
    notifications++;
  };
  const payer = async (p: number, first: Date) => {
    const customer = `cus_${prefix}${p}`;
    const currency = CURRENCIES[p % CURRENCIES.length]!;
    const created = Math.floor(first.getTime() / 1000);
    await deliver(notification('checkout.session.completed', checkoutSession(customer, { tr_user_id: `${prefix}u${p}` }, `${prefix}p${p}@example.com`,
      { id: `cs_${prefix}${p}`, mode: 'payment', amount: 1000 + (p % 97) * 50, currency, created, payment_intent: `pi_${prefix}${p}` }), created, `evt_${prefix}${p}_0`));
    for (let m = 1; m <= 3; m++) {
      const paid = Math.floor(Math.min(now.getTime() - DAY, first.getTime() + m * 30 * DAY) / 1000);
      await deliver(notification('invoice.paid', invoice(customer, { id: `in_${prefix}${p}_${m}`, amount: 2000 + (p % 13) * 100, currency, paid_at: paid, created: paid }),
        paid, `evt_${prefix}${p}_${m}`));
    }
  };
  // Each payer's first payment drawn in order, before any is sent: the same days whatever the delivery order.
  const payers = Array.from({ length: Math.ceil(people / 10) }, (_, i) => ({ p: i * 10, first: at() }));
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    for (let next = payers.shift(); next !== undefined; next = payers.shift()) await payer(next.p, next.first);
  }));
  log(`${notifications.toLocaleString('en-US')} signed notifications through the webhook route in ${((performance.now() - written) / 1000).toFixed(0)} s`);
}

/** Rates of every weekday of the 400 days before `now` (USD and GBP per EUR), as the ECB's CSV has them, written as `rates load` writes them. */
export async function writeYearOfRates(stores: Stores, workspaceId: string, now: Date): Promise<void> {
  const random = seededRandom(14);
  const lines = ['Date,USD,GBP,'];
  for (let d = now.getTime(); d >= now.getTime() - 400 * DAY; d -= DAY) {
    const day = new Date(d);
    if (day.getUTCDay() === 0 || day.getUTCDay() === 6) continue;
    lines.push(`${day.toISOString().slice(0, 10)},${(1.05 + random() * 0.1).toFixed(4)},${(0.83 + random() * 0.05).toFixed(5)},`);
  }
  await stores.analytics.unit((work) => writeRates(work, workspaceId, parseEcbRates(lines.join('\n'))));
}
