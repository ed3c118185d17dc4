// The Segment-compatible API's acknowledging path and its background resolution: batches of 500
// track calls for known persons posted to /v1/batch (acknowledged once in the ingest log), on the
// service as of `--before` (a git revision's src/, run beside this checkout so its packages
// resolve) and on today's, every server up at once, alternated chunk by chunk in one run. Each
// build runs two servers (bench/segment-server.ts, as `npm start`): one with its resolver stopped,
// where the server's CPU (from /proc, from outside) is the acknowledging path's alone; one as
// deployed, acknowledging while it resolves, then draining its backlog (resolution alone). With
// --events-api, the same kind of batches posted to /v1/events (answered once resolved and stored)
// on today's build too. With --backlog, the servers without a resolver then resolve all they
// acknowledged at once (SIGUSR2), build after build: resolution catching up on a backlog in full
// windows, where the drains above take only what the resolver left while acknowledging. --profile
// DIR runs the servers under `node --cpu-prof` (profiles in DIR).
//   npx tsx bench/segment.bench.ts [--events 300000] [--chunk 100000] [--concurrency 8] [--before main|none] [--backlog]
// Data in data/bench/segment-*.duckdb and data/bench/segment-log-*, removed at the end.

import { type ChildProcess, execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BATCH, eventBatch, segmentBatch } from './support/batches.js';
import { basicAuth, segmentFiles } from './support/segment-files.js';
import { cpuSeconds, percentile, post as send, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '300000' },
  chunk: { type: 'string', default: '100000' },
  concurrency: { type: 'string', default: '8' },
  before: { type: 'string', default: 'main' },
  'events-api': { type: 'boolean', default: false },
  backlog: { type: 'boolean', default: false },
  profile: { type: 'string' },
} });
const total = Number(args.events);
const chunk = Number(args.chunk);
const concurrency = Number(args.concurrency);
const SECRET_KEY = 'sk_bench_segment_0123456789abcdef';
const basic = basicAuth(SECRET_KEY);
const bearer = `Bearer ${SECRET_KEY}`;

const here = dirname(fileURLToPath(import.meta.url));
const beforeDir = join(here, `.before-${process.pid}`);
const revision = (rev: string) => execFileSync('git', ['log', '-1', '--format=%h', rev], { encoding: 'utf8' }).trim();
const SERVER = 'bench/segment-server.ts';
const entries = [{ name: `after (${revision('HEAD')} + worktree)`, entry: SERVER }];
if (args.before !== 'none') {
  // The same server file beside the earlier src/, so that it runs that code.
  mkdirSync(join(beforeDir, 'bench'), { recursive: true });
  execFileSync('git', ['archive', '--output', join(beforeDir, 'src.tar'), args.before, 'src']);
  execFileSync('tar', ['-x', '-C', beforeDir, '-f', join(beforeDir, 'src.tar')]);
  copyFileSync(SERVER, join(beforeDir, SERVER));
  entries.unshift({ name: `before (${revision(args.before)})`, entry: join(beforeDir, SERVER) });
}
const nodeArgs = args.profile ? ['--cpu-prof', '--cpu-prof-dir', resolve(args.profile)] : [];

interface Sums { n: number; seconds: number; cpu: number; lat: number[] }
const sums = (): Sums => ({ n: 0, seconds: 0, cpu: 0, lat: [] });

interface Server { server: ChildProcess; base: string; clean(): void }
let started = 0;
async function serve(entry: string, resolver: boolean): Promise<Server> {
  const files = segmentFiles(`segment-${started++}`);
  files.clean();
  const { server, base } = await startServer(entry, {
    ...files.env, BOOTSTRAP_SECRET_KEY: SECRET_KEY, BENCH_RESOLVER: resolver ? 'on' : 'off',
    // The server without a resolver keeps every acknowledged message.
    INGEST_BACKLOG_MAX_EVENTS: String(resolver ? 2 * chunk : total + 50 * BATCH),
  }, nodeArgs);
  return { server, base, clean: files.clean };
}

const builds = [];
for (const { name, entry } of entries) {
  builds.push({ name, alone: await serve(entry, false), full: await serve(entry, true), ackAlone: sums(), ack: sums(), total: sums(), drain: sums(), events: sums(), backlog: sums() });
}
type Build = (typeof builds)[number];

async function status(build: Server): Promise<{ backlog_events: number; resolved_events: number }> {
  return (await fetch(`${build.base}/v1/ingest/status`, { headers: { authorization: bearer } })).json() as Promise<{ backlog_events: number; resolved_events: number }>;
}

async function sustained(build: Server, path: string, bodies: string[], auth: string): Promise<{ seconds: number; latencies: number[]; cpu: number }> {
  const latencies: number[] = [];
  let next = 0;
  const cpu0 = cpuSeconds(build.server.pid!);
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
  return { seconds: (performance.now() - t0) / 1000, latencies, cpu: cpuSeconds(build.server.pid!) - cpu0 };
}

