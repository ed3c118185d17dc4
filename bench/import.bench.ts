// The analyst's import (store/duckdb/import.ts): a generated export of parquet files into a new
// DuckDB database (its typed payload columns filled, as `audiences load` leaves it), and the same of
// small in-memory datasets as the tests import them (importDataset). With `--before <rev>`, that
// revision's store (its src/ tree beside this one) imports the same files first.
//   npx tsx bench/import.bench.ts [--events 1000000] [--rounds 3] [--small 40] [--before none|<rev>]

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { Bench } from 'tinybench';
import { generateFixtures } from '../fixtures/generate.js';
import { Store } from '../src/store/duckdb/db.js';
import { importDataset, importParquetDir } from '../src/store/duckdb/import.js';
import { datasetArb } from '../test/support/arbitraries.js';
import { p50Of } from './support/tasks.js';

const { values: args } = parseArgs({ options: {
  people: { type: 'string', default: '50000' },
  events: { type: 'string', default: '1000000' },
  pageviews: { type: 'string', default: '200000' },
  rounds: { type: 'string', default: '3' },
  small: { type: 'string', default: '40' },
  before: { type: 'string', default: 'none' },
} });
const tag = `${args.people}-${args.events}-${args.pageviews}`;
const fixtureDir = join('data', 'fixtures', tag);
if (!existsSync(join(fixtureDir, 'events.parquet'))) {
  await generateFixtures({ people: Number(args.people), events: Number(args.events), pageviews: Number(args.pageviews), seed: 3, out: fixtureDir });
}

interface Revision {
  name: string;
  Store: typeof Store;
  importParquetDir: typeof importParquetDir;
  importDataset: typeof importDataset;
}
const revisions: Revision[] = [{ name: 'after', Store, importParquetDir, importDataset }];
const beforeDir = join(dirname(fileURLToPath(import.meta.url)), `.before-${process.pid}`);
if (args.before !== 'none') {
  await mkdir(beforeDir, { recursive: true });
  execFileSync('git', ['archive', '--output', join(beforeDir, 'src.tar'), args.before, 'src']);
  execFileSync('tar', ['-x', '-C', beforeDir, '-f', join(beforeDir, 'src.tar')]);
  const db = await import(join(beforeDir, 'src/store/duckdb/db.ts')) as { Store: typeof Store };
  const imports = await import(join(beforeDir, 'src/store/duckdb/import.ts')) as Pick<Revision, 'importParquetDir' | 'importDataset'>;
  revisions.unshift({ name: 'before', Store: db.Store, ...imports });
  console.log(`before: ${execFileSync('git', ['log', '-1', '--format=%h %cs', args.before], { encoding: 'utf8' }).trim()}`);
}

const small = fc.sample(datasetArb, { numRuns: Number(args.small), seed: 20261128 });
const cpuMs: Record<string, number[]> = {};
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

/** A task that opens a new in-memory store, imports, fills the typed columns and closes; its CPU recorded. */
const task = (name: string, work: (r: Revision, store: Store) => Promise<void>, r: Revision) => async () => {
  const store = await r.Store.open(':memory:');
  const c0 = cpu();
  await work(r, store);
  (cpuMs[name] ??= []).push(cpu() - c0);
  await store.close();
};

const bench = new Bench({ iterations: Number(args.rounds), warmupIterations: 0, time: 0, warmupTime: 0 });
for (const r of revisions) {
  bench.add(`${r.name}: ${tag} parquet`, task(`${r.name}: ${tag} parquet`, async (rev, store) => {
    await rev.importParquetDir(store, 'ws_import', fixtureDir);
  }, r));
  bench.add(`${r.name}: ${args.small} small datasets`, task(`${r.name}: ${args.small} small datasets`, async (rev, store) => {
    let i = 0;
    for (const ds of small) await rev.importDataset(store, `ws_${i++}`, ds);
  }, r));
}
console.log(`load ${loadavg()[0]!.toFixed(1)}, DUCKDB_THREADS=${process.env.DUCKDB_THREADS ?? 'all'}`);
await bench.run();
console.log(`load ${loadavg()[0]!.toFixed(1)}`);
console.log('\n| import | p50 ms (wall) | CPU ms (p50) |\n|---|---:|---:|');
for (const t of bench.tasks) {
  const cpus = [...cpuMs[t.name]!].sort((a, b) => a - b);
  console.log(`| ${t.name} | ${p50Of(bench, t.name).toFixed(0)} | ${cpus[Math.floor(cpus.length / 2)]!.toFixed(0)} |`);
}
await rm(beforeDir, { recursive: true, force: true });
