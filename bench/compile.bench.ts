// Estimate benchmarks on generated fixtures (default 1 M people, 10 M events, 2 M page views):
// compiled query vs hand-written DuckDB SQL vs the reference evaluator, and validation latency.
//
//   npm run bench                      # all of it (the reference evaluator loads every row in JS)
//   npm run bench -- --no-reference    # skip the reference evaluator
//
// Fixtures are generated into data/fixtures and imported into data/bench/bench.duckdb once.

import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { planCriteria, printCount, typedColumn, validateCriteria, withTypedPaths } from '../src/criteria/index.js';
import type { Store } from '../src/store/duckdb/db.js';
import { DATASET_TABLES, type Dataset, type DatasetTable, LAYOUT_COLUMNS } from '../src/store/layout.js';
import { propertyCatalog } from '../src/store/duckdb/properties.js';
import { utc } from '../src/store/duckdb/time.js';
import { referenceCount } from '../test/support/reference.js';
import { BENCH_CASES, resolveTyped } from './criteria.js';
import { AT, benchArgs, fixtureDir as fixtureDirOf, openBenchDatabase, WS } from './support/dataset.js';
import { benchValidation } from './validate.bench.js';
import { p50Of } from './support/tasks.js';

const { sizes, values: args } = benchArgs({ 'no-reference': { type: 'boolean', default: false } });
const fixtureDir = fixtureDirOf(sizes);

const AT_PARAM = utc(AT);
const handParams = (sql: string) => (sql.includes('$2') ? [WS, AT_PARAM] : [WS]);
const log = (line: string) => console.log(line);
/** The process's peak resident memory so far, from /proc (Linux). */
const peakRssGiB = () => (Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 2 ** 20).toFixed(2);
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1);

const { store, fresh } = await openBenchDatabase(sizes, log);

log(`\nmachine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}`);
log(`dataset: ${sizes.people.toLocaleString('en-US')} people, ${sizes.events.toLocaleString('en-US')} events, ${sizes.pageviews.toLocaleString('en-US')} page views\n`);

