// Sustained ingest over HTTP: batches of 500 events (and of page views) posted to the real server
// on a DuckDB file; each 200 is a committed, durable batch.
//   npx tsx bench/ingest.bench.ts [--events 1000000] [--concurrency 4]
// The server is started as its own process on data/bench/ingest.duckdb (as `npm start`).

import { readFileSync, rmSync, statSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { BATCH, eventBatch, nextSeq } from './support/batches.js';
import { percentile, post as send, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '1000000' },
  pageviews: { type: 'string', default: '200000' },
  concurrency: { type: 'string', default: '4' },
} });
const totalEvents = Number(args.events);
const totalPageviews = Number(args.pageviews);
const concurrency = Number(args.concurrency);
const dbPath = join('data', 'bench', 'ingest.duckdb');
rmSync(dbPath, { force: true });
rmSync(`${dbPath}.wal`, { force: true });

// The server runs as `npm start` does, in a process of its own: clients in the same thread would
// take the server's CPU.
const SECRET_KEY = 'sk_bench_ingest_0123456789abcdef';
const { server, base } = await startServer('src/main.ts', { DATABASE_PATH: dbPath, BOOTSTRAP_SECRET_KEY: SECRET_KEY },
  (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean));

function pageviewBatch(): string {
  const batch = Array.from({ length: BATCH }, () => {
    const i = nextSeq();
    return { visitor_id: `v_${(i * 7919) % 100_000}_0`, url: `https://example.com/p/${i % 50}?utm_source=newsletter&utm_medium=email`, referrer: i % 2 ? 'https://www.google.com/' : null };
  });
  return JSON.stringify({ batch });
}

async function post(path: string, body: string): Promise<number> {
  const t0 = performance.now();
  const res = await send(`${base}${path}`, body, { authorization: `Bearer ${SECRET_KEY}`, 'content-type': 'application/json' });
  if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
  return performance.now() - t0;
}

/**
 * Posts the bodies with `concurrency` requests in flight; returns batch latencies. The bodies are
 * made before the clock starts, so the clients' own work is only sending.
 */
async function sustained(path: string, bodies: string[]): Promise<{ seconds: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < bodies.length) latencies.push(await post(path, bodies[next++]!));
  }));
  return { seconds: (performance.now() - t0) / 1000, latencies };
}

/** CPU seconds (user + system) used so far by the server process and by its main (JS) thread, from /proc. */
function serverCpuSeconds(): { total: number; main: number } {
  const cpu = (stat: string) => {
    const fields = readFileSync(stat, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in ticks of 1/100 s
  };
  return { total: cpu(`/proc/${server.pid}/stat`), main: cpu(`/proc/${server.pid}/task/${server.pid}/stat`) };
}

/**
 * Posts `total` rows, made a million at a time before each million's clock starts, and reports
 * where the CPU went while sending: µs of server and client CPU per row.
 */
async function measured(path: string, total: number, make: () => string) {
  const CHUNK = 1_000_000 / BATCH;
  let seconds = 0;
  let serverCpu = 0;
  let mainCpu = 0;
  let clientCpu = 0;
  const latencies: number[] = [];
  for (let made = 0; made < total; made += CHUNK * BATCH) {
    const bodies = Array.from({ length: Math.min(CHUNK, Math.ceil((total - made) / BATCH)) }, make);
    const server0 = serverCpuSeconds();
    const client0 = process.cpuUsage();
    const part = await sustained(path, bodies);
    const client = process.cpuUsage(client0);
    const server1 = serverCpuSeconds();
    serverCpu += server1.total - server0.total;
    mainCpu += server1.main - server0.main;
    clientCpu += (client.user + client.system) / 1e6;
    seconds += part.seconds;
    latencies.push(...part.latencies);
  }
  const perRow = (cpu: number) => (cpu * 1e6 / total).toFixed(1);
  cpuNotes.push(`${path}: ${perRow(serverCpu)} µs server CPU per row (${perRow(mainCpu)} µs of it on the JS thread), `
    + `${perRow(clientCpu)} µs client CPU; main thread busy ${Math.round(100 * mainCpu / seconds)} % of ${seconds.toFixed(1)} s sending`);
  return { seconds, latencies: latencies.sort((a, b) => a - b) };
}
const cpuNotes: string[] = [];

const report = (what: string, total: number, r: { seconds: number; latencies: number[] }) =>
  console.log(`| ${what} | ${total.toLocaleString('en-US')} | ${concurrency} | ${Math.round(total / r.seconds).toLocaleString('en-US')} | ${percentile(r.latencies, 0.5).toFixed(1)} | ${percentile(r.latencies, 0.99).toFixed(1)} |`);

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; node ${process.version}; batches of ${BATCH}\n`);
console.log('| stream | rows | in flight | rows/s | p50 ms per batch | p99 ms per batch |');
console.log('|---|---:|---:|---:|---:|---:|');
report('events', totalEvents, await measured('/v1/events', totalEvents, eventBatch));
report('page views', totalPageviews, await measured('/v1/pageviews', totalPageviews, pageviewBatch));
console.log(`\n${cpuNotes.join('\n')}`);

// One batch at a time, as tinybench sees it (latency without queueing).
const single = new Bench({ iterations: 50, time: 0 });
const singles = Array.from({ length: 200 }, eventBatch);
single.add('one event batch', async () => { await post('/v1/events', singles.pop()!); });
await single.run();
const r = single.tasks[0]!.result;
if (r.state === 'completed') console.log(`\none batch of ${BATCH} events at a time: p50 ${r.latency.p50.toFixed(1)} ms, p99 ${r.latency.p99.toFixed(1)} ms`);

// SIGTERM: the server finishes its writes and checkpoints before it exits.
await new Promise((resolve) => { server.once('exit', resolve); server.kill('SIGTERM'); });
const rows = totalEvents + 50 * BATCH;
console.log(`database after ${rows.toLocaleString('en-US')} events and ${totalPageviews.toLocaleString('en-US')} page views: ${(statSync(dbPath).size / 2 ** 20).toFixed(0)} MiB`);
