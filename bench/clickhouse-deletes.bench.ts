// ClickHouse privacy deletes and retention on chDB (issue 35), on the estimate dataset plus a
// workspace written through the API:
// - a delete of 1,000 persons (their events, page views, and copies of persons and visitors) as the
//   store runs it (eraseKeys: ALTER TABLE … DELETE mutations, waited for, counted again), of persons
//   of the dataset and of persons written through the API; against a lightweight DELETE (masks the
//   rows; gone from disk only at a later merge) and a lightweight DELETE followed by APPLY DELETED
//   MASK (rewrites the parts, as the mutation does);
// - a day of retention as the store runs it (eraseBefore: one mutation per table), against a TTL
//   on a `retention_days` column stamped per workspace (ClickHouse refuses dictGet in a TTL), the
//   day's expired rows removed by the TTL merge of the oldest partition; and the TTL's own costs:
//   stamping a workspace's rows when its retention is set or changed.
// Designs alternate round by round, each on persons of its own drawn at random.
// The dataset: a copy of the import `bench/clickhouse.bench.ts --prepare` made (slow to prepare), or
// with --generate the same shape built inside ClickHouse (bench/support/clickhouse-dataset.ts, once
// per size into D.seed-<sizes>), its events attached again to reach --events when --distinct-events
// is smaller (a 100 M dataset from 10 M generated rows, each row 10 times).
//   npx tsx bench/clickhouse-deletes.bench.ts [--people N --events N --pageviews N] [--generate [--distinct-events N]] [--dir D]
//     [--stamp all|days] [--api-persons 20000] [--rounds 3] [--designs mutations,api,lightweight,mask,retention]

