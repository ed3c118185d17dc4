// A burst of Segment batches much larger than the ingest log's backlog bound: clients post batches
// of 500 track calls for known persons to /v1/batch as fast as the server takes them; past the
// bound the server answers 503 with Retry-After, which the clients wait out (as Segment's and
// RudderStack's clients do), and the backlog drains. Reports events/s acknowledged over the burst,
// the 503s, the server's peak memory (VmHWM) and peak backlog, how long the drain took after the
// last acknowledgement, and checks that every acknowledged message was resolved.
//   npx tsx bench/segment-burst.bench.ts [--events 1000000] [--bound 100000] [--concurrency 8]
// The server is bench/segment-server.ts (as `npm start`) on data/bench/segment-burst.duckdb.

import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { BATCH, eventBatch, segmentBatch } from './support/batches.js';
import { basicAuth, segmentFiles } from './support/segment-files.js';
import { cpuSeconds, post, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '1000000' },
  bound: { type: 'string', default: '100000' },
  concurrency: { type: 'string', default: '8' },
} });
const total = Number(args.events);
const KEY = 'sk_bench_segment_burst_0123456789ab';
const basic = basicAuth(KEY);
const files = segmentFiles('segment-burst');
const { dbPath, clean } = files;
clean();
const { server, base } = await startServer('bench/segment-server.ts', { ...files.env, BOOTSTRAP_SECRET_KEY: KEY, INGEST_BACKLOG_MAX_EVENTS: args.bound });

const proc = (file: string) => readFileSync(`/proc/${server.pid}/${file}`, 'utf8');
const cpu = () => cpuSeconds(server.pid!);
const peakRssMiB = () => Number(/VmHWM:\s+(\d+)/.exec(proc('status'))![1]) / 1024;
async function status(): Promise<{ backlog_events: number; appended_events: number; resolved_events: number; set_aside: number }> {
  return (await fetch(`${base}/v1/ingest/status`, { headers: { authorization: `Bearer ${KEY}` } })).json() as never;
}

try {
  // Warm: every user becomes a known person through /v1/events (not measured).
  for (let i = 0; i < 200; i++) {
    const res = await post(`${base}/v1/events`, eventBatch(), { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' });
    if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
  }
  const start = await status();
  const load0 = loadavg()[0]!.toFixed(1);
  let sent = 0;
  let refused = 0;
  let peakBacklog = 0;
  const cpu0 = cpu();
  const t0 = performance.now();
  const watch = setInterval(() => { void status().then((s) => { peakBacklog = Math.max(peakBacklog, s.backlog_events); }, () => undefined); }, 250);
  await Promise.all(Array.from({ length: Number(args.concurrency) }, async () => {
    while (sent < total) {
      sent += BATCH;
      const body = segmentBatch('b');
      for (;;) {
        const res = await post(`${base}/v1/batch`, body, { authorization: basic, 'content-type': 'application/json' });
        if (res.status === 200) break;
        if (res.status !== 503) throw new Error(`${res.status} ${res.text}`);
        refused++;
        await new Promise((r) => setTimeout(r, 1000 * Number(JSON.parse(res.text).retry_after_seconds ?? 5)));
      }
    }
  }));
  const ackSeconds = (performance.now() - t0) / 1000;
  let s = await status();
  while (s.backlog_events > 0) {
    await new Promise((r) => setTimeout(r, 250));
    s = await status();
  }
  clearInterval(watch);
  const drainSeconds = (performance.now() - t0) / 1000 - ackSeconds;
  const acknowledged = s.appended_events - start.appended_events;
  const resolved = s.resolved_events - start.resolved_events;
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model} (shared with other work: load ${load0} → ${loadavg()[0]!.toFixed(1)}); node ${process.version}; `
    + `batches of ${BATCH}, ${args.concurrency} in flight, 100,000 known persons, backlog bound ${Number(args.bound).toLocaleString('en-US')}\n`);
  console.log('| events | acknowledged events/s over the burst | 503 answers | peak backlog | server peak RSS MiB | drain after the last ack, s | server CPU µs per event (acknowledge + resolve) | resolved = acknowledged |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---|');
  console.log(`| ${acknowledged.toLocaleString('en-US')} | ${Math.round(acknowledged / ackSeconds).toLocaleString('en-US')} | ${refused} | ${peakBacklog.toLocaleString('en-US')} `
    + `| ${peakRssMiB().toFixed(0)} | ${drainSeconds.toFixed(1)} | ${((cpu() - cpu0) * 1e6 / acknowledged).toFixed(1)} | ${resolved === acknowledged && acknowledged === total ? 'yes' : `no (${resolved} of ${acknowledged})`}, ${s.set_aside} set aside |`);
} finally {
  await new Promise((r) => { server.once('exit', r); server.kill('SIGTERM'); });
  clean();
}
