// Privacy deletes on a dataset written through the API, per engine: the time from submitting to
// `done` of deleting 1,000 persons (one request) and then 10,000 (two requests of 5,000), and the
// latency of estimates and of ingest batches meanwhile against before (p50/p99).
//   npx tsx bench/privacy-deletes.bench.ts [--persons 30000] [--events 5] [--engines duckdb,clickhouse]
// Each person has `--events` events (in batches of 500, the API's limit) and a page view. The load:
// one client compiling an estimate after another, one posting 500-event batches of persons that
// are kept, both through the real app (app.inject) in the service's process, as the worker runs.

import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/http/app.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { type AnalyticsEngine, openStores } from '../src/store/open.js';
import { percentile } from './support/server.js';

const { values: args } = parseArgs({ options: {
  persons: { type: 'string', default: '30000' },
  events: { type: 'string', default: '5' },
  engines: { type: 'string', default: 'duckdb,clickhouse' },
} });
const [persons, eventsEach] = [Number(args.persons), Number(args.events)];
const KEPT_FROM = 11_000;
if (persons <= KEPT_FROM) throw new Error(`--persons must exceed ${KEPT_FROM}: 11,000 are deleted, the load ingests for the others`);

type App = FastifyInstance & { privacy: { start(): void } };
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: { op: '>=', value: 1 }, window: { kind: 'ever' } } } };

async function call(app: App, key: string, method: 'GET' | 'POST', url: string, body?: unknown) {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: body === undefined ? undefined : JSON.stringify(body) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
}

const summary = (xs: number[]) => `p50 ${percentile(xs, 0.5).toFixed(1)} ms, p99 ${percentile(xs, 0.99).toFixed(1)} ms (${xs.length})`;

async function bench(engine: AnalyticsEngine): Promise<void> {
  const stores = await openStores({ analyticsStore: engine, databasePath: ':memory:', clickhouse: { path: ':memory:', database: 'privacy_bench' } });
  const ws = await new Workspaces(stores.control).create('bench');
  // The worker as the service runs it (main.ts): a pass that fails (a write conflict with ingest) is taken up again at the next tick.
  const app = await buildApp({ stores, estimateBudgetMs: 60_000, privacyIntervalMs: 1000 }) as App;
  app.privacy.start();
  const key = ws.secret_key;
  const t0 = performance.now();
  for (let from = 0; from < persons * eventsEach; from += 500) {
    const batch = Array.from({ length: Math.min(500, persons * eventsEach - from) }, (_, i) => {
      const p = (from + i) % persons;
      return { event_name: (from + i) < persons ? 'signup' : 'feature_used', user_id: `u_${p}`, visitor_id: `v_${p}`, email: `u${p}@example.com`, properties: { n: i } };
    });
    await call(app, key, 'POST', '/v1/events', { batch });
  }
  for (let from = 0; from < persons; from += 500) {
    const batch = Array.from({ length: Math.min(500, persons - from) }, (_, i) => ({ visitor_id: `v_${from + i}`, url: 'https://shop.example/?utm_source=news' }));
    await call(app, key, 'POST', '/v1/pageviews', { batch });
  }
  console.log(`${engine}: ${persons} persons, ${persons * eventsEach} events, ${persons} page views written through the API in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

  let round = 0;
  const estimate = () => call(app, key, 'POST', '/v1/audiences/compile', { criteria_json: signedUp });
  const ingest = () => call(app, key, 'POST', '/v1/events', { batch: Array.from({ length: 500 }, (_, i) => {
    const p = KEPT_FROM + ((round * 500 + i) % (persons - KEPT_FROM));
    return { event_name: 'feature_used', user_id: `u_${p}`, visitor_id: `v_${p}` };
  }) });
  /** Each client one call after another until `until` settles (or `n` calls); the latencies. */
  const load = async (until: Promise<unknown> | number) => {
    const times = { estimates: [] as number[], ingest: [] as number[] };
    let over = typeof until === 'number';
    if (typeof until !== 'number') void until.finally(() => { over = true; });
    const client = async (name: 'estimates' | 'ingest', fn: () => Promise<unknown>) => {
      while (typeof until === 'number' ? times[name].length < until : !over) {
        const start = performance.now();
        await fn();
        round++;
        times[name].push(performance.now() - start);
      }
    };
    await Promise.all([client('estimates', estimate), client('ingest', ingest)]);
    return times;
  };
  const before = await load(20);
  console.log(`${engine} before:  estimates ${summary(before.estimates)}; ingest ${summary(before.ingest)}`);
  for (const [from, count] of [[0, 1000], [1000, 10_000]] as const) {
    const start = performance.now();
    const ids: string[] = [];
    for (let i = from; i < from + count; i += 5000) {
      const identifiers = Array.from({ length: Math.min(5000, from + count - i) }, (_, k) => ({ external_id: `u_${i + k}` }));
      ids.push((await call(app, key, 'POST', '/v1/privacy/requests', { type: 'delete', identifiers })).id);
    }
    const done = (async () => {
      for (;;) {
        const answers = await Promise.all(ids.map((id) => call(app, key, 'GET', `/v1/privacy/requests/${id}`)));
        if (answers.every((a) => a.status === 'done' || a.status === 'failed')) return answers;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const during = await load(done);
    const answers = await done;
    const took = performance.now() - start;
    console.log(`${engine} delete ${count}: ${(took / 1000).toFixed(1)} s to ${answers.map((a) => a.status).join(', ')}`, answers.map((a) => a.counts));
    console.log(`${engine} during:  estimates ${summary(during.estimates)}; ingest ${summary(during.ingest)}`);
  }
  await app.close();
  await stores.close();
}

for (const engine of args.engines.split(',') as AnalyticsEngine[]) await bench(engine);
