// Member exports over HTTP (GET /v1/audiences/{id}/members?format=csv|parquet|arrow), wall time
// from the request to the last byte, on DuckDB and on ClickHouse (chDB), for an audience of
// ~100 k and one of ~1 M members of the bench dataset. The server runs in a process of its own
// (bench/export-server.ts); rounds alternate the versions, so both see the same load.
//   npx tsx bench/clickhouse.bench.ts --people 1000000 --events 2000000 --pageviews 1000000 --prepare   (once)
//   npx tsx bench/export.bench.ts [--people … --events … --pageviews …] [--rounds 3] [--before DIR]
// --before DIR: an older checkout (`git archive <rev> | tar -x -C DIR`, node_modules linked), run
// on the same files as a second version. The dataset's files are changed: audiences are added.

import { randomBytes } from 'node:crypto';
import { copyFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { benchArgs, sizeTag } from './support/dataset.js';
import { percentile, startServer } from './support/server.js';

const FORMATS = ['csv', 'parquet', 'arrow'] as const;
const ENGINES = ['duckdb', 'clickhouse'] as const;
const ever = (leaf: Record<string, unknown>) => ({ ...leaf, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } });
const event = (name: string) => ever({ source: 'product_event', name });
/** Two audiences of the bench dataset: ~94 k and ~1 M profiles (1 M people, 2 M events, 1 M page views). */
const AUDIENCES = [
  { name: 'added to cart', root: event('add_to_cart') },
  { name: 'seen at all', root: { op: 'or', children: [ever({ source: 'pageview' }), ...['session_start', 'view_item', 'feature_used', 'search', 'login'].map(event)] } },
];

const { sizes, values } = benchArgs({ rounds: { type: 'string', default: '3' }, before: { type: 'string' } });
const rounds = Number(values.rounds);
const databasePath = resolve('data', 'bench', `${sizeTag(sizes)}.duckdb`);
const chdbPath = resolve('data', 'bench', `${sizeTag(sizes)}.chdb`);
if (!existsSync(databasePath) || !existsSync(chdbPath)) throw new Error(`${databasePath} or ${chdbPath} is missing: run bench/clickhouse.bench.ts --prepare with these sizes`);
const versions = [{ label: 'this', root: process.cwd() }];
if (typeof values.before === 'string') {
  const root = resolve(values.before);
  await copyFile(join('bench', 'export-server.ts'), join(root, 'bench', 'export-server.ts'));
  versions.unshift({ label: 'before', root });
}

const key = `sk_bench_${randomBytes(12).toString('hex')}`;
const load = () => loadavg().map((n) => n.toFixed(1)).join(' ');
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}`);
console.log(`dataset: ${sizes.people.toLocaleString('en-US')} people, ${sizes.events.toLocaleString('en-US')} events, ${sizes.pageviews.toLocaleString('en-US')} page views; versions: ${versions.map((v) => `${v.label} (${v.root})`).join(', ')}`);

interface Sample { engine: string; version: string; members: number; format: string; bytes: number; ms: number }
const samples: Sample[] = [];

async function call(base: string, method: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(`${base}${path}`, {
    method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

/** The engine's audiences (created and refreshed on first use): id and member count. */
async function audiences(base: string, engine: string): Promise<{ id: string; members: number }[]> {
  const listed = (await (await call(base, 'GET', '/v1/audiences')).json()).data as { id: string; name: string; member_count: number | null }[];
  const out = [];
  for (const a of AUDIENCES) {
    const name = `bench ${engine}: ${a.name}`;
    let found = listed.find((l) => l.name === name && l.member_count !== null);
    if (!found) {
      const created = await (await call(base, 'POST', '/v1/audiences', { name, refresh_every: '1d', criteria_json: { version: 1, root: a.root } })).json();
      const t0 = performance.now();
      found = await (await call(base, 'POST', `/v1/audiences/${created.id}/refresh`)).json();
      console.log(`${engine}: refreshed "${a.name}" (${found!.member_count?.toLocaleString('en-US')} members) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    out.push({ id: found!.id, members: found!.member_count! });
  }
  return out;
}

/** Bytes of the export, read to the end, and the wall time from the request to the last byte. */
async function exportOnce(base: string, id: string, format: string): Promise<{ bytes: number; ms: number }> {
  const t0 = performance.now();
  const res = await call(base, 'GET', `/v1/audiences/${id}/members?format=${format}`);
  let bytes = 0;
  for await (const chunk of res.body!) bytes += chunk.length;
  return { bytes, ms: performance.now() - t0 };
}

for (const engine of ENGINES) {
  for (let round = 1; round <= rounds; round++) {
    for (const version of versions) {
      const { server, base } = await startServer(join(version.root, 'bench', 'export-server.ts'), {
        ANALYTICS_STORE: engine, DATABASE_PATH: databasePath, CLICKHOUSE_PATH: chdbPath, CLICKHOUSE_DATABASE: 'bench', BENCH_SECRET_KEY: key,
      });
      try {
        const [small, ...rest] = await audiences(base, engine);
        // Untimed: the first requests of a fresh process (code compiled, files cached).
        for (const format of FORMATS) await exportOnce(base, small!.id, format);
        const before = load();
        // Each round starts at another format, so none always follows the same one.
        const formats = FORMATS.map((_, i) => FORMATS[(i + round) % FORMATS.length]!);
        for (const a of [small!, ...rest]) {
          for (const format of formats) samples.push({ engine, version: version.label, members: a.members, format, ...await exportOnce(base, a.id, format) });
        }
        console.log(`${engine}, round ${round}, ${version.label}: load ${before} → ${load()}`);
      } finally {
        server.kill('SIGTERM');
        await new Promise((done) => server.once('exit', done));
      }
    }
  }
}

console.log(`\n| engine | members | format | version | size | wall ms, median (min–max) of ${rounds} | MB/s | rows/s |`);
console.log('|---|---:|---|---|---:|---:|---:|---:|');
for (const engine of ENGINES) {
  for (const members of [...new Set(samples.filter((s) => s.engine === engine).map((s) => s.members))]) {
    for (const format of FORMATS) {
      for (const version of versions) {
        const runs = samples.filter((s) => s.engine === engine && s.members === members && s.format === format && s.version === version.label);
        const ms = percentile(runs.map((r) => r.ms), 0.5);
        const bytes = runs[0]!.bytes;
        const range = `${Math.min(...runs.map((r) => r.ms)).toFixed(0)}–${Math.max(...runs.map((r) => r.ms)).toFixed(0)}`;
        console.log(`| ${engine} | ${members.toLocaleString('en-US')} | ${format} | ${version.label} | ${(bytes / 2 ** 20).toFixed(1)} MiB | ${ms.toFixed(0)} (${range}) | ${(bytes / 1e6 / (ms / 1000)).toFixed(0)} | ${Math.round(members / (ms / 1000)).toLocaleString('en-US')} |`);
      }
    }
  }
}
