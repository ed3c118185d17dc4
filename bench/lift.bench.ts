// The lift report (decisions §14) and a currency-converted revenue report, on data written the way
// users write it: page views and identified events through the HTTP routes, payments as signed
// Stripe notifications through the webhook route, an audience with a holdout through the audiences
// API; exchange rates as `npx audiences rates load` writes them (an ECB-layout CSV, parsed and written).
//   npx tsx bench/lift.bench.ts [--people 50000] [--engine duckdb|clickhouse] [--iterations 5]
// Every request goes through the app (Fastify's inject: the routes, validation and stores, no socket).
// Per run, in one tinybench run (so the machine's load falls alike on each): the lift without a
// model, with first_touch and linear, converted to USD; the revenue report per currency and in USD.

import { rmSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Stripe from 'stripe';
import { Bench } from 'tinybench';
import { buildApp } from '../src/http/app.js';
import { parseEcbRates } from '../src/reports/rates.js';
import { writeRates } from '../src/store/control/rates.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';
import { checkoutSession, invoice, notification } from '../test/support/stripe.js';
import { seededRandom } from '../test/support/random.js';
import { p50Of } from './support/tasks.js';

const { values: args } = parseArgs({ options: {
  people: { type: 'string', default: '50000' },
  engine: { type: 'string', default: 'duckdb' },
  iterations: { type: 'string', default: '5' },
} });
const people = Number(args.people);
const engine = args.engine === 'clickhouse' ? 'clickhouse' : 'duckdb';
const iterations = Number(args.iterations);
const WEBHOOK_SECRET = 'whsec_bench_lift';
const IN_FLIGHT = 32;
const NOW = new Date('2026-11-01T00:00:00Z');
const DAY = 86_400_000;
const YEAR_AGO = new Date(NOW.getTime() - 365 * DAY);
const log = (line: string) => console.log(line);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');
const stripe = new Stripe('sk_test_dummy');

const dbPath = join('data', 'bench', `lift-${engine}-${people}.duckdb`);
rmSync(dbPath, { force: true });
rmSync(`${dbPath}.wal`, { force: true });
const stores = await openStores({
  analyticsStore: engine, databasePath: dbPath,
  ...(engine === 'clickhouse' ? { clickhouse: { path: join('data', 'bench', `lift-${people}.chdb`), database: `lift_${Date.now()}` } } : {}),
});
const ws = await new Workspaces(stores.control).create('bench', { stripe_webhook_secret: WEBHOOK_SECRET });
const app = await buildApp({ stores, estimateBudgetMs: 600_000, rateLimits: { ingestPerMinute: 1e9, notificationsPerMinute: 1e9, perMinute: 1e9 } });
const call = async (method: 'POST' | 'GET', url: string, body?: unknown, key = ws.secret_key) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { payload: body as object }) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return res.json();
};
const inBatches = async (count: number, size: number, send: (from: number, to: number) => Promise<unknown>) => {
  for (let from = 0; from < count; from += size) await send(from, Math.min(count, from + size));
};

log(`machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; engine ${engine}; load ${load()} (shared with 5 other helpers' sessions)`);
const random = seededRandom(38);
const at = () => new Date(YEAR_AGO.getTime() + Math.floor(random() * 360 * DAY));
const REFERRERS = ['https://www.google.com/', 'https://chatgpt.com/', null, 'https://www.facebook.com/', null];
const t0 = performance.now();

// Two page views a person, from channels that differ, over the year; then each visitor identified.
await inBatches(people, 250, (from, to) => call('POST', '/v1/pageviews', {
  batch: Array.from({ length: to - from }, (_, i) => from + i).flatMap((p) => [0, 1].map((k) => ({
    visitor_id: `v${p}`, url: `https://shop.example/${k === 0 && p % 3 === 0 ? '?utm_source=newsletter&utm_medium=email&utm_campaign=c' : 'pricing'}`,
    referrer: REFERRERS[(p + k) % REFERRERS.length], timestamp: at().toISOString(),
  }))),
}, ws.publishable_key));
await inBatches(people, 500, (from, to) => call('POST', '/v1/events', {
  batch: Array.from({ length: to - from }, (_, i) => from + i).map((p) => ({ event_name: 'signup', user_id: `u${p}`, email: `p${p}@example.com`, visitor_id: `v${p}`, timestamp: YEAR_AGO.toISOString() })),
}));
const written = performance.now();
log(`${(2 * people).toLocaleString('en-US')} page views and ${people.toLocaleString('en-US')} identified people through the routes in ${((written - t0) / 1000).toFixed(0)} s`);

