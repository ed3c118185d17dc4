// Attribution: Stripe notifications per second over HTTP (signed, verified, applied), and people-
// lookup latency on the 1 M-person estimate fixture (run `npm run bench` once first).
//   npx tsx bench/attribution.bench.ts [--customers 2000] [--in-flight 4,64,256] [--count 600]
// The service runs in a process of its own (bench/estimate-server.ts, DuckDB file store, no rate
// limit) on loopback; this process is the client. Besides the rate and latencies, the CPU the server
// process used per notification (all its threads), which the machine's load does not change much. Per customer: checkout.session.completed with
// both metadata fields, customer.subscription.created, invoice.paid, all customers' notifications
// in one seeded shuffle (so a customer's arrive in any order). Then, in this process on an
// in-memory store, the SQL statements per notification (one by one and concurrently), and the CPU
// of a signature check and a JSON parse.

import { existsSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import Stripe from 'stripe';
import { Bench } from 'tinybench';
import { findPeople } from '../src/attribution/people.js';
import { verifyNotification } from '../src/attribution/signature.js';
import { buildApp } from '../src/http/app.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';
import { percentile, post, startServer } from './support/server.js';
import { checkoutSession, invoice, notification, subscription } from '../test/support/stripe.js';
import { seededRandom } from '../test/support/random.js';

const { values: args } = parseArgs({ options: {
  customers: { type: 'string', default: '2000' },
  'in-flight': { type: 'string', default: '4,64,256' },
  count: { type: 'string', default: '600' },
} });
const customers = Number(args.customers);
const inFlight = args['in-flight'].split(',').map(Number);
const stripe = new Stripe('sk_test_dummy');
const SECRET_KEY = 'sk_bench_attribution_0123456789abcdef';
const WEBHOOK_SECRET = 'whsec_bench_attribution';
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
/** CPU ms a process has used (Linux /proc; user + system, all its threads: DuckDB's too); null elsewhere. */
function cpuMs(pid: number | undefined): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; node ${process.version}; load ${load()}\n`);

/** A seeded shuffle (mulberry32), the same order every run. */
function shuffled<T>(items: T[], seed = 20): T[] {
  const random = seededRandom(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Three notifications per new customer (prefix keeps runs apart), shuffled. */
function payloadsFor(n: number, prefix: string): string[] {
  const payloads: string[] = [];
  for (let c = 0; c < n; c++) {
    const customer = `cus_${prefix}${c}`;
    const meta = { tr_user_id: `u_${prefix}${c}`, tr_visitor_id: `v_${prefix}${c}` };
    const sub = subscription(customer, { metadata: meta });
    payloads.push(
      JSON.stringify(notification('checkout.session.completed', checkoutSession(customer, meta))),
      JSON.stringify(notification('customer.subscription.created', sub)),
      JSON.stringify(notification('invoice.paid', invoice(customer, { subscription: sub.id }))),
    );
  }
  return shuffled(payloads);
}

// Webhooks over HTTP, a fresh database per level of concurrency.
console.log(`| notifications (${customers.toLocaleString('en-US')} new customers × 3) | in flight | notifications/s | p50 ms | p99 ms | server CPU ms per notification | load before → after |`);
console.log('|---:|---:|---:|---:|---:|---:|---|');
for (const flight of inFlight) {
  const dbPath = join('data', 'bench', 'webhooks.duckdb');
  rmSync(dbPath, { force: true });
  rmSync(`${dbPath}.wal`, { force: true });
  const { server, base } = await startServer('bench/estimate-server.ts', {
    DATABASE_PATH: dbPath, BOOTSTRAP_SECRET_KEY: SECRET_KEY, BOOTSTRAP_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
  });
  const ws = await (await fetch(`${base}/v1/workspace`, { headers: { authorization: `Bearer ${SECRET_KEY}` } })).json() as { id: string };
  const payloads = payloadsFor(customers, `f${flight}_`);
  // Signed beforehand: the client's own HMACs would take the server's CPU (signatures stay valid 300 s).
  const signed = payloads.map((payload) => ({ payload, header: stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) }));
  const loadBefore = load();
  const cpuBefore = cpuMs(server.pid);
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: flight }, async () => {
    while (next < signed.length) {
      const { payload, header } = signed[next++]!;
      const s = performance.now();
      const res = await post(`${base}/v1/webhooks/stripe/${ws.id}`, payload, { 'content-type': 'application/json', 'stripe-signature': header });
      if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
      latencies.push(performance.now() - s);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const cpuAfter = cpuMs(server.pid);
  // Independent of the load: what the server spent, not what it was given.
  const cpu = cpuBefore === null || cpuAfter === null ? 'n/a' : ((cpuAfter - cpuBefore) / signed.length).toFixed(2);
  console.log(`| ${signed.length.toLocaleString('en-US')} | ${flight} | ${Math.round(signed.length / seconds).toLocaleString('en-US')} | `
    + `${percentile(latencies, 0.5).toFixed(1)} | ${percentile(latencies, 0.99).toFixed(1)} | ${cpu} | ${loadBefore} → ${load()} |`);
  await new Promise((resolve) => { server.once('exit', resolve); server.kill('SIGTERM'); });
}

// SQL statements per notification, counted on the DuckDB connections (BEGIN and COMMIT included).
{
  let statements = 0;
  // A statement with parameters runs as a prepared one (kept, or prepared by run); one without, through run.
  const connection = DuckDBConnection.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const prepared = DuckDBPreparedStatement.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const run = connection.run!;
  connection.run = function (this: unknown, ...a: unknown[]) {
    if (a[1] === undefined) statements++;
    return run.apply(this, a);
  };
  const execute = prepared.run!;
  prepared.run = function (this: unknown, ...a: unknown[]) {
    statements++;
    return execute.apply(this, a);
  };
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: ':memory:' });
  const ws = await new Workspaces(stores.control).create('bench', { stripe_webhook_secret: WEBHOOK_SECRET });
  const app = await buildApp({ stores, estimateBudgetMs: 5000, rateLimits: { ingestPerMinute: 1e9, notificationsPerMinute: 1e9, perMinute: 1e9 } });
  const count = Number(args.count);
  const deliver = (payload: string) => app.inject({
    method: 'POST', url: `/v1/webhooks/stripe/${ws.workspace_id}`, payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
  }).then((res) => { if (res.statusCode !== 200) throw new Error(res.body); });
  console.log('\n| statements per notification | one at a time | 64 in flight |\n|---|---:|---:|');
  const one = payloadsFor(count / 3, 'one_');
  statements = 0;
  for (const payload of one) await deliver(payload);
  const sequential = statements / one.length;
  const many = payloadsFor(count / 3, 'many_');
  statements = 0;
  let next = 0;
  await Promise.all(Array.from({ length: 64 }, async () => { while (next < many.length) await deliver(many[next++]!); }));
  console.log(`| ${count} notifications, the mix above | ${sequential.toFixed(1)} | ${(statements / many.length).toFixed(1)} |`);
  await app.close();
  await stores.close();

  // The CPU of what runs before a notification waits for the database.
  const sample = one.slice(0, 300).map((payload) => ({ raw: Buffer.from(payload), header: stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) }));
  let t = performance.now();
  for (const { raw, header } of sample) stripe.webhooks.signature!.verifyHeader(raw, header, WEBHOOK_SECRET, 300);
  const verify = (performance.now() - t) / sample.length;
  t = performance.now();
  for (const { raw } of sample) JSON.parse(raw.toString('utf8'));
  const parse = (performance.now() - t) / sample.length;
  t = performance.now();
  for (const { raw, header } of sample) verifyNotification(raw, header, WEBHOOK_SECRET);
  const both = (performance.now() - t) / sample.length;
  console.log(`\nper notification (${Math.round(sample.reduce((s, x) => s + x.raw.length, 0) / sample.length)} bytes): signature check ${(verify * 1000).toFixed(0)} µs, `
    + `JSON parse ${(parse * 1000).toFixed(0)} µs, verifyNotification (both) ${(both * 1000).toFixed(0)} µs; load ${load()}`);
}

// People lookup on the estimate fixture's 1 M persons.
const fixtureDb = join('data', 'bench', '1000000-10000000-2000000.duckdb');
if (!existsSync(fixtureDb)) {
  console.log(`\n(no ${fixtureDb}: run \`npm run bench\` first for the people-lookup figures)`);
} else {
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: fixtureDb });
  const bench = new Bench({ iterations: 20, time: 0, warmupIterations: 2 });
  const queries = { 'one email (user123456@)': 'user123456@', 'one customer id (cus_4242)': 'cus_4242', 'common term (example.com), first page': 'example.com', 'no match': 'zzzz-nothing' };
  const found: Record<string, number> = {};
  for (const [name, q] of Object.entries(queries)) {
    bench.add(name, async () => { found[name] = (await findPeople(stores, 'ws_bench', q, 50)).data.length; });
  }
  await bench.run();
  console.log('\n| people lookup, 1 M persons | rows returned | p50 ms | p99 ms |');
  console.log('|---|---:|---:|---:|');
  for (const task of bench.tasks) {
    const r = task.result;
    if (r.state === 'completed') console.log(`| ${task.name} | ${found[task.name]} | ${r.latency.p50.toFixed(1)} | ${r.latency.p99.toFixed(1)} |`);
  }
  await stores.close();
}
