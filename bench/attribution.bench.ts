// Attribution: webhook processing throughput (signed notifications verified and stored over HTTP)
// and people-lookup latency on the 1 M-person estimate fixture (run `npm run bench` once first).
//   npx tsx bench/attribution.bench.ts [--notifications 3000] [--concurrency 4]

import { existsSync, rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Stripe from 'stripe';
import { Bench } from 'tinybench';
import { findPeople } from '../src/attribution/people.js';
import { buildApp } from '../src/http/app.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';
import { percentile } from './support/server.js';
import { checkoutSession, invoice, notification, subscription } from '../test/support/stripe.js';

const { values: args } = parseArgs({ options: {
  notifications: { type: 'string', default: '3000' },
  concurrency: { type: 'string', default: '4' },
} });
const total = Number(args.notifications);
const concurrency = Number(args.concurrency);
const stripe = new Stripe('sk_test_dummy');

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; node ${process.version}\n`);

// Webhooks: per customer a checkout session with metadata, its subscription, its paid invoice.
{
  const dbPath = join('data', 'bench', 'webhooks.duckdb');
  rmSync(dbPath, { force: true });
  rmSync(`${dbPath}.wal`, { force: true });
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: dbPath });
  const store = stores.control;
  const secret = 'whsec_bench';
  const ws = await new Workspaces(store).create('bench', { stripe_webhook_secret: secret });
  const app = await buildApp({ stores, estimateBudgetMs: 5000 });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const payloads: string[] = [];
  for (let c = 0; payloads.length < total; c++) {
    const customer = `cus_${c}`;
    const sub = subscription(customer, { metadata: { tr_user_id: `u_${c}`, tr_visitor_id: `v_${c}` } });
    payloads.push(
      JSON.stringify(notification('checkout.session.completed', checkoutSession(customer, { tr_user_id: `u_${c}`, tr_visitor_id: `v_${c}` }))),
      JSON.stringify(notification('customer.subscription.created', sub)),
      JSON.stringify(notification('invoice.paid', invoice(customer, { subscription: sub.id }))),
    );
  }
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const payload = payloads[next++]!;
      const header = stripe.webhooks.generateTestHeaderString({ payload, secret });
      const s = performance.now();
      const res = await fetch(`${base}/v1/webhooks/stripe/${ws.workspace_id}`, {
        method: 'POST', body: payload, headers: { 'content-type': 'application/json', 'stripe-signature': header },
      });
      if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      latencies.push(performance.now() - s);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  console.log('| webhook notifications | in flight | notifications/s | p50 ms | p99 ms |');
  console.log('|---:|---:|---:|---:|---:|');
  console.log(`| ${total.toLocaleString('en-US')} | ${concurrency} | ${Math.round(total / seconds).toLocaleString('en-US')} | ${percentile(latencies, 0.5).toFixed(1)} | ${percentile(latencies, 0.99).toFixed(1)} |`);
  await app.close();
  await stores.close();
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
