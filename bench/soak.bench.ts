// Soak: two workspaces on one server. One sends hostile and heavy input and owns a destination
// that accepts and never answers; the other sends normal traffic. Recorded every window: the
// normal workspace's ingest p50/p99, compile p99, delivery delay and failures, and the server's RSS.
//   npx tsx bench/soak.bench.ts [--seconds 120] [--window 20]
// Loopback only: the server, both receivers and the clients are on 127.0.0.1.

import { readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Stripe from 'stripe';
import { Store } from '../src/store/duckdb/db.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { percentile, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '120' }, window: { type: 'string', default: '20' } } });
const durationMs = Number(args.seconds) * 1000;
const windowMs = Number(args.window) * 1000;

const dbPath = join('data', 'bench', 'soak.duckdb');
rmSync(dbPath, { force: true });
rmSync(`${dbPath}.wal`, { force: true });
const setup = await Store.open(dbPath);
const normal = await new Workspaces(new DuckDBControl(setup)).create('normal');
const hostile = await new Workspaces(new DuckDBControl(setup)).create('hostile');
await setup.close();

// Receivers: the normal workspace's answers at once and notes when each user arrives; the hostile
// workspace's accepts every request and never answers.
const arrivals = new Map<string, number>();
const healthy = createHttpServer((req, res) => {
  let raw = '';
  req.on('data', (chunk: Buffer) => { raw += chunk.toString('utf8'); });
  req.on('end', () => {
    const page = JSON.parse(raw) as { added: { external_id: string | null }[] };
    for (const member of page.added) if (member.external_id && !arrivals.has(member.external_id)) arrivals.set(member.external_id, performance.now());
    res.writeHead(200).end('{}');
  });
});
const hung: ServerResponse[] = [];
const hanging = createHttpServer((_req, res) => { hung.push(res); });
await Promise.all([healthy, hanging].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
const receiverUrl = (s: typeof healthy) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`;

const { server, base } = await startServer('src/main.ts', {
  DATABASE_PATH: dbPath, ALLOW_PRIVATE_DESTINATIONS: 'true', SCHEDULER_INTERVAL_MS: '5000', DELIVERY_TIMEOUT_MS: '30000', ESTIMATE_BUDGET_MS: '5000',
});

async function call(key: string, method: string, path: string, body?: string): Promise<{ status: number; ms: number; json: unknown }> {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { method, body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } })
    .catch(() => null);
  if (!res) return { status: 0, ms: performance.now() - t0, json: null };
  const text = await res.text();
  let json: unknown = null;
  try { json = JSON.parse(text); } catch { /* a non-JSON answer counts by its status */ }
  return { status: res.status, ms: performance.now() - t0, json };
}

const leaf = (name: string, path: string, op: string, value: unknown) => ({
  source: 'product_event', name, filter: { [path]: { op, value } }, occurrence: { op: 'did', count: { op: '>=', value: 2 }, window: { kind: 'ever' } },
});
const signups = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

async function audience(key: string, url: string): Promise<string> {
  const res = await call(key, 'POST', '/v1/audiences', JSON.stringify({ name: 'signups', criteria_json: signups, refresh_every: '5m', destinations: [{ type: 'webhook', url, secret: 'soak' }] }));
  if (res.status !== 201) throw new Error(`audience: ${res.status} ${JSON.stringify(res.json)}`);
  return (res.json as { id: string }).id;
}

// Seed both workspaces with events to filter on.
const eventBatch = (prefix: string, n: number, from: number) => JSON.stringify({ batch: Array.from({ length: n }, (_, i) => ({
  event_name: ['signup', 'view_item', 'feature_used'][(from + i) % 3], user_id: `${prefix}_${(from + i) % 5000}`,
  properties: { plan: ['free', 'pro'][i % 2], item: { price: i % 100, category: ['books', 'games'][i % 2] }, duration_ms: i * 7 },
})) });
for (let i = 0; i < 20; i++) {
  await call(normal.secret_key, 'POST', '/v1/events', eventBatch('n', 500, i * 500));
  await call(hostile.secret_key, 'POST', '/v1/events', eventBatch('h', 500, i * 500));
}
const normalAudience = await audience(normal.secret_key, receiverUrl(healthy));
const hostileAudience = await audience(hostile.secret_key, receiverUrl(hanging));

const heavy = JSON.stringify({ criteria_json: { version: 1, root: { op: 'or', children: Array.from({ length: 30 }, (_, i) =>
  leaf(['view_item', 'feature_used', 'signup'][i % 3]!, ['payload.item.category', 'payload.plan', 'payload.duration_ms'][i % 3]!, ['contains', '!=', '>'][i % 3]!, [`o${i}`, `x${i}`, i][i % 3])) } } });
const moderate = JSON.stringify({ criteria_json: { version: 1, root: { op: 'and', children: [
  leaf('view_item', 'payload.item.category', '=', 'books'), { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } },
] } } });
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const stripe = new Stripe('sk_test_soak');
function signed(body: string): Record<string, string> {
  return { 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret: hostile.stripe_webhook_secret }), 'content-type': 'application/json' };
}
let stripeSeq = 0;

const end = performance.now() + durationMs;
const running = () => performance.now() < end;

interface Sample { at: number; ms: number; status: number }
const ingest: Sample[] = [];
const compiles: Sample[] = [];
const deliveries: { at: number; ms: number | null }[] = [];
const rss: { at: number; mib: number }[] = [];
const hostileStatuses = new Map<number, number>();
const start = performance.now();

const loops: Promise<void>[] = [];
// The hostile workspace: four loops of deep, big, heavy and malformed input.
for (let lane = 0; lane < 4; lane++) {
  loops.push((async () => {
    for (let n = 0; running(); n++) {
      const kind = (n + lane) % 6;
      let res;
      if (kind === 0) {
        const batch = `{"batch":[${Array.from({ length: 20 }, (_, i) => `{"event_name":"view_item","user_id":"h_${i}","properties":{"plan":"pro"}}`).join(',')},{"event_name":"x","user_id":"h_deep","properties":{"a":${deep(12_000)}}}]}`;
        res = await call(hostile.secret_key, 'POST', '/v1/events', batch);
      } else if (kind === 1) {
        res = await call(hostile.secret_key, 'POST', '/v1/persons', JSON.stringify({ external_id: `big_${lane}_${n}`, traits: { blob: 'x'.repeat(900_000) } }));
      } else if (kind === 2) {
        res = await call(hostile.secret_key, 'POST', '/v1/audiences/compile', heavy);
      } else if (kind === 3) {
        res = await call(hostile.secret_key, 'POST', '/v1/events', '{"event_name":"x","user_id":"u","properties":{"__proto__":{"a":1}}}');
      } else if (kind === 4) {
        const body = JSON.stringify({ id: `evt_soak_${stripeSeq++}`, object: 'event', type: 'customer.subscription.created', created: Math.floor(Date.now() / 1000), livemode: true,
          data: { object: { id: `sub_soak_${stripeSeq}`, object: 'subscription', customer: 'cus_soak', status: 'active', created: Math.floor(Date.now() / 1000),
            items: { data: [{ quantity: Number.MAX_SAFE_INTEGER, price: { id: 'price_x', unit_amount: Number.MAX_SAFE_INTEGER, currency: 'usd', recurring: { interval: 'month' } } }] } } } });
        const t0 = performance.now();
        const r = await fetch(`${base}/v1/webhooks/stripe/${hostile.workspace_id}`, { method: 'POST', body, headers: signed(body) }).catch(() => null);
        res = { status: r?.status ?? 0, ms: performance.now() - t0, json: null };
        await r?.arrayBuffer();
      } else {
        res = await call(hostile.secret_key, 'POST', `/v1/audiences/${hostileAudience}/refresh`, '{}');
        await call(hostile.secret_key, 'POST', '/v1/events', eventBatch('h', 50, n * 50 + 100_000));
      }
      hostileStatuses.set(res.status, (hostileStatuses.get(res.status) ?? 0) + 1);
    }
  })());
}
// The normal workspace: steady ingest, a compile a second, and a new member delivered every 5 s.
loops.push((async () => {
  for (let n = 0; running(); n++) {
    const res = await call(normal.secret_key, 'POST', '/v1/events', eventBatch('n', 100, n * 100 + 200_000));
    ingest.push({ at: performance.now() - start, ms: res.ms, status: res.status });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
})());
loops.push((async () => {
  while (running()) {
    const res = await call(normal.secret_key, 'POST', '/v1/audiences/compile', moderate);
    compiles.push({ at: performance.now() - start, ms: res.ms, status: res.status });
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
})());
loops.push((async () => {
  for (let n = 0; running(); n++) {
    const user = `newcomer_${n}`;
    await call(normal.secret_key, 'POST', '/v1/events', JSON.stringify({ event_name: 'signup', user_id: user }));
    const at = performance.now();
    await call(normal.secret_key, 'POST', `/v1/audiences/${normalAudience}/refresh`, '{}');
    while (!arrivals.has(user) && performance.now() - at < 60_000) await new Promise((resolve) => setTimeout(resolve, 20));
    deliveries.push({ at: at - start, ms: arrivals.has(user) ? arrivals.get(user)! - at : null });
    await new Promise((resolve) => setTimeout(resolve, 5000));
  }
})());
loops.push((async () => {
  while (running()) {
    const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
    rss.push({ at: performance.now() - start, mib: Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
})());
await Promise.all(loops);

const f = (v: number) => (Number.isNaN(v) ? '–' : v.toFixed(0));
console.log('| window (s) | ingest p50 / p99 ms (n, non-200) | compile p99 ms (n, non-200) | delivery delay ms (max, undelivered) | RSS MiB (max) |');
console.log('|---|---|---|---|---|');
for (let from = 0; from < durationMs; from += windowMs) {
  const inWindow = <T extends { at: number }>(xs: T[]) => xs.filter((x) => x.at >= from && x.at < from + windowMs);
  const i = inWindow(ingest);
  const c = inWindow(compiles);
  const d = inWindow(deliveries);
  const r = inWindow(rss);
  console.log(`| ${from / 1000}–${(from + windowMs) / 1000} | ${f(percentile(i.map((x) => x.ms), 0.5))} / ${f(percentile(i.map((x) => x.ms), 0.99))} (${i.length}, ${i.filter((x) => x.status !== 200).length}) `
    + `| ${f(percentile(c.map((x) => x.ms), 0.99))} (${c.length}, ${c.filter((x) => x.status !== 200).length}) `
    + `| ${f(Math.max(...d.map((x) => x.ms ?? 0)))} (${d.filter((x) => x.ms === null).length}) | ${f(Math.max(...r.map((x) => x.mib)))} |`);
}
console.log(`hostile answers by status: ${JSON.stringify(Object.fromEntries([...hostileStatuses].sort((a, b) => a[0] - b[0])))}; requests held by the hanging receiver: ${hung.length}`);

const exited = new Promise((resolve) => server.once('exit', resolve));
const stopAt = performance.now();
server.kill('SIGTERM');
await exited;
console.log(`SIGTERM to exit: ${(performance.now() - stopAt).toFixed(0)} ms (exit code ${server.exitCode})`);
for (const res of hung) res.destroy();
healthy.close();
hanging.close();
