// Ingest over HTTP with 1, 2 and 3 API nodes on one PostgreSQL (the control state) and one
// ClickHouse (the analytical data: the embedded chDB behind its HTTP interface, test/support/
// chdb-server.ts, one process), and the DuckDB default, in one run; then Stripe notifications per
// second and people lookups on PostgreSQL with 1 M persons.
//   npx tsx bench/nodes.bench.ts [--events 100000] [--concurrency 4] [--notifications 2000] [--persons 1000000]
// Everything runs on this machine (2 cores): nodes, PostgreSQL (durable: fsync on), chDB and the client.

import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import Stripe from 'stripe';
import { startChdbServer } from '../test/support/chdb-server.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { BATCH, eventBatch } from './support/batches.js';
import { percentile, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '100000' },
  concurrency: { type: 'string', default: '4' },
  notifications: { type: 'string', default: '2000' },
  persons: { type: 'string', default: '1000000' },
} });
const EVENTS = Number(args.events);
const CONCURRENCY = Number(args.concurrency);
const SECRET = 'sk_bench_nodes_0123456789abcdef';
const WEBHOOK_SECRET = 'whsec_bench_nodes';
const stripe = new Stripe('sk_test_dummy');
const log = (line = '') => console.log(line);

/** CPU seconds (user + system) of a process. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of every PostgreSQL process (the server and its backends). */
function postgresCpuSeconds(): number {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuSeconds(Number(pid));
    } catch { /* gone meanwhile */ }
  }
  return total;
}

async function post(base: string, path: string, body: string, headers: Record<string, string> = {}): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { method: 'POST', body, headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json', ...headers } });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return performance.now() - t0;
}

/** Sends the bodies with CONCURRENCY requests in flight, request i to node i mod n. */
async function spread(bases: string[], send: (base: string, body: string) => Promise<number>, bodies: string[]) {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < bodies.length) {
      const i = next++;
      latencies.push(await send(bases[i % bases.length]!, bodies[i]!));
    }
  }));
  return { seconds: (performance.now() - t0) / 1000, latencies };
}

interface Nodes { bases: string[]; servers: ChildProcess[] }

async function stop(nodes: Nodes): Promise<void> {
  await Promise.all(nodes.servers.map((s) => new Promise((resolve) => { s.once('exit', resolve); s.kill('SIGTERM'); })));
}

const dir = await mkdtemp(join(tmpdir(), 'bench-nodes-'));
const postgres = await startPostgres({ durable: true });
const chdb = await startChdbServer(join(dir, 'clickhouse'));
const admin = new pg.Client({ connectionString: `${postgres.url}/postgres` });
await admin.connect();

async function startNodes(n: number, layout: 'duckdb' | 'postgres', name = `nodes_${n}`): Promise<Nodes> {
  const env: NodeJS.ProcessEnv = layout === 'duckdb'
    ? { DATABASE_PATH: join(dir, `ingest-${n}.duckdb`), BOOTSTRAP_SECRET_KEY: SECRET, BOOTSTRAP_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET }
    : {
      DATABASE_URL: `${postgres.url}/${name}`, ANALYTICS_STORE: 'clickhouse', CLICKHOUSE_URL: chdb.url, CLICKHOUSE_DATABASE: name,
      BOOTSTRAP_SECRET_KEY: SECRET, BOOTSTRAP_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, DATABASE_PATH: join(dir, 'unused.duckdb'),
    };
  if (layout === 'postgres') await admin.query(`CREATE DATABASE ${name}`);
  const started: Nodes = { bases: [], servers: [] };
  for (let i = 0; i < n; i++) {
    const { server, base } = await startServer('src/main.ts', env);
    started.bases.push(base);
    started.servers.push(server);
  }
  return started;
}

