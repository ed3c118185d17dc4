// The Segment-compatible API against /v1/events, interleaved in one run on one server: batches of
// 500 track calls for known persons posted to /v1/batch (acknowledged once in the ingest log) and
// the same kind of batches posted to /v1/events (answered once resolved and stored). Per stream:
// events/s, p50/p99 ms per batch and server CPU µs per event while sending; for /v1/batch also how
// fast the background resolution drains the backlog.
//   npx tsx bench/segment.bench.ts [--events 300000] [--chunk 100000] [--concurrency 8]
// The server is started as its own process (as `npm start`) on data/bench/segment.duckdb.

import { readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BATCH, eventBatch, nextSeq } from './support/batches.js';
import { percentile, post as send, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '300000' },
  chunk: { type: 'string', default: '100000' },
  concurrency: { type: 'string', default: '8' },
} });
const total = Number(args.events);
const chunk = Number(args.chunk);
const concurrency = Number(args.concurrency);
const dbPath = join('data', 'bench', 'segment.duckdb');
const logDir = join('data', 'bench', 'segment-log');
for (const path of [dbPath, `${dbPath}.wal`, logDir]) rmSync(path, { recursive: true, force: true });

const SECRET_KEY = 'sk_bench_segment_0123456789abcdef';
const { server, base } = await startServer('src/main.ts', {
  DATABASE_PATH: dbPath, BOOTSTRAP_SECRET_KEY: SECRET_KEY, INGEST_LOG_DIR: logDir, INGEST_BACKLOG_MAX_EVENTS: String(2 * chunk),
  INGEST_RATE_LIMIT_PER_MINUTE: '1000000',
});
const basic = `Basic ${Buffer.from(`${SECRET_KEY}:`).toString('base64')}`;

/** A /v1/batch body of 500 track calls, for the users eventBatch() draws from (known persons once warmed). */
function segmentBatch(): string {
  const sentAt = new Date().toISOString();
  return JSON.stringify({ batch: Array.from({ length: BATCH }, () => {
    const i = nextSeq();
    const user = (i * 7919) % 100_000;
    return {
      type: 'track', event: ['view_item', 'add_to_cart', 'login', 'feature_used'][i % 4], userId: `u_${user}`, anonymousId: `v_${user}_0`,
      properties: { plan: ['free', 'pro', 'team'][i % 3], item: { category: 'books', price: (i % 500) / 10 }, quantity: i % 5 },
      messageId: `s_${i}`, timestamp: sentAt, context: { library: { name: 'analytics-node', version: '2' } },
    };
  }), sentAt });
}

/** CPU seconds (user + system, every thread) the server has used, from /proc. */
function serverCpu(): number {
  const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function status(): Promise<{ backlog_events: number; resolved_events: number }> {
  return (await fetch(`${base}/v1/ingest/status`, { headers: { authorization: `Bearer ${SECRET_KEY}` } })).json() as Promise<{ backlog_events: number; resolved_events: number }>;
}

async function sustained(path: string, bodies: string[], auth: string): Promise<{ seconds: number; latencies: number[]; cpu: number }> {
  const latencies: number[] = [];
  let next = 0;
  const cpu0 = serverCpu();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const s = performance.now();
      const res = await send(`${base}${path}`, body, { authorization: auth, 'content-type': 'application/json' });
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
      latencies.push(performance.now() - s);
    }
  }));
  return { seconds: (performance.now() - t0) / 1000, latencies, cpu: serverCpu() - cpu0 };
}

/** Waits for the backlog to drain; the seconds and server CPU it took. */
async function drain(): Promise<{ seconds: number; cpu: number; resolved: number }> {
  const cpu0 = serverCpu();
  const t0 = performance.now();
  const first = await status();
  let s = first;
  while (s.backlog_events > 0) {
    await new Promise((r) => setTimeout(r, 100));
    s = await status();
  }
  return { seconds: (performance.now() - t0) / 1000, cpu: serverCpu() - cpu0, resolved: s.resolved_events - first.resolved_events };
}

const sums = { events: { n: 0, seconds: 0, cpu: 0, lat: [] as number[] }, batch: { n: 0, seconds: 0, cpu: 0, lat: [] as number[] }, resolve: { n: 0, seconds: 0, cpu: 0 } };
// Warm: every user of the population becomes a known person through /v1/events (not measured).
await sustained('/v1/events', Array.from({ length: 200 }, eventBatch), `Bearer ${SECRET_KEY}`);
const load0 = loadavg()[0]!.toFixed(1);
for (let done = 0; done < total; done += chunk) {
  const n = Math.min(chunk, total - done) / BATCH;
  const events = await sustained('/v1/events', Array.from({ length: n }, eventBatch), `Bearer ${SECRET_KEY}`);
  Object.assign(sums.events, { n: sums.events.n + n * BATCH, seconds: sums.events.seconds + events.seconds, cpu: sums.events.cpu + events.cpu });
  sums.events.lat.push(...events.latencies);
  const before = await status();
  const acked = await sustained('/v1/batch', Array.from({ length: n }, segmentBatch), basic);
  const during = (await status()).resolved_events - before.resolved_events;
  Object.assign(sums.batch, { n: sums.batch.n + n * BATCH, seconds: sums.batch.seconds + acked.seconds, cpu: sums.batch.cpu + acked.cpu });
  sums.batch.lat.push(...acked.latencies);
  const drained = await drain();
  // The resolver runs meanwhile: its share of the sending time's CPU is taken out at its drain rate.
  const resolveCpuPerEvent = drained.cpu / Math.max(1, drained.resolved);
  sums.batch.cpu -= during * resolveCpuPerEvent;
  Object.assign(sums.resolve, { n: sums.resolve.n + n * BATCH, seconds: sums.resolve.seconds + acked.seconds + drained.seconds, cpu: sums.resolve.cpu + drained.cpu + during * resolveCpuPerEvent });
}

const row = (what: string, s: { n: number; seconds: number; cpu: number; lat?: number[] }) => console.log(`| ${what} | ${s.n.toLocaleString('en-US')} | ${Math.round(s.n / s.seconds).toLocaleString('en-US')} | `
  + `${s.lat ? percentile(s.lat, 0.5).toFixed(1) : '–'} | ${s.lat ? percentile(s.lat, 0.99).toFixed(1) : '–'} | ${(s.cpu * 1e6 / s.n).toFixed(1)} |`);
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model} (shared with other work: load ${load0} → ${loadavg()[0]!.toFixed(1)}); node ${process.version}; batches of ${BATCH}, ${concurrency} in flight, 100,000 known persons\n`);
console.log('| stream | events | events/s | p50 ms per batch | p99 ms per batch | server CPU µs per event |');
console.log('|---|---:|---:|---:|---:|---:|');
row('before: /v1/events (answered once stored)', sums.events);
row('after: /v1/batch acknowledged (ingest log, fsync)', sums.batch);
row('after: background resolution of the acknowledged events', sums.resolve);
await new Promise((resolve) => { server.once('exit', resolve); server.kill('SIGTERM'); });
