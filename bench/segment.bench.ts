// The Segment-compatible API's acknowledging path and its background resolution: batches of 500
// track calls for known persons posted to /v1/batch (acknowledged once in the ingest log), on the
// service as of `--before` (a git revision's src/, run beside this checkout so its packages
// resolve) and on today's, both servers up at once, alternated chunk by chunk in one run. Per
// build: events/s, p50/p99 ms per batch, server CPU µs per event on the acknowledging path, and
// how fast the backlog then drains. With --events-api, the same kind of batches posted to
// /v1/events (answered once resolved and stored) on today's build too. --profile DIR runs the
// servers under `node --cpu-prof`, their profiles written to DIR at exit.
//   npx tsx bench/segment.bench.ts [--events 300000] [--chunk 100000] [--concurrency 8] [--before main|none]
// Servers are started as their own processes (as `npm start`) on data/bench/segment-*.duckdb.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BATCH, eventBatch, nextSeq } from './support/batches.js';
import { percentile, post as send, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '300000' },
  chunk: { type: 'string', default: '100000' },
  concurrency: { type: 'string', default: '8' },
  before: { type: 'string', default: 'main' },
  'events-api': { type: 'boolean', default: false },
  profile: { type: 'string' },
} });
const total = Number(args.events);
const chunk = Number(args.chunk);
const concurrency = Number(args.concurrency);
const SECRET_KEY = 'sk_bench_segment_0123456789abcdef';
const basic = `Basic ${Buffer.from(`${SECRET_KEY}:`).toString('base64')}`;
const bearer = `Bearer ${SECRET_KEY}`;

const here = dirname(fileURLToPath(import.meta.url));
const beforeDir = join(here, `.before-${process.pid}`);
const revision = (rev: string) => execFileSync('git', ['log', '-1', '--format=%h', rev], { encoding: 'utf8' }).trim();
const entries = [{ name: `after (${revision('HEAD')} + worktree)`, entry: 'src/main.ts' }];
if (args.before !== 'none') {
  mkdirSync(beforeDir, { recursive: true });
  execFileSync('git', ['archive', '--output', join(beforeDir, 'src.tar'), args.before, 'src']);
  execFileSync('tar', ['-x', '-C', beforeDir, '-f', join(beforeDir, 'src.tar')]);
  entries.unshift({ name: `before (${revision(args.before)})`, entry: join(beforeDir, 'src/main.ts') });
}
const nodeArgs = args.profile ? ['--cpu-prof', '--cpu-prof-dir', resolve(args.profile)] : [];

interface Sums { n: number; seconds: number; cpu: number; lat: number[] }
const sums = (): Sums => ({ n: 0, seconds: 0, cpu: 0, lat: [] });

const builds = await Promise.all(entries.map(async ({ name, entry }, i) => {
  const dbPath = join('data', 'bench', `segment-${i}.duckdb`);
  const logDir = join('data', 'bench', `segment-log-${i}`);
  for (const path of [dbPath, `${dbPath}.wal`, logDir]) rmSync(path, { recursive: true, force: true });
  const { server, base } = await startServer(entry, {
    DATABASE_PATH: dbPath, BOOTSTRAP_SECRET_KEY: SECRET_KEY, INGEST_LOG_DIR: logDir, INGEST_BACKLOG_MAX_EVENTS: String(2 * chunk),
    INGEST_RATE_LIMIT_PER_MINUTE: '1000000',
  }, nodeArgs);
  return { name, server, base, dbPath, logDir, ack: sums(), total: sums(), drain: sums(), events: sums() };
}));
type Build = (typeof builds)[number];

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