log(`machine: ${cpus().length} × ${cpus()[0]?.model}; node ${process.version}; batches of ${BATCH} events, ${CONCURRENCY} in flight over the nodes\n`);
log('| layout | nodes | events | events/s | p50 ms per batch | p99 ms per batch | CPU µs per event, each node | nodes together | PostgreSQL | chDB server |');
log('|---|---:|---:|---:|---:|---:|---|---:|---:|---:|');
for (const [layout, n] of [['duckdb', 1], ['postgres', 1], ['postgres', 2], ['postgres', 3]] as const) {
  const nodes = await startNodes(n, layout);
  // Warm-up: the first batches create the persons the later ones find.
  await spread(nodes.bases, (base, body) => post(base, '/v1/events', body), Array.from({ length: 10 }, eventBatch));
  const bodies = Array.from({ length: Math.ceil(EVENTS / BATCH) }, eventBatch);
  const before = { nodes: nodes.servers.map((s) => cpuSeconds(s.pid!)), pg: postgresCpuSeconds(), ch: cpuSeconds(chdb.pid) };
  const { seconds, latencies } = await spread(nodes.bases, (base, body) => post(base, '/v1/events', body), bodies);
  const perNode = nodes.servers.map((s, i) => (cpuSeconds(s.pid!) - before.nodes[i]!) * 1e6 / (bodies.length * BATCH));
  const events = bodies.length * BATCH;
  const us = (cpu: number) => (cpu * 1e6 / events).toFixed(1);
  log(`| ${layout === 'duckdb' ? 'DuckDB (default)' : 'PostgreSQL + ClickHouse'} | ${n} | ${events.toLocaleString('en-US')} | ${Math.round(events / seconds).toLocaleString('en-US')} | `
    + `${percentile(latencies, 0.5).toFixed(1)} | ${percentile(latencies, 0.99).toFixed(1)} | ${perNode.map((c) => c.toFixed(1)).join(' / ')} | `
    + `${perNode.reduce((a, b) => a + b, 0).toFixed(1)} | ${layout === 'duckdb' ? '–' : us(postgresCpuSeconds() - before.pg)} | ${layout === 'duckdb' ? '–' : us(cpuSeconds(chdb.pid) - before.ch)} |`);
  await stop(nodes);
}

// Stripe notifications on PostgreSQL, one node: signed checkout sessions of new customers.
const nodes = await startNodes(1, 'postgres', 'lookups');
const workspaceId = ((await (await fetch(`${nodes.bases[0]}/v1/workspace`, { headers: { authorization: `Bearer ${SECRET}` } })).json()) as { id: string }).id;
const created = Math.floor(Date.now() / 1000);
const notifications = Array.from({ length: Number(args.notifications) }, (_, i) => JSON.stringify({
  id: `evt_bench_${i}`, object: 'event', type: 'checkout.session.completed', created, livemode: true, api_version: '2025-03-31.basil',
  data: { object: {
    id: `cs_bench_${i}`, object: 'checkout.session', customer: `cus_bench_${i}`, mode: 'payment', status: 'complete', payment_status: 'paid',
    amount_total: 2000, currency: 'usd', livemode: true, created, metadata: { tr_user_id: `u_${i % 100_000}` },
    customer_details: { email: `buyer${i}@example.com` }, payment_intent: `pi_bench_${i}`, client_reference_id: null,
  } },
}));
const sign = (payload: string) => ({ 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) });
const hooks = await spread(nodes.bases, (base, body) => post(base, `/v1/webhooks/stripe/${workspaceId}`, body, sign(body)), notifications);
log(`\nStripe notifications, PostgreSQL + ClickHouse, 1 node, ${CONCURRENCY} in flight: ${notifications.length.toLocaleString('en-US')} in `
  + `${hooks.seconds.toFixed(1)} s = ${Math.round(notifications.length / hooks.seconds)}/s; p50 ${percentile(hooks.latencies, 0.5).toFixed(1)} ms, `
  + `p99 ${percentile(hooks.latencies, 0.99).toFixed(1)} ms`);

// People lookup on PostgreSQL: persons added to the workspace in one statement.
const PERSONS = Number(args.persons);
const db = new pg.Client({ connectionString: `${postgres.url}/lookups` });
await db.connect();
const t0 = performance.now();
await db.query(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at)
  SELECT $1, nextval('person_keys'), 'per_bulk_' || g, 'bulk_' || g, 'bulk' || g || '@example.com', 'Bulk Person ' || g, NULL, now(), now()
  FROM generate_series(1, $2::int) AS g`, [workspaceId, PERSONS]);
await db.query('ANALYZE persons');
log(`\n${PERSONS.toLocaleString('en-US')} persons added in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
async function lookup(q: string): Promise<{ p50: number; p99: number; found: number }> {
  const times: number[] = [];
  let found = 0;
  for (let i = 0; i < 25; i++) {
    const t = performance.now();
    const res = await fetch(`${nodes.bases[0]}/people?q=${encodeURIComponent(q)}`, { headers: { authorization: `Bearer ${SECRET}` } });
    found = ((await res.json()) as { data: unknown[] }).data.length;
    times.push(performance.now() - t);
  }
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), found };
}
log('| people lookup, PostgreSQL | q | people on the page | p50 ms | p99 ms |');
log('|---|---|---:|---:|---:|');
for (const [what, q] of [['exact email', 'bulk777777@example.com'], ['exact customer id', 'cus_bench_1234'], ['substring', 'person 12345'], ['no match', 'zzzz-nothing']]) {
  const r = await lookup(q!);
  log(`| ${what} | \`${q}\` | ${r.found} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} |`);
}
await db.end();
await stop(nodes);
await admin.end();
await chdb.stop();
await postgres.stop();
await rm(dir, { recursive: true, force: true });
