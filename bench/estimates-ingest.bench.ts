// Ingest and /health while heavy compiles saturate the estimates (issue 13): the latency of one
// 500-event batch at a time, quiet and then with N compiles kept in flight, for each server setting.
//   npx tsx bench/estimates-ingest.bench.ts [--events 1000000] [--inflight 50,200] [--budget 5000]
//     [--settings "defaults;connections=4;connections=2,threads=1"] [--retry at-once|after]
// A setting is `defaults` (the store's) or a list of connections=N (estimate connections),
// threads=N (DuckDB's worker threads), queue=N (ESTIMATE_QUEUE_MAX), uv=N (UV_THREADPOOL_SIZE of the
// server process).
// Each run starts bench/estimate-server.ts on a fresh copy of one imported fixture database.

import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateFixtures } from '../fixtures/generate.js';
import { Store } from '../src/store/duckdb/db.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { importParquetDir } from '../src/store/duckdb/import.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { HEAVY_CRITERIA } from '../test/support/heavy-criteria.js';
import { percentile, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  people: { type: 'string', default: '50000' },
  events: { type: 'string', default: '1000000' },
  pageviews: { type: 'string', default: '200000' },
  inflight: { type: 'string', default: '50,200' },
  budget: { type: 'string', default: '5000' },
  batches: { type: 'string', default: '60' },
  settings: { type: 'string', default: 'defaults;connections=4' },
  // at-once: a compile client sends its next request as soon as an answer arrives, 503 or not;
  // after: it waits the Retry-After of a 503 first, as a well-behaved client does.
  retry: { type: 'string', default: 'at-once' },
} });
const sizes = { people: Number(args.people), events: Number(args.events), pageviews: Number(args.pageviews) };
const tag = `${sizes.people}-${sizes.events}-${sizes.pageviews}`;
const fixtureDir = join('data', 'fixtures', tag);
const templatePath = join('data', 'bench', `estimates-${tag}.duckdb`);
const runPath = join('data', 'bench', 'estimates-run.duckdb');
const SECRET_KEY = 'sk_bench_estimates_0123456789abcdef';
const BATCH = 500;
const BATCHES = Number(args.batches);

if (!existsSync(join(fixtureDir, 'payment_events.parquet'))) {
  await generateFixtures({ ...sizes, seed: 1, out: fixtureDir, log: console.log });
}
if (!existsSync(templatePath)) {
  mkdirSync(join('data', 'bench'), { recursive: true });
  const store = await Store.open(templatePath);
  const ws = await new Workspaces(new DuckDBControl(store)).ensure('default', { secret_key: SECRET_KEY });
  await importParquetDir(store, ws.workspace_id, fixtureDir);
  await store.close();
}

const HEAVY = JSON.stringify({ criteria_json: HEAVY_CRITERIA });

let seq = 0;
function eventBatch(): string {
  return JSON.stringify({ batch: Array.from({ length: BATCH }, () => {
    const i = seq++;
    const user = (i * 7919) % 100_000;
    return {
      event_name: ['view_item', 'add_to_cart', 'login', 'feature_used'][i % 4],
      user_id: `u_${user}`, visitor_id: `v_${user}_0`, message_id: `bench_${i}`,
      properties: { plan: ['free', 'pro', 'team'][i % 3], item: { category: 'books', price: (i % 500) / 10 } },
    };
  }) });
}

const ms = (n: number) => (Number.isNaN(n) ? '–' : n.toFixed(0));

interface Outcomes { exact: number; overBudget: number; overloaded: number; other: number; latencies: number[] }

