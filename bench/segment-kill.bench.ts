// kill -9 at random moments during a large run of Segment batches (issue 37): the service as
// deployed (bench/segment-server.ts, resolver on, DuckDB file) takes batches of 500 track calls
// from 8 clients and is killed (SIGKILL) `--kills` times, each at a random moment within its share
// of the run, then restarted; after the last restart and the drain, every acknowledged message must
// be stored exactly once and no message more than once (those in flight at a kill may be stored or
// not: they were never acknowledged). test/ingest-log-kill.test.ts is the small CI-tier version.
//   npx tsx bench/segment-kill.bench.ts [--events 1000000] [--kills 10]
// Data in data/bench/segment-kill*, removed at the end.

import { type ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Store } from '../src/store/duckdb/db.js';
import { BATCH, segmentBatch } from './support/batches.js';
import { basicAuth, segmentFiles } from './support/segment-files.js';
import { post, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '1000000' },
  kills: { type: 'string', default: '10' },
  concurrency: { type: 'string', default: '8' },
} });
const total = Number(args.events);
const kills = Number(args.kills);
const KEY = 'sk_bench_segment_kill_0123456789abcd';
const basic = basicAuth(KEY);
const files = segmentFiles('segment-kill');
const { dbPath, clean } = files;
const env = { ...files.env, BOOTSTRAP_SECRET_KEY: KEY };
const exited = (child: ChildProcess) => new Promise<void>((resolve) => {
  if (child.exitCode !== null || child.signalCode !== null) resolve();
  else child.once('exit', () => resolve());
});

const acked = new Set<string>();
let sent = 0;

/** Posts batches until `stop()` says so or the server dies; acknowledged ids kept. */
async function postWhile(base: string, go: () => boolean): Promise<void> {
  await Promise.all(Array.from({ length: Number(args.concurrency) }, async () => {
    while (go() && sent < total) {
      sent += BATCH;
      const body = segmentBatch('k');
      const res = await post(`${base}/v1/batch`, body, { authorization: basic, 'content-type': 'application/json' }).catch(() => null);
      if (res?.status === 200) for (const m of (JSON.parse(body) as { batch: { messageId: string }[] }).batch) acked.add(m.messageId);
      else if (res === null) return;
      else if (res.status !== 503) throw new Error(`${res.status} ${res.text}`);
    }
  }));
}

clean();
const load0 = loadavg()[0]!.toFixed(1);
const t0 = performance.now();
try {
  for (let kill = 0; kill < kills; kill++) {
    const { server, base } = await startServer('bench/segment-server.ts', env);
    // The kill falls at a random point of this run's share of the events, requests in flight.
    const at = total * (kill + Math.random()) / (kills + 1);
    let killed = false;
    await postWhile(base, () => {
      if (!killed && sent >= at) {
        killed = true;
        server.kill('SIGKILL');
      }
      return !killed;
    });
    if (!killed) server.kill('SIGKILL');
    await exited(server);
  }
  const { server, base } = await startServer('bench/segment-server.ts', env);
  await postWhile(base, () => true);
  for (;;) {
    const s = await (await fetch(`${base}/v1/ingest/status`, { headers: { authorization: `Bearer ${KEY}` } })).json() as { backlog_events: number };
    if (s.backlog_events === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  server.kill('SIGTERM');
  await exited(server);
  const store = await Store.open(dbPath);
  try {
    const rows = await store.query('SELECT message_id, count(*) AS n FROM events GROUP BY message_id');
    const counts = new Map(rows.map((r) => [r.message_id as string, Number(r.n)]));
    const missing = [...acked].filter((id) => counts.get(id) !== 1).length;
    const repeated = [...counts.values()].filter((n) => n !== 1).length;
    console.log(`machine: ${cpus().length} × ${cpus()[0]?.model} (shared with other work: load ${load0} → ${loadavg()[0]!.toFixed(1)}); node ${process.version}; batches of ${BATCH}, ${args.concurrency} in flight`);
    console.log(`| events posted | acknowledged | kills | stored | acknowledged but not stored once | stored more than once | unacknowledged yet stored | wall s |`);
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
    console.log(`| ${sent.toLocaleString('en-US')} | ${acked.size.toLocaleString('en-US')} | ${kills} | ${counts.size.toLocaleString('en-US')} | ${missing} | ${repeated} | ${counts.size - acked.size + missing} | ${((performance.now() - t0) / 1000).toFixed(0)} |`);
    if (missing > 0 || repeated > 0) process.exitCode = 1;
  } finally {
    await store.close();
  }
} finally {
  clean();
}
