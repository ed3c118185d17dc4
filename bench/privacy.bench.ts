// The suppression check's cost on the known-persons ingest path, and the time of privacy deletes.
//   npx tsx bench/privacy.bench.ts [--rounds 20] [--persons 2000] [--deletes 200]
// Ingest: batches of 500 events of known persons (the same users again, every id in the identity
// cache) posted through the real app (app.inject) on in-memory DuckDB, interleaved round by round:
// *before* is the app of another checkout's src/ when MAIN_SRC points at it (the code before the check),
// *no list* this code on a workspace without suppressions (a map lookup a batch), *with list* a
// workspace suppressing 5,000 other identifiers (a SHA-256 per identifier). Deletes: requests of
// `--deletes` persons each (10 events and a page view apiece), submitted and waited for until done.

import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';

interface BenchApp {
  app: FastifyInstance;
  key: string;
  close(): Promise<void>;
}

/** The app of the code under `src` (this worktree's, or another's) on an in-memory DuckDB, with a workspace. */
async function startApp(src: string): Promise<BenchApp> {
  const [{ openStores }, { buildApp }, { Workspaces }] = await Promise.all([
    import(`${src}/store/open.js`), import(`${src}/http/app.js`), import(`${src}/store/control/workspaces.js`),
  ]);
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: ':memory:' });
  const ws = await new Workspaces(stores.control).create('bench');
  const app = await buildApp({ stores, estimateBudgetMs: 5000 }) as FastifyInstance;
  return { app, key: ws.secret_key, close: async () => { await app.close(); await stores.close(); } };
}

const post = (t: BenchApp, url: string, body: unknown) => t.app.inject({
  method: 'POST', url, headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
  payload: typeof body === 'string' ? body : JSON.stringify(body),
});

const { values: args } = parseArgs({ options: {
  rounds: { type: 'string', default: '20' },
  persons: { type: 'string', default: '2000' },
  deletes: { type: 'string', default: '200' },
} });
const [rounds, persons, deletes] = [Number(args.rounds), Number(args.persons), Number(args.deletes)];

const batchOf = (round: number) => JSON.stringify({ batch: Array.from({ length: 500 }, (_, i) => {
  const user = (round * 500 + i) % persons;
  return { event_name: 'feature_used', user_id: `u_${user}`, visitor_id: `v_${user}`, properties: { plan: 'pro', n: i } };
}) });

async function timed(t: BenchApp, body: string): Promise<number> {
  const t0 = performance.now();
  const res = await post(t, '/v1/events', body);
  if (res.statusCode !== 200) throw new Error(res.body);
  return performance.now() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

const here = new URL('../src', import.meta.url).href;
const plain = await startApp(here);
const listed = await startApp(here);
await post(listed, '/v1/privacy/requests', { type: 'suppress', identifiers: Array.from({ length: 5000 }, (_, i) => ({ email: `gone${i}@example.com` })) });
await (listed.app as FastifyInstance & { privacy: { worker: { idle(): Promise<void> } } }).privacy.worker.idle();
const apps: [string, BenchApp][] = [['no list', plain], ['with list', listed]];
if (process.env.MAIN_SRC) apps.unshift(['before', await startApp(process.env.MAIN_SRC)]);
// Warm: every person exists and sits in the identity cache.
for (const [, t] of apps) for (let r = 0; r * 500 < persons; r++) await timed(t, batchOf(r));
const times = new Map(apps.map(([name]) => [name, [] as number[]]));
for (let r = 0; r < rounds; r++) for (const [name, t] of apps) times.get(name)!.push(await timed(t, batchOf(r)));
console.log(`ingest of 500 known persons' events, ${rounds} interleaved rounds:`);
for (const [name, xs] of times) console.log(`  ${name.padEnd(10)} p50 ${median(xs).toFixed(1)} ms, p99 ${p99(xs).toFixed(1)} ms`);

// Deletes: persons with 10 events and a page view each, deleted by one request.
const t = plain;
for (let from = 0; from < deletes; from += 50) {
  await post(t, '/v1/events', { batch: Array.from({ length: 500 }, (_, i) => ({ event_name: 'signup', user_id: `d_${from + (i % 50)}`, visitor_id: `dv_${from + (i % 50)}` })) });
}
await post(t, '/v1/pageviews', { batch: Array.from({ length: Math.min(500, deletes) }, (_, i) => ({ visitor_id: `dv_${i}`, url: 'https://example.com/' })) });
const t0 = performance.now();
const res = await post(t, '/v1/privacy/requests', { type: 'delete', identifiers: Array.from({ length: deletes }, (_, i) => ({ external_id: `d_${i}` })) });
await (t.app as FastifyInstance & { privacy: { worker: { idle(): Promise<void> } } }).privacy.worker.idle();
const answer = (await t.app.inject({ method: 'GET', url: `/v1/privacy/requests/${res.json().id}`, headers: { authorization: `Bearer ${t.key}` } })).json();
console.log(`delete of ${deletes} persons: ${(performance.now() - t0).toFixed(0)} ms to ${answer.status}`, answer.counts);
for (const [, app] of apps) await app.close();
