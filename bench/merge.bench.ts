// What a person merge costs (POST /v1/persons/merge through the real app), for a merged-away person
// with 10 and with 10,000 events (its own, and as many through its visitor), on an in-memory DuckDB
// and, with chDB installed, on ClickHouse (events rewritten by a mutation). The data is written the
// way users do: events and page views through the API, 500 a batch; each merge takes a pair of
// persons prepared before the timed runs.
//   npx tsx bench/merge.bench.ts [--merges 8] [--engines duckdb,clickhouse]

import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { Bench } from 'tinybench';
import { buildApp } from '../src/http/app.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { type AnalyticsEngine, openStores } from '../src/store/open.js';
import { p50Of } from './support/tasks.js';

const { values: args } = parseArgs({ options: {
  merges: { type: 'string', default: '8' },
  engines: { type: 'string', default: 'duckdb,clickhouse' },
} });
const MERGES = Number(args.merges);
const SIZES = [10, 10_000];
const log = (line = '') => console.log(line);

async function startApp(engine: AnalyticsEngine) {
  const stores = await openStores({
    analyticsStore: engine, databasePath: ':memory:',
    clickhouse: engine === 'clickhouse' ? { path: ':memory:', database: `merge_bench_${Date.now()}` } : undefined,
  });
  const ws = await new Workspaces(stores.control).create('bench');
  const app = await buildApp({ stores, estimateBudgetMs: 60_000 }) as FastifyInstance;
  const post = async (url: string, body: unknown) => {
    const res = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ws.secret_key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    // analytics_delayed: stored, its rows inserted once ClickHouse acknowledges them (the merge waits for them).
    if (res.statusCode !== 200 && !(res.statusCode === 503 && res.json().error === 'analytics_delayed')) throw new Error(`${url}: ${res.body}`);
    return res.json();
  };
  return { post, close: async () => { await app.close(); await stores.close(); } };
}

type App = Awaited<ReturnType<typeof startApp>>;

/** Pair `i` of size `n`: `from_n_i` (n events, half its own and half its visitor's, and page views) and `into_n_i`. */
async function preparePair(app: App, n: number, i: number): Promise<void> {
  const user = `from_${n}_${i}`;
  await app.post('/v1/persons', { external_id: user, visitor_id: `v_${user}`, traits: { plan: 'pro' } });
  await app.post('/v1/persons', { email: `into_${n}_${i}@example.com`, traits: { plan: 'team' } });
  const day = 86_400_000;
  for (let sent = 0; sent < n; sent += 500) {
    await app.post('/v1/events', { batch: Array.from({ length: Math.min(500, n - sent) }, (_, k) => ({
      event_name: 'feature_used', ...((sent + k) % 2 === 0 ? { user_id: user } : { visitor_id: `v_${user}` }),
      timestamp: new Date(Date.UTC(2026, 0, 1) + ((sent + k) % 300) * day).toISOString(), properties: { n: k },
    })) });
  }
  await app.post('/v1/pageviews', { batch: Array.from({ length: Math.min(500, Math.ceil(n / 10)) }, () => ({ visitor_id: `v_${user}`, url: 'https://shop.example/' })) });
}

log(`Person merges, ${MERGES} merges per size; load average before: ${loadavg().map((l) => l.toFixed(1)).join(' / ')}`);
log('| engine | events of the merged person | p50 ms | mean ms | max ms |');
log('|---|---|---|---|---|');
for (const engine of args.engines.split(',') as AnalyticsEngine[]) {
  let app: App;
  try {
    app = await startApp(engine);
  } catch (err) {
    log(`| ${engine} | not run: ${(err as Error).message.split('\n')[0]} | | | |`);
    continue;
  }
  const bench = new Bench({ iterations: MERGES, time: 0, warmupIterations: 0, warmup: false });
  for (const n of SIZES) {
    for (let i = 0; i < MERGES; i++) await preparePair(app, n, i);
    let next = 0;
    bench.add(`${n}`, async () => {
      const i = next++;
      await app.post('/v1/persons/merge', { from: { external_id: `from_${n}_${i}` }, into: { email: `into_${n}_${i}@example.com` } });
    });
  }
  await bench.run();
  for (const n of SIZES) {
    const p50 = p50Of(bench, `${n}`);
    const r = bench.getTask(`${n}`)!.result!;
    const latency = r.state === 'completed' ? r.latency : null;
    log(`| ${engine} | ${n.toLocaleString('en-US')} | ${p50.toFixed(1)} | ${latency?.mean.toFixed(1)} | ${latency?.max.toFixed(1)} |`);
  }
  await app.close();
}