// Typed payload columns (store/duckdb/typed.ts): filled once for a database imported before them.
const t0 = performance.now();
const filled = await store.typed.fill();
if (filled > 0) log(`typed payload columns: ${filled.toLocaleString('en-US')} rows filled in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const typedPaths = await store.typed.printable(WS);
const slots = await store.query('SELECT event_name, path, kind, slot FROM event_slots WHERE workspace_id = $1 AND ready', [WS]);
const columnOf = (name: string, path: string, kind: string) => {
  const slot = slots.find((r) => r.event_name === name && r.path === path && r.kind === kind);
  if (!slot) throw new Error(`no typed column for ${name} ${path} ${kind}`);
  return typedColumn(kind as 'string', Number(slot.slot));
};

const catalog = await propertyCatalog(store, WS);
const compiled = BENCH_CASES.map((c) => {
  const validated = validateCriteria(c.criteria, catalog);
  if (!validated.ok) throw new Error(`${c.name}: ${JSON.stringify(validated.errors)}`);
  const plan = planCriteria(validated.criteria, AT);
  return {
    ...c, tree: validated.criteria, query: printCount(withTypedPaths(plan, typedPaths), WS), jsonQuery: printCount(plan, WS),
    hand: c.handTypedSql ? resolveTyped(c.handTypedSql, columnOf) : c.handSql,
  };
});

// Same answer first: a benchmark of a wrong query is worthless.
const counts: number[] = [];
for (const c of compiled) {
  const mine = await store.countWithin(c.query.sql, c.query.params, 600_000);
  const json = await store.countWithin(c.jsonQuery.sql, c.jsonQuery.params, 600_000);
  const hands = [];
  for (const sql of new Set([c.handSql, c.hand])) hands.push(Number(Object.values((await store.query(sql, handParams(sql)))[0] ?? {})[0]));
  if (mine !== json || hands.some((h) => h !== mine)) throw new Error(`${c.name}: compiled ${mine}, from the JSON ${json} ≠ hand-written ${hands.join(', ')}`);
  counts.push(mine!);
}

// Interleaved: each criteria's variants run one after the other, so load changes hit them alike.
const bench = new Bench({ iterations: 15, time: 0, warmupIterations: 2 });
for (const c of compiled) {
  bench.add(`compiled: ${c.name}`, async () => { await store.countWithin(c.query.sql, c.query.params, 600_000); });
  if (c.jsonQuery.sql !== c.query.sql) bench.add(`json: ${c.name}`, async () => { await store.countWithin(c.jsonQuery.sql, c.jsonQuery.params, 600_000); });
  bench.add(`hand: ${c.name}`, async () => { await store.query(c.hand, handParams(c.hand)); });
  if (c.hand !== c.handSql) bench.add(`hand json: ${c.name}`, async () => { await store.query(c.handSql, handParams(c.handSql)); });
}
await bench.run();
const p50 = (name: string) => p50Of(bench, name);
const has = (name: string) => bench.tasks.some((t) => t.name === name);

// Before the reference evaluator loads every row into JS: the peak of the estimates (and of the
// import, on a first run), DuckDB's buffers and Node's heap together.
log(`peak memory (VmHWM) after the estimates: ${peakRssGiB()} GiB${fresh ? ' (includes the import of this first run)' : ''}\n`);

// The reference evaluator holds its rows in JS (its heap at 10 M events: bench/RESULTS.md), so
// past 20 M events each criteria gets only the events of the names it names (no other event can
// change its answer) plus every other table.
const referencePerCase = sizes.events > 20_000_000;
/** Every table but events, loaded once for all criteria (loadDataset). */
let otherTables: Record<string, unknown[]> | null = null;
let reference: Dataset | null = null;
if (!args['no-reference'] && !referencePerCase) {
  const t0 = performance.now();
  reference = await loadDataset(store);
  // The evaluator indexes a dataset on first use; time the evaluations, not the indexing.
  referenceCount(reference, compiled[0]!.tree, AT);
  log(`reference evaluator: ${sizes.events.toLocaleString('en-US')} events loaded into JS in ${((performance.now() - t0) / 1000).toFixed(0)} s, heap ${(process.memoryUsage().heapUsed / 2 ** 30).toFixed(1)} GiB\n`);
}

log('| criteria | count | compiled p50 ms | from the JSON p50 ms | hand-written p50 ms | hand-written from the JSON | compiled / hand | reference ms | reference / compiled |');
log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const [i, c] of compiled.entries()) {
  const mine = p50(`compiled: ${c.name}`);
  const hand = p50(`hand: ${c.name}`);
  const json = has(`json: ${c.name}`) ? ms(p50(`json: ${c.name}`)) : '–';
  const handJson = has(`hand json: ${c.name}`) ? ms(p50(`hand json: ${c.name}`)) : '–';
  let refCells = '| – | – |';
  let data = reference;
  if (!args['no-reference'] && referencePerCase) {
    data = await loadDataset(store, eventNames(c.criteria));
    referenceCount(data, c.tree, AT); // indexing, not timed
  }
  if (data) {
    const t0 = performance.now();
    const n = referenceCount(data, c.tree, AT);
    const refMs = performance.now() - t0;
    if (n !== counts[i]) throw new Error(`${c.name}: reference ${n} ≠ ${counts[i]}`);
    refCells = `| ${refMs.toFixed(0)} | ${(refMs / mine).toFixed(0)}× |`;
  }
  log(`| ${c.name} | ${counts[i]!.toLocaleString('en-US')} | ${ms(mine)} | ${json} | ${ms(hand)} | ${handJson} | ${(mine / hand).toFixed(2)} ${refCells}`);
}

const validation = await benchValidation(catalog);
log(`\nvalidation of a 50-node tree: p50 ${validation.p50} µs, p99 ${validation.p99} µs (${validation.runs} runs)`);
await store.close();

/** The rows of one export table, for the reference evaluator; of events, only those named in `eventNames` when given. */
function loadTable(s: Store, table: DatasetTable, eventNames?: string[]): Promise<unknown[]> {
  const columns = LAYOUT_COLUMNS[table].map(([name, type]) => (type === 'BIGINT' ? `CAST("${String(name)}" AS DOUBLE) AS "${String(name)}"` : `"${String(name)}"`));
  const names = table === 'events' && eventNames ? eventNames : null;
  const where = names ? ` WHERE event_name IN (${names.length > 0 ? names.map((_, k) => `$${k + 2}`).join(', ') : 'NULL'})` : '';
  return s.query(`SELECT ${columns.join(', ')} FROM read_parquet($1)${where}`, [join(fixtureDir, `${table}.parquet`), ...(names ?? [])]);
}

/** Every row of the workspace in the export layout; only the events named in `eventNames` when given. */
async function loadDataset(s: Store, eventNames?: string[]): Promise<Dataset> {
  if (!otherTables) {
    otherTables = {};
    for (const table of DATASET_TABLES) if (table !== 'events') otherTables[table] = await loadTable(s, table);
  }
  return { ...otherTables, events: await loadTable(s, 'events', eventNames) } as unknown as Dataset;
}

/** The event names of a criteria's product_event leaves. */
function eventNames(criteria: unknown): string[] {
  const names = new Set<string>();
  const walk = (node: unknown) => {
    if (typeof node !== 'object' || node === null) return;
    const n = node as Record<string, unknown>;
    if (n.source === 'product_event' && typeof n.name === 'string') names.add(n.name);
    Object.values(n).forEach(walk);
  };
  walk(criteria);
  return [...names];
}
