// Server CPU per event when each event creates a person with an email (new users signing up), and
// when the same users send again (known persons): the service as of `--before` (a git revision's
// src/, run beside this checkout so its packages resolve) and today's, each on a fresh DuckDB file,
// alternated build by build in one run.
//   npx tsx bench/new-persons.bench.ts [--events 200000] [--rounds 2] [--before main] [--concurrency 16] [--lookup]
// `--lookup`: a people lookup first, so that the writes keep the people search's indexes in memory,
// as in a service whose lookup was used since it started (without it they are never made).

import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BATCH } from './support/batches.js';
import { post, startServer } from './support/server.js';

const { values: args } = parseArgs({ options: {
  events: { type: 'string', default: '200000' },
  rounds: { type: 'string', default: '2' },
  before: { type: 'string', default: 'main' },
  concurrency: { type: 'string', default: '16' },
  lookup: { type: 'boolean', default: false },
} });
const EVENTS = Number(args.events);
const CONCURRENCY = Number(args.concurrency);
const SECRET_KEY = 'sk_bench_new_persons_0123456789ab';
const here = dirname(fileURLToPath(import.meta.url));
const beforeDir = join(here, `.before-${process.pid}`);
mkdirSync(beforeDir, { recursive: true });
execFileSync('git', ['archive', '--output', join(beforeDir, 'src.tar'), args.before, 'src']);
execFileSync('tar', ['-x', '-C', beforeDir, '-f', join(beforeDir, 'src.tar')]);
const builds = [
  { name: `before (${execFileSync('git', ['log', '-1', '--format=%h', args.before], { encoding: 'utf8' }).trim()})`, entry: join(beforeDir, 'src/main.ts') },
  { name: `after (${execFileSync('git', ['log', '-1', '--format=%h', 'HEAD'], { encoding: 'utf8' }).trim()} + worktree)`, entry: 'src/main.ts' },
];

/** Batches of events, each of a user `u<run>_<i>` with an email and a visitor of its own. */
const bodies = (run: number) => Array.from({ length: Math.ceil(EVENTS / BATCH) }, (_, b) => JSON.stringify({ batch: Array.from({ length: BATCH }, (_, j) => {
  const i = b * BATCH + j;
  return { event_name: 'signup', user_id: `u${run}_${i}`, email: `user${i}.r${run}@${['example.com', 'acme.io', 'mail.org'][i % 3]}`, visitor_id: `v${run}_${i}`,
    properties: { plan: ['free', 'pro'][i % 2] }, message_id: `m${run}_${i}_${Math.random()}` };
}) }));

/** CPU seconds (user + system) of a process so far, from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Sends the bodies with CONCURRENCY in flight; µs of server CPU per event and events/s. */
async function send(base: string, pid: number, batches: string[]): Promise<{ cpu: number; rate: number }> {
  let next = 0;
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < batches.length) {
      const res = await post(`${base}/v1/events`, batches[next++]!, { authorization: `Bearer ${SECRET_KEY}`, 'content-type': 'application/json' });
      if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
    }
  }));
  const events = batches.length * BATCH;
  return { cpu: ((cpuSeconds(pid) - cpu0) * 1e6) / events, rate: events / ((performance.now() - t0) / 1000) };
}

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; node ${process.version}; ${EVENTS.toLocaleString('en-US')} events a pass, batches of ${BATCH}, ${CONCURRENCY} in flight${args.lookup ? '; a people lookup first (the search\'s indexes kept)' : ''}\n`);
console.log('| round | build | new persons: µs server CPU an event | events/s | known persons: µs an event | events/s | load (1 min) |');
console.log('|---|---|---:|---:|---:|---:|---:|');
try {
  for (let round = 1; round <= Number(args.rounds); round++) {
    for (const build of builds) {
      const dbPath = join('data', 'bench', `new-persons-${process.pid}.duckdb`);
      rmSync(dbPath, { force: true });
      rmSync(`${dbPath}.wal`, { force: true });
      const { server, base } = await startServer(build.entry, { DATABASE_PATH: dbPath, BOOTSTRAP_SECRET_KEY: SECRET_KEY });
      try {
        if (args.lookup) {
          const res = await fetch(`${base}/people?q=nobody`, { headers: { authorization: `Bearer ${SECRET_KEY}` } });
          if (res.status !== 200) throw new Error(`GET /people: ${res.status}`);
        }
        const fresh = await send(base, server.pid!, bodies(round));
        // The same users again (new message ids): their persons are known.
        const known = await send(base, server.pid!, bodies(round));
        console.log(`| ${round} | ${build.name} | ${fresh.cpu.toFixed(1)} | ${Math.round(fresh.rate).toLocaleString('en-US')} | ${known.cpu.toFixed(1)} | ${Math.round(known.rate).toLocaleString('en-US')} | ${loadavg()[0]!.toFixed(1)} |`);
      } finally {
        await new Promise((resolve) => { server.once('exit', resolve); server.kill('SIGTERM'); });
        rmSync(dbPath, { force: true });
        rmSync(`${dbPath}.wal`, { force: true });
      }
    }
  }
} finally {
  rmSync(beforeDir, { recursive: true, force: true });
}