// One person in ten pays: a checkout, then three monthly invoices, in USD, EUR or GBP; signed notifications.
const CURRENCIES = ['usd', 'usd', 'eur', 'gbp'];
let notifications = 0;
const deliver = async (object: ReturnType<typeof notification>) => {
  const payload = JSON.stringify(object);
  const res = await app.inject({ method: 'POST', url: `/v1/webhooks/stripe/${ws.workspace_id}`, payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) } });
  if (res.statusCode !== 200) throw new Error(res.body);
  notifications++;
};
const payers = Array.from({ length: Math.ceil(people / 10) }, (_, i) => i * 10);
const payer = async (p: number) => {
  const customer = `cus_${p}`;
  const currency = CURRENCIES[p % CURRENCIES.length]!;
  const first = at();
  await deliver(notification('checkout.session.completed', checkoutSession(customer, { tr_user_id: `u${p}` }, `p${p}@example.com`,
    { mode: 'payment', amount: 1000 + (p % 97) * 50, currency, created: Math.floor(first.getTime() / 1000) })));
  for (let m = 1; m <= 3; m++) {
    const paid = Math.floor(Math.min(NOW.getTime() - DAY, first.getTime() + m * 30 * DAY) / 1000);
    await deliver(notification('invoice.paid', invoice(customer, { amount: 2000 + (p % 13) * 100, currency, paid_at: paid, created: paid })));
  }
};
// Customers in flight together, as a processor's retries and bursts deliver them (each one's in order).
await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
  for (let p = payers.shift(); p !== undefined; p = payers.shift()) await payer(p);
}));
log(`${notifications.toLocaleString('en-US')} signed notifications through the webhook route in ${((performance.now() - written) / 1000).toFixed(0)} s`);

// Rates of every weekday of the year, as the ECB's CSV has them, written as `rates load` writes them.
const lines = ['Date,USD,GBP,'];
for (let d = NOW.getTime(); d >= YEAR_AGO.getTime() - 7 * DAY; d -= DAY) {
  const day = new Date(d);
  if (day.getUTCDay() === 0 || day.getUTCDay() === 6) continue;
  lines.push(`${day.toISOString().slice(0, 10)},${(1.05 + random() * 0.1).toFixed(4)},${(0.83 + random() * 0.05).toFixed(5)},`);
}
await stores.analytics.unit((work) => writeRates(work, ws.workspace_id, parseEcbRates(lines.join('\n'))));

// The audience: everyone who viewed a page, 10 % held out.
const audience = await call('POST', '/v1/audiences', {
  name: 'visitors', criteria_json: { version: 1, root: { source: 'pageview', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
  splits: [{ name: 'holdout', percent: 10 }, { name: 'treatment', percent: 90 }],
});
const refreshed = await call('POST', `/v1/audiences/${audience.id}/refresh`);
log(`audience of ${Number(refreshed.member_count).toLocaleString('en-US')} members, 10 % held out; load ${load()}\n`);

const range = { from: YEAR_AGO.toISOString().slice(0, 10), to: NOW.toISOString().slice(0, 10) };
const lift = (body: Record<string, unknown>) => call('POST', '/v1/reports/lift', { audience_id: audience.id, ...range, ...body });
const revenue = (body: Record<string, unknown>) => call('POST', '/v1/reports/revenue', { ...range, interval: 'month', group_by: 'channel_category', ...body });
const tasks: [string, () => Promise<{ hit_limit: boolean }>][] = [
  ['lift, all revenue, per currency', () => lift({})],
  ['lift, all revenue, in USD', () => lift({ currency: 'usd' })],
  ['lift, first_touch, per currency', () => lift({ model: 'first_touch' })],
  ['lift, linear, per currency', () => lift({ model: 'linear' })],
  ['lift, linear, in USD', () => lift({ model: 'linear', currency: 'usd' })],
  ['revenue, first_touch, per currency', () => revenue({})],
  ['revenue, first_touch, in USD', () => revenue({ currency: 'usd' })],
  ['revenue, linear, per currency', () => revenue({ model: 'linear' })],
  ['revenue, linear, in USD', () => revenue({ model: 'linear', currency: 'usd' })],
];
for (const [name, task] of tasks) if ((await task()).hit_limit) throw new Error(`${name}: over the budget`);
const bench = new Bench({ iterations, time: 0, warmupIterations: 1 });
for (const [name, task] of tasks) bench.add(name, async () => { await task(); });
await bench.run();
log(`| ${engine}: report over a year (${range.from} to ${range.to}) through the routes | p50 ms |`);
log('|---|---:|');
for (const [name] of tasks) log(`| ${name} | ${p50Of(bench, name).toFixed(1)} |`);
const ratio = (a: string, b: string) => (p50Of(bench, a) / p50Of(bench, b)).toFixed(2);
log(`\nin USD / per currency, same run: lift all revenue ${ratio('lift, all revenue, in USD', 'lift, all revenue, per currency')}, lift linear ${ratio('lift, linear, in USD', 'lift, linear, per currency')}, `
  + `revenue first_touch ${ratio('revenue, first_touch, in USD', 'revenue, first_touch, per currency')}, revenue linear ${ratio('revenue, linear, in USD', 'revenue, linear, per currency')}; load ${load()}`);
await app.close();
await stores.close();