import { spawnSync } from 'node:child_process';
import { cp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Bench } from 'tinybench';
import { buildApp } from '../src/http/app.js';
import { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import type { ClickHouseContext } from '../src/store/clickhouse/context.js';
import { eraseBefore, eraseKeys, keyTargets } from '../src/store/clickhouse/erase.js';
import { reloadVisitorLinks } from '../src/store/clickhouse/links.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';
import { multiplyEvents } from './support/clickhouse-dataset.js';
import { benchArgs, sizeTag, WS } from './support/dataset.js';

const { sizes, values } = benchArgs({
  'api-persons': { type: 'string', default: '20000' }, rounds: { type: 'string', default: '3' },
  generate: { type: 'boolean', default: false }, reuse: { type: 'boolean', default: false }, stamp: { type: 'string', default: 'all' }, 'distinct-events': { type: 'string' }, dir: { type: 'string' }, designs: { type: 'string', default: 'mutations,api,lightweight,mask,retention' },
});
const [apiPersons, rounds] = [Number(values['api-persons']), Number(values.rounds)];
const designs = new Set(String(values.designs).split(','));
const BATCH = 1000;
// The deletes consume the data: a copy of the prepared import each run, or a dataset generated for it.
const copy = typeof values.dir === 'string' ? values.dir : join('data', 'bench', `deletes-${sizeTag(sizes)}.chdb`);
// --reuse: the copy a stopped or --reuse run left (its attach and merges done); a run without it
// removes its copy at the end.
const reuse = values.reuse === true && existsSync(copy);
if (!reuse) await rm(copy, { recursive: true, force: true });
const distinct = Number(values['distinct-events'] ?? sizes.events);
const copies = values.generate ? sizes.events / distinct : 1;
if (!Number.isInteger(copies) || copies < 1) throw new Error('--distinct-events must divide --events');
if (reuse) {
  console.log(`reusing ${copy}`);
} else if (values.generate) {
  const generated = { ...sizes, events: distinct };
  const seed = `${copy}.seed-${sizeTag(generated)}`;
  if (!existsSync(seed)) {
    const t = performance.now();
    const args = ['tsx', 'bench/support/clickhouse-dataset.ts', '--people', `${sizes.people}`, '--events', `${distinct}`, '--pageviews', `${sizes.pageviews}`, '--out', seed];
    if (spawnSync('npx', args, { stdio: 'inherit' }).status !== 0) throw new Error('generating the dataset failed');
    console.log(`generated ${seed} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  await cp(seed, copy, { recursive: true });
} else {
  const prepared = join('data', 'bench', `${sizeTag(sizes)}.chdb`);
  if (!existsSync(prepared)) throw new Error(`${prepared} is missing: run \`npx tsx bench/clickhouse.bench.ts --prepare\` with the same sizes first, or pass --generate`);
  await cp(prepared, copy, { recursive: true });
}

const log = (line: string) => console.log(line);
const secs = (ms: number) => (ms / 1000).toFixed(2);
// chDB's own merge pool (4 tasks): more merges at once of the 100 M dataset's JSON parts open more
// files than this machine's 20,000 descriptors.
const stores = await openStores({ analyticsStore: 'clickhouse', databasePath: ':memory:', clickhouse: { path: copy, database: 'bench', engineArgs: [] } });
const ctx: ClickHouseContext = (stores.analytics as ClickHouseAnalytics).ctx;
const noSweep = () => Promise.resolve();
if (reuse) {
  // No merges from here on: a mutation waits for the merges of the parts it rewrites.
  await ctx.client.command({ query: 'ALTER TABLE bench.events MODIFY SETTING max_parts_to_merge_at_once = 1' });
  const [{ parts }] = await rows<{ parts: string }>(`SELECT count() AS parts FROM system.parts WHERE database = 'bench' AND table = 'events' AND active`) as [{ parts: string }];
  log(`events: ${parts} active parts, background merges off`);
} else if (copies > 1) {
  const t = performance.now();
  await multiplyEvents(ctx.client, 'bench', copies);
  log(`events attached ${copies} times in ${secs(performance.now() - t)} s`);
  // The attached copies are merged, untimed, before the rounds: a dataset inserted over time has
  // had its merges, and a mutation waits for the merges of the parts it rewrites (the first 100 M
  // run did, > 31 min). At most 8 parts a merge: a merge opens every file of its parts, and a
  // partition's ~50 attached parts (JSON paths: hundreds of files each) pass this machine's 20,000
  // descriptors (OPTIMIZE … FINAL failed so).
  const merging = performance.now();
  await ctx.client.command({ query: 'ALTER TABLE bench.events MODIFY SETTING max_parts_to_merge_at_once = 8' });
  let settled = 0;
  for (let last = -1; settled < 3;) {
    await delay(20_000);
    const [{ parts, merges }] = await rows<{ parts: string; merges: string }>(`SELECT
      (SELECT count() FROM system.parts WHERE database = 'bench' AND table = 'events' AND active) AS parts,
      (SELECT count() FROM system.merges WHERE database = 'bench' AND table = 'events') AS merges`) as [{ parts: string; merges: string }];
    settled = Number(merges) === 0 && Number(parts) === last ? settled + 1 : 0;
    last = Number(parts);
    log(`  merging: ${parts} parts, ${merges} merges under way (${secs(performance.now() - merging)} s)`);
  }
  log(`events merged in the background (at most 8 parts a merge, untimed) in ${secs(performance.now() - merging)} s`);
}
if (values.generate) await reloadVisitorLinks(ctx);

/** A statement's rows (a declaration: the dataset's steps above use it too). */
async function rows<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  return (await ctx.client.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
}
const command = (query: string, params: Record<string, unknown> = {}, settings: Record<string, string> = {}) =>
  ctx.client.command({ query, query_params: params, clickhouse_settings: settings });
/** Events' and page views' active parts on disk (parts a mutation replaced wait for their cleanup, not counted). */
const disk = async (when: string) => {
  const sized = await rows<{ table: string; size: string; columns: string }>(`SELECT table, formatReadableSize(sum(bytes_on_disk)) AS size,
    formatReadableSize(sum(data_uncompressed_bytes)) AS columns FROM system.parts WHERE database = 'bench' AND table IN ('events', 'pageviews') AND active
    GROUP BY table ORDER BY table`);
  log(`disk ${when}: ${sized.map((r) => `${r.table} ${r.size} (${r.columns} uncompressed)`).join(', ')}`);
};

// The API's write path: persons with 5 events and a page view each, 500 a call, into a workspace of their own.
const ws = await new Workspaces(stores.control).create('api');
const app = await buildApp({ stores, estimateBudgetMs: 60_000 });
const post = async (url: string, body: unknown) => {
  const res = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ws.secret_key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
};
let t0 = performance.now();
for (let from = 0; from < apiPersons * 5; from += 500) {
  await post('/v1/events', { batch: Array.from({ length: Math.min(500, apiPersons * 5 - from) }, (_, i) => {
    const p = (from + i) % apiPersons;
    return { event_name: from + i < apiPersons ? 'signup' : 'feature_used', user_id: `u_${p}`, visitor_id: `v_${p}`, email: `u${p}@example.com`, properties: { n: i } };
  }) });
}
for (let from = 0; from < apiPersons; from += 500) {
  await post('/v1/pageviews', { batch: Array.from({ length: Math.min(500, apiPersons - from) }, (_, i) => ({ visitor_id: `v_${from + i}`, url: 'https://shop.example/?utm_source=news' })) });
}
await (stores.analytics as ClickHouseAnalytics).sweepOutbox();
log(`API: ${apiPersons.toLocaleString('en-US')} persons, ${(apiPersons * 5).toLocaleString('en-US')} events, ${apiPersons.toLocaleString('en-US')} page views in ${secs(performance.now() - t0)} s`);

const { events, pageviews, parts } = (await rows<{ events: string; pageviews: string; parts: string }>(`SELECT
  (SELECT count() FROM bench.events) AS events, (SELECT count() FROM bench.pageviews) AS pageviews,
  (SELECT count() FROM system.parts WHERE database = 'bench' AND table = 'events' AND active) AS parts`))[0]!;
log(`machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}; chDB`);
log(`tables: ${Number(events).toLocaleString('en-US')} events (${parts} active parts), ${Number(pageviews).toLocaleString('en-US')} page views\n`);

// Persons with their visitors, at random: a batch of 1,000 per design and round.
const draw = async (workspace: string, n: number) => {
  const drawn = await rows<{ person_key: string; visitors: string[] }>(`SELECT p.person_key AS person_key, groupArray(v.visitor_key) AS visitors
    FROM (SELECT person_key FROM bench.persons FINAL WHERE workspace_id = {ws:String} ORDER BY rand() LIMIT {n:UInt32}) AS p
    LEFT JOIN (SELECT visitor_key, person_key FROM bench.visitors FINAL WHERE workspace_id = {ws:String}) AS v ON v.person_key = p.person_key
    GROUP BY p.person_key`, { ws: workspace, n });
  let next = 0;
  return () => {
    const picked = drawn.slice(next, next += BATCH);
    if (picked.length < BATCH) throw new Error(`fewer than ${BATCH} persons left to draw in ${workspace}: raise --api-persons`);
    return { persons: picked.map((p) => Number(p.person_key)), visitors: picked.flatMap((p) => p.visitors.map(Number).filter((v) => v > 0)) };
  };
};
const fromDataset = await draw(WS, BATCH * 3 * rounds);
const fromApi = await draw(ws.workspace_id, BATCH * rounds);

/** The rows left of a batch (0 after every design: a design that leaves rows is no design). */
async function left(workspace: string, persons: number[], visitors: number[]): Promise<number> {
  const { targets, params } = keyTargets(workspace, persons, visitors);
  const counts = await Promise.all(targets.map(async (t) => Number((await rows<{ n: string }>(`SELECT count() AS n FROM bench.${t.table} WHERE ${t.where}`, params))[0]!.n)));
  return counts.reduce((a, b) => a + b, 0);
}

const lightweight = async (persons: number[], visitors: number[], apply: boolean) => {
  const { targets, params } = keyTargets(WS, persons, visitors);
  for (const t of targets) {
    await command(`DELETE FROM bench.${t.table} WHERE ${t.where}`, params, { lightweight_deletes_sync: '2' });
    if (apply) await command(`ALTER TABLE bench.${t.table} APPLY DELETED MASK`, {}, { mutations_sync: '2' });
  }
};
type Design = { design: string; workspace: string; batch: () => { persons: number[]; visitors: number[] }; erase: (p: number[], v: number[]) => Promise<unknown> };
const deletes: Record<string, Design> = {
  'mutations (the store: eraseKeys), persons written through the API': { design: 'api', workspace: ws.workspace_id, batch: fromApi, erase: (p, v) => eraseKeys(ctx, ws.workspace_id, p, v, noSweep) },
  'mutations (the store: eraseKeys), persons of the dataset': { design: 'mutations', workspace: WS, batch: fromDataset, erase: (p, v) => eraseKeys(ctx, WS, p, v, noSweep) },
  'lightweight DELETE (masked only)': { design: 'lightweight', workspace: WS, batch: fromDataset, erase: (p, v) => lightweight(p, v, false) },
  'lightweight DELETE + APPLY DELETED MASK': { design: 'mask', workspace: WS, batch: fromDataset, erase: (p, v) => lightweight(p, v, true) },
};
await disk('before the deletes');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
// Retention first: on a slow machine its steps are the quick ones.
if (designs.has('retention')) await retentionRounds();

const taken: Record<string, number[]> = {};
let leftover = 0;
for (let round = 0; round < rounds; round++) {
  const bench = new Bench({ iterations: 1, time: 0, warmup: false });
  for (const [name, { design, workspace, batch, erase }] of Object.entries(deletes)) {
    if (!designs.has(design)) continue;
    const current = batch();
    bench.add(name, async () => {
      const t = performance.now();
      await erase(current.persons, current.visitors);
      log(`  ${name}: ${secs(performance.now() - t)} s (load ${loadavg()[0]!.toFixed(1)})`);
    }, {
      async afterEach() { leftover += await left(workspace, current.persons, current.visitors); },
    });
  }
  await bench.run();
  for (const task of bench.tasks) {
    if (task.result.state !== 'completed') throw new Error(`${task.name}: ${task.result.state}`);
    (taken[task.name] ??= []).push(task.result.latency.mean);
  }
  log(`round ${round + 1} (load ${loadavg()[0]!.toFixed(1)}): ${bench.tasks.map((task) => `${task.name} ${secs(task.result.state === 'completed' ? task.result.latency.mean : NaN)} s`).join('; ')}`);
}
if (leftover > 0) throw new Error(`${leftover} rows of deleted persons left`);
log(`\n| a delete of ${BATCH.toLocaleString('en-US')} persons | median s | runs (s) |\n|---|---:|---|`);
for (const [name, xs] of Object.entries(taken)) log(`| ${name} | ${secs(median(xs))} | ${xs.map(secs).join(', ')} |`);
await disk('after the deletes');

/** The retention designs, day by day. */
async function retentionRounds(): Promise<void> {
  // Retention. The imported events span the year before the dataset's date: the cuts start a quarter
  // into it (what is older erased first, untimed), so that each removes one day's rows.
  const { first, last } = (await rows<{ first: string; last: string }>(`SELECT toUnixTimestamp(min(ts)) AS first, toUnixTimestamp(max(ts)) AS last
    FROM bench.events WHERE workspace_id = {ws:String}`, { ws: WS }))[0]!;
  const DAY = 86_400;
  const start = Math.floor((Number(first) + (Number(last) - Number(first)) / 4) / DAY) * DAY;
  t0 = performance.now();
  await eraseBefore(ctx, WS, new Date(start * 1000), noSweep);
  log(`\nretention: what is older than ${new Date(start * 1000).toISOString().slice(0, 10)} erased (untimed step) in ${secs(performance.now() - t0)} s`);
  const older = async (table: string, before: number) => Number((await rows<{ n: string }>(
    `SELECT count() AS n FROM bench.${table} WHERE workspace_id = {ws:String} AND ts < toDateTime64({b:Float64}, 6, 'UTC')`, { ws: WS, b: before }))[0]!.n);
  const BATCHED = 'batched delete of a day (the store: eraseBefore)';
  const TTL = 'TTL: the merge of the partitions that hold the expired day (daily, in the background)';
  const STAMP = 'TTL: stamping a workspace\'s rows with its retention (when it is set or changed)';
  const retention: Record<string, number[]> = { [BATCHED]: [], [TTL]: [], [STAMP]: [] };
  // The TTL design: a column stamped with the workspace's retention, a TTL on it. The retention is
  // stamped once (timed: what setting or changing it costs), expiring nothing not erased already;
  // each round the batched delete then erases a day and the TTL expires the next: a day passing is
  // played by moving the TTL one day earlier (metadata only), and the forced merge recomputes it and
  // drops the day, as ClickHouse's TTL merge does in the background once a day has passed.
  const nowS = Math.floor(Date.now() / 1000);
  const ttl = (shift: number) => `toDateTime(ts) + toIntervalDay(retention_days) - toIntervalDay(${shift})`;
  t0 = performance.now();
  for (const table of ['events', 'pageviews']) {
    await command(`ALTER TABLE bench.${table} ADD COLUMN IF NOT EXISTS retention_days UInt16 DEFAULT 0`, {}, { mutations_sync: '2' });
    await command(`ALTER TABLE bench.${table} MODIFY TTL ${ttl(0)} WHERE retention_days > 0`, {}, { mutations_sync: '2', materialize_ttl_after_modify: '0' });
  }
  log(`\nTTL added (column and TTL, not materialized): ${secs(performance.now() - t0)} s`);
  const days = Math.ceil((nowS - start) / DAY);
  /** The TTL's first cut (what it expires before it is moved), then a day further for each batched and TTL step. */
  const base = nowS - days * DAY;
  // Stamped: the partitions holding the rounds' days (--stamp all: every row of the workspace).
  const lastMonth = new Date((base + (2 * rounds + 1) * DAY) * 1000).toISOString().slice(0, 7).replace('-', '');
  const partitions = await rows<{ table: string; partition_id: string; n: string }>(`SELECT table, partition_id, sum(rows) AS n FROM system.parts
    WHERE database = 'bench' AND table IN ('events', 'pageviews') AND active AND (partition_id <= {m:String} OR {all:Bool}) GROUP BY table, partition_id`,
  { m: lastMonth, all: values.stamp === 'all' });
  t0 = performance.now();
  for (const { table, partition_id: id } of partitions) {
    await command(`ALTER TABLE bench.${table} UPDATE retention_days = {d:UInt16} IN PARTITION ID {id:String} WHERE workspace_id = {ws:String}`, { d: days, id, ws: WS }, { mutations_sync: '2' });
  }
  retention[STAMP]!.push(performance.now() - t0);
  const stamped = partitions.reduce((sum, p) => sum + Number(p.n), 0);
  log(`TTL: stamping ${partitions.length} partitions (${stamped.toLocaleString('en-US')} rows) ${secs(retention[STAMP]!.at(-1)!)} s `
    + `(load ${loadavg()[0]!.toFixed(1)}); ${await older('events', base)} expired events left after it`);
  for (let round = 0; round < rounds; round++) {
    // Batched: the store's job erases what is older than the cut, one day more each round.
    const cut = base + (2 * round + 1) * DAY;
    const erased = await older('events', cut);
    t0 = performance.now();
    await eraseBefore(ctx, WS, new Date(cut * 1000), noSweep);
    retention[BATCHED]!.push(performance.now() - t0);
    if (await older('events', cut) !== 0) throw new Error('eraseBefore left rows');
    log(`round ${round + 1}: batched ${erased} events ${secs(retention[BATCHED]!.at(-1)!)} s (load ${loadavg()[0]!.toFixed(1)})`);
    // TTL: one more day expires, the merge of the partitions holding it drops it.
    const shift = 2 * round + 2;
    const expiredBefore = base + shift * DAY;
    const expiring = await older('events', expiredBefore);
    for (const table of ['events', 'pageviews']) {
      await command(`ALTER TABLE bench.${table} MODIFY TTL ${ttl(shift)} WHERE retention_days > 0`, {}, { mutations_sync: '2', materialize_ttl_after_modify: '0' });
    }
    const month = new Date(expiredBefore * 1000).toISOString().slice(0, 7).replace('-', '');
    const merged = await rows<{ partition_id: string }>(`SELECT DISTINCT partition_id FROM system.parts
      WHERE database = 'bench' AND table IN ('events', 'pageviews') AND active AND partition_id <= {m:String}`, { m: month });
    t0 = performance.now();
    for (const table of ['events', 'pageviews']) {
      for (const { partition_id: id } of merged) await command(`OPTIMIZE TABLE bench.${table} PARTITION ID {id:String} FINAL`, { id });
    }
    retention[TTL]!.push(performance.now() - t0);
    const still = await older('events', expiredBefore);
    log(`round ${round + 1}: TTL ${expiring} events expired, merge of ${merged.length} partitions ${secs(retention[TTL]!.at(-1)!)} s `
      + `(load ${loadavg()[0]!.toFixed(1)}; ${still} left)`);
    if (still !== 0) throw new Error('the TTL left expired rows');
  }
  log(`\n| a day of retention | median s | runs (s) |\n|---|---:|---|`);
  for (const [name, xs] of Object.entries(retention)) log(`| ${name} | ${secs(median(xs))} | ${xs.map(secs).join(', ')} |`);
  // The deletes after it run without the TTL.
  for (const table of ['events', 'pageviews']) await command(`ALTER TABLE bench.${table} REMOVE TTL`, {}, { mutations_sync: '2' });
}

await app.close();
await stores.close();
// A --reuse run keeps its copy for the next (what it deleted stays deleted).
if (values.reuse !== true) await rm(copy, { recursive: true, force: true });
