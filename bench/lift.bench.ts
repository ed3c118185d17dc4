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
import { Bench } from 'tinybench';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';
import { benchApp, call as callApp, writeRevenueSlice, writeYearOfRates } from './support/revenue-api.js';
import { p50Of } from './support/tasks.js';

const { values: args } = parseArgs({ options: {
  people: { type: 'string', default: '50000' },
  engine: { type: 'string', default: 'duckdb' },
  iterations: { type: 'string', default: '5' },
} });
const people = Number(args.people);
const engine = args.engine === 'clickhouse' ? 'clickhouse' : 'duckdb';
const iterations = Number(args.iterations);
const NOW = new Date('2026-11-01T00:00:00Z');
const DAY = 86_400_000;
const YEAR_AGO = new Date(NOW.getTime() - 365 * DAY);
const log = (line: string) => console.log(line);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');

const dbPath = join('data', 'bench', `lift-${engine}-${people}.duckdb`);
rmSync(dbPath, { force: true });
rmSync(`${dbPath}.wal`, { force: true });
const stores = await openStores({
  analyticsStore: engine, databasePath: dbPath,
  ...(engine === 'clickhouse' ? { clickhouse: { path: join('data', 'bench', `lift-${people}.chdb`), database: `lift_${Date.now()}` } } : {}),
});
const ws = await new Workspaces(stores.control).create('bench');
const app = await benchApp(stores);
const call = (method: 'POST' | 'GET', url: string, body?: unknown) => callApp(app, method, url, ws.secret_key, body);

log(`machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; engine ${engine}; load ${load()}`);
await writeRevenueSlice(app, ws, { people, now: NOW, prefix: '', log });

await writeYearOfRates(stores, ws.workspace_id, NOW);

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