/** CPU seconds (user + system, every thread) a server has used, from /proc. */
function serverCpu(build: Build): number {
  const fields = readFileSync(`/proc/${build.server.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function status(build: Build): Promise<{ backlog_events: number; resolved_events: number }> {
  return (await fetch(`${build.base}/v1/ingest/status`, { headers: { authorization: bearer } })).json() as Promise<{ backlog_events: number; resolved_events: number }>;
}

async function sustained(build: Build, path: string, bodies: string[], auth: string): Promise<{ seconds: number; latencies: number[]; cpu: number }> {
  const latencies: number[] = [];
  let next = 0;
  const cpu0 = serverCpu(build);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const s = performance.now();
      const res = await send(`${build.base}${path}`, body, { authorization: auth, 'content-type': 'application/json' });
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
      latencies.push(performance.now() - s);
    }
  }));
  return { seconds: (performance.now() - t0) / 1000, latencies, cpu: serverCpu(build) - cpu0 };
}

/** Waits for the backlog to drain; the seconds and server CPU it took. */
async function drain(build: Build): Promise<{ seconds: number; cpu: number; resolved: number }> {
  const cpu0 = serverCpu(build);
  const t0 = performance.now();
  const first = await status(build);
  let s = first;
  while (s.backlog_events > 0) {
    await new Promise((r) => setTimeout(r, 100));
    s = await status(build);
  }
  return { seconds: (performance.now() - t0) / 1000, cpu: serverCpu(build) - cpu0, resolved: s.resolved_events - first.resolved_events };
}

const add = (s: Sums, n: number, seconds: number, cpu: number, lat: number[] = []) => {
  s.n += n;
  s.seconds += seconds;
  s.cpu += cpu;
  s.lat.push(...lat);
};

// Warm: every user of the population becomes a known person through /v1/events (not measured).
for (const build of builds) await sustained(build, '/v1/events', Array.from({ length: 200 }, eventBatch), bearer);
const load0 = loadavg()[0]!.toFixed(1);
try {
  for (let done = 0; done < total; done += chunk) {
    const n = Math.min(chunk, total - done) / BATCH;
    for (const build of builds) {
      if (args['events-api'] && build === builds.at(-1)) {
        const events = await sustained(build, '/v1/events', Array.from({ length: n }, eventBatch), bearer);
        add(build.events, n * BATCH, events.seconds, events.cpu, events.latencies);
      }
      const bodies = Array.from({ length: n }, segmentBatch);
      const before = await status(build);
      const acked = await sustained(build, '/v1/batch', bodies, basic);
      const during = (await status(build)).resolved_events - before.resolved_events;
      const drained = await drain(build);
      // The resolver runs while requests are acknowledged: its share of that CPU is taken out at its drain cost.
      const resolveCpuPerEvent = drained.cpu / Math.max(1, drained.resolved);
      add(build.ack, n * BATCH, acked.seconds, acked.cpu - during * resolveCpuPerEvent, acked.latencies);
      add(build.total, n * BATCH, acked.seconds + drained.seconds, acked.cpu + drained.cpu);
      add(build.drain, drained.resolved, drained.seconds, drained.cpu);
    }
  }

  const rate = (s: Sums) => Math.round(s.n / s.seconds).toLocaleString('en-US');
  const perEvent = (s: Sums) => (s.cpu * 1e6 / s.n).toFixed(1);
  const ms = (s: Sums, p: number) => percentile(s.lat, p).toFixed(1);
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model} (shared with other work: load ${load0} → ${loadavg()[0]!.toFixed(1)}); node ${process.version}; batches of ${BATCH}, ${concurrency} in flight, 100,000 known persons, chunks of ${chunk.toLocaleString('en-US')} alternated\n`);
  console.log('| build | events | acknowledged events/s | p50 / p99 ms per batch | acknowledging CPU µs per event | resolution alone, events/s | its CPU µs per event | all CPU µs per event (acknowledge + resolve) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const b of builds) {
    console.log(`| ${b.name} | ${b.ack.n.toLocaleString('en-US')} | ${rate(b.ack)} | ${ms(b.ack, 0.5)} / ${ms(b.ack, 0.99)} | ${perEvent(b.ack)} | ${rate(b.drain)} | ${perEvent(b.drain)} | ${perEvent(b.total)} |`);
  }
  for (const b of builds.filter((x) => x.events.n > 0)) {
    console.log(`\n/v1/events on ${b.name}: ${b.events.n.toLocaleString('en-US')} events, ${rate(b.events)}/s, p50 / p99 ${ms(b.events, 0.5)} / ${ms(b.events, 0.99)} ms, ${perEvent(b.events)} µs CPU per event`);
  }
} finally {
  await Promise.all(builds.map((b) => new Promise((r) => { b.server.once('exit', r); b.server.kill('SIGTERM'); })));
  for (const b of builds) for (const path of [b.dbPath, `${b.dbPath}.wal`, b.logDir]) rmSync(path, { recursive: true, force: true });
  rmSync(beforeDir, { recursive: true, force: true });
}