/** Waits for the backlog to drain (after `start`, when given); the seconds and server CPU it took. */
async function drain(build: Server, start?: () => void): Promise<{ seconds: number; cpu: number; resolved: number }> {
  const first = await status(build);
  const cpu0 = cpuSeconds(build.server.pid!);
  const t0 = performance.now();
  start?.();
  let s = first;
  while (s.backlog_events > 0) {
    await new Promise((r) => setTimeout(r, 100));
    s = await status(build);
  }
  return { seconds: (performance.now() - t0) / 1000, cpu: cpuSeconds(build.server.pid!) - cpu0, resolved: s.resolved_events - first.resolved_events };
}

const add = (s: Sums, n: number, seconds: number, cpu: number, lat: number[] = []) => {
  s.n += n;
  s.seconds += seconds;
  s.cpu += cpu;
  s.lat.push(...lat);
};

// Warm: every user of the population becomes a known person through /v1/events (with --backlog on
// the servers without a resolver too, whose backlog is then of known persons), and the servers
// without a resolver take 50 batches (not measured).
for (const build of builds) {
  await sustained(build.full, '/v1/events', Array.from({ length: 200 }, eventBatch), bearer);
  if (args.backlog) await sustained(build.alone, '/v1/events', Array.from({ length: 200 }, eventBatch), bearer);
  await sustained(build.alone, '/v1/batch', Array.from({ length: 50 }, () => segmentBatch('w')), basic);
}
const load0 = loadavg()[0]!.toFixed(1);
try {
  for (let done = 0; done < total; done += chunk) {
    const n = Math.min(chunk, total - done) / BATCH;
    for (const build of builds) {
      const alone = await sustained(build.alone, '/v1/batch', Array.from({ length: n }, () => segmentBatch('s')), basic);
      add(build.ackAlone, n * BATCH, alone.seconds, alone.cpu, alone.latencies);
      if (args['events-api'] && build === builds.at(-1)) {
        const events = await sustained(build.full, '/v1/events', Array.from({ length: n }, eventBatch), bearer);
        add(build.events, n * BATCH, events.seconds, events.cpu, events.latencies);
      }
      const acked = await sustained(build.full, '/v1/batch', Array.from({ length: n }, () => segmentBatch('s')), basic);
      add(build.ack, n * BATCH, acked.seconds, acked.cpu, acked.latencies);
      const drained = await drain(build.full);
      add(build.total, n * BATCH, acked.seconds + drained.seconds, acked.cpu + drained.cpu);
      add(build.drain, drained.resolved, drained.seconds, drained.cpu);
    }
  }

  if (args.backlog) {
    for (const build of builds) {
      const drained = await drain(build.alone, () => build.alone.server.kill('SIGUSR2'));
      add(build.backlog, drained.resolved, drained.seconds, drained.cpu);
    }
  }
  const rate = (s: Sums) => Math.round(s.n / s.seconds).toLocaleString('en-US');
  const perEvent = (s: Sums) => (s.cpu * 1e6 / s.n).toFixed(1);
  const ms = (s: Sums, p: number) => percentile(s.lat, p).toFixed(1);
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model} (shared with other work: load ${load0} → ${loadavg()[0]!.toFixed(1)}); node ${process.version}; batches of ${BATCH}, ${concurrency} in flight, 100,000 known persons, chunks of ${chunk.toLocaleString('en-US')} alternated\n`);
  console.log('| build | events | acknowledged alone: events/s | p50 / p99 ms per batch | CPU µs per event | acknowledged while resolving: events/s | p50 / p99 ms | resolution alone: events/s | its CPU µs per event | all CPU µs per event (acknowledge + resolve) |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const b of builds) {
    console.log(`| ${b.name} | ${b.ack.n.toLocaleString('en-US')} | ${rate(b.ackAlone)} | ${ms(b.ackAlone, 0.5)} / ${ms(b.ackAlone, 0.99)} | ${perEvent(b.ackAlone)} `
      + `| ${rate(b.ack)} | ${ms(b.ack, 0.5)} / ${ms(b.ack, 0.99)} | ${rate(b.drain)} | ${perEvent(b.drain)} | ${perEvent(b.total)} |`);
  }
  for (const b of builds.filter((x) => x.backlog.n > 0)) {
    console.log(`\nbacklog on ${b.name}: ${b.backlog.n.toLocaleString('en-US')} acknowledged events resolved at once, ${rate(b.backlog)}/s, ${perEvent(b.backlog)} µs CPU per event`);
  }
  for (const b of builds.filter((x) => x.events.n > 0)) {
    console.log(`\n/v1/events on ${b.name}: ${b.events.n.toLocaleString('en-US')} events, ${rate(b.events)}/s, p50 / p99 ${ms(b.events, 0.5)} / ${ms(b.events, 0.99)} ms, ${perEvent(b.events)} µs CPU per event`);
  }
} finally {
  const servers = builds.flatMap((b) => [b.alone, b.full]);
  await Promise.all(servers.map((s) => new Promise((r) => { s.server.once('exit', r); s.server.kill('SIGTERM'); })));
  for (const s of servers) s.clean();
  rmSync(beforeDir, { recursive: true, force: true });
}