async function run(setting: Record<string, number>, inflight: number) {
  copyFileSync(templatePath, runPath);
  rmSync(`${runPath}.wal`, { force: true });
  const env: NodeJS.ProcessEnv = { DATABASE_PATH: runPath, BOOTSTRAP_SECRET_KEY: SECRET_KEY, ESTIMATE_BUDGET_MS: args.budget };
  if (setting.connections) env.BENCH_ESTIMATE_CONNECTIONS = String(setting.connections);
  if (setting.threads) env.BENCH_DUCKDB_THREADS = String(setting.threads);
  if (setting.queue !== undefined) env.BENCH_ESTIMATE_QUEUE_MAX = String(setting.queue);
  if (setting.uv) env.UV_THREADPOOL_SIZE = String(setting.uv);
  const { server, base } = await startServer('bench/estimate-server.ts', env);
  const headers = { authorization: `Bearer ${SECRET_KEY}`, 'content-type': 'application/json' };
  const timed = async (path: string, init?: RequestInit) => {
    const t0 = performance.now();
    const res = await fetch(`${base}${path}`, init);
    const body = await res.text();
    return { status: res.status, body, ms: performance.now() - t0, retryAfter: Number(res.headers.get('retry-after') ?? 0) };
  };
  const ingest = async () => {
    const r = await timed('/v1/events', { method: 'POST', headers, body: eventBatch() });
    if (r.status !== 200) throw new Error(`ingest ${r.status} ${r.body}`);
    return r.ms;
  };
  const ingestSeries = async () => {
    const latencies: number[] = [];
    for (let i = 0; i < BATCHES; i++) latencies.push(await ingest());
    return latencies;
  };
  for (let i = 0; i < 5; i++) await ingest();
  const quiet = await ingestSeries();
  const alone: number[] = [];
  for (let i = 0; i < 3; i++) alone.push((await timed('/v1/audiences/compile', { method: 'POST', headers, body: HEAVY })).ms);

  const outcomes: Outcomes = { exact: 0, overBudget: 0, overloaded: 0, other: 0, latencies: [] };
  let stop = false;
  const compileClient = async () => {
    while (!stop) {
      const r = await timed('/v1/audiences/compile', { method: 'POST', headers, body: HEAVY }).catch(() => null);
      if (!r || stop) return;
      outcomes.latencies.push(r.ms);
      if (r.status === 503) {
        outcomes.overloaded++;
        if (args.retry === 'after') await new Promise((resolve) => setTimeout(resolve, r.retryAfter * 1000));
      } else if (r.status !== 200) outcomes.other++;
      else if (JSON.parse(r.body).estimated_count.count === null) outcomes.overBudget++;
      else outcomes.exact++;
    }
  };
  const clients = Array.from({ length: inflight }, compileClient);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const exactBefore = outcomes.exact;
  const loadedStart = performance.now();
  const healthLatencies: number[] = [];
  let ingestDone = false;
  const healthProbe = (async () => {
    while (!ingestDone) {
      healthLatencies.push((await timed('/health')).ms);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const loaded = await ingestSeries();
  const exactPerSecond = (outcomes.exact - exactBefore) / ((performance.now() - loadedStart) / 1000);
  ingestDone = true;
  await healthProbe;
  stop = true;
  // The answers still queued in an unbounded queue may take minutes: the run's database is a copy.
  server.kill('SIGKILL');
  await Promise.allSettled(clients);
  const setName = Object.entries(setting).map(([k, v]) => `${k}=${v}`).join(', ') || 'defaults';
  console.log(`| ${setName} | ${ms(Math.min(...alone))} | ${inflight} | ${ms(percentile(quiet, 0.5))} / ${ms(percentile(quiet, 0.99))} | ${ms(percentile(loaded, 0.5))} / ${ms(percentile(loaded, 0.99))} `
    + `| ${ms(percentile(healthLatencies, 0.5))} / ${ms(percentile(healthLatencies, 0.99))} `
    + `| ${outcomes.exact} / ${outcomes.overBudget} / ${outcomes.overloaded}${outcomes.other ? ` (+${outcomes.other} other)` : ''} `
    + `| ${exactPerSecond.toFixed(1)} | ${ms(percentile(outcomes.latencies, 0.5))} / ${ms(percentile(outcomes.latencies, 0.99))} / ${ms(Math.max(...outcomes.latencies))} |`);
}

const settings = args.settings.split(';').map((s): Record<string, number> => (s.trim() === 'defaults' ? {} : Object.fromEntries(s.split(',').map((kv) => {
  const [k, v] = kv.split('=');
  return [k!.trim(), Number(v)];
}))));
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; node ${process.version}`);
console.log(`dataset: ${sizes.people.toLocaleString('en-US')} people, ${sizes.events.toLocaleString('en-US')} events, ${sizes.pageviews.toLocaleString('en-US')} page views; `
  + `ESTIMATE_BUDGET_MS ${args.budget}; ${BATCHES} batches of ${BATCH} events, one at a time; compile clients retry ${args.retry}\n`);
console.log('| setting | one compile alone, ms | compiles in flight | ingest p50 / p99 ms, quiet | ingest p50 / p99 ms, loaded | /health p50 / p99 ms, loaded | compiles answered: exact / over budget / 503 | exact counts a second, loaded | compile p50 / p99 / max ms |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const setting of settings) {
  for (const inflight of args.inflight.split(',').map(Number)) await run(setting, inflight);
}
