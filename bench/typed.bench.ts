// Typed payload columns (store/duckdb/typed.ts) against the JSON, on the bench database: each
// criteria of bench/criteria.ts that filters a payload, counted from its typed columns and from
// the JSON alone, alternating run by run (so load changes hit both alike); then the CPU ingest
// spends finding a batch's typed values.
//
//   npx tsx bench/typed.bench.ts [--events 100000000] [--rounds 15]

import { loadavg } from 'node:os';
import { planCriteria, printCount, validateCriteria, withTypedPaths } from '../src/criteria/index.js';
import { propertyCatalog } from '../src/store/duckdb/properties.js';
import { Store } from '../src/store/duckdb/db.js';
import { BENCH_CASES } from './criteria.js';
import { eventBatch } from './support/batches.js';
import { AT, benchArgs, openBenchDatabase, WS } from './support/dataset.js';

const { sizes, values } = benchArgs({ rounds: { type: 'string', default: '15' } });
const rounds = Number(values.rounds);
const log = (line: string) => console.log(line);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');

const { store } = await openBenchDatabase(sizes, log);
const typed = store.typed;
const t0 = performance.now();
const filled = await typed.fill();
if (filled > 0) log(`typed columns filled for ${filled.toLocaleString('en-US')} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const typedPaths = await typed.printable(WS);
const catalog = await propertyCatalog(store, WS);

log(`dataset: ${sizes.events.toLocaleString('en-US')} events; ${rounds} rounds; load before ${load()}`);
log('| criteria | count | typed min / p50 ms | JSON min / p50 ms | JSON / typed (p50) |');
log('|---|---:|---:|---:|---:|');
for (const c of BENCH_CASES) {
  const validated = validateCriteria(c.criteria, catalog);
  if (!validated.ok) throw new Error(`${c.name}: ${JSON.stringify(validated.errors)}`);
  const plan = planCriteria(validated.criteria, AT);
  const queries = { typed: printCount(withTypedPaths(plan, typedPaths), WS), json: printCount(plan, WS) };
  if (queries.typed.sql === queries.json.sql) continue;
  const times: Record<'typed' | 'json', number[]> = { typed: [], json: [] };
  let counts = new Set<number | null>();
  for (let round = -2; round < rounds; round++) {
    for (const kind of round % 2 === 0 ? ['typed', 'json'] as const : ['json', 'typed'] as const) {
      const start = performance.now();
      counts.add(await store.countWithin(queries[kind].sql, queries[kind].params, 600_000));
      if (round >= 0) times[kind].push(performance.now() - start);
    }
  }
  if (counts.size !== 1) throw new Error(`${c.name}: typed and JSON counts differ: ${[...counts].join(', ')}`);
  const stat = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return { min: s[0]!, p50: s[Math.floor(s.length / 2)]! }; };
  const [t, j] = [stat(times.typed), stat(times.json)];
  log(`| ${c.name} | ${[...counts][0]!.toLocaleString('en-US')} | ${t.min.toFixed(1)} / ${t.p50.toFixed(1)} | ${j.min.toFixed(1)} / ${j.p50.toFixed(1)} | ${(j.p50 / t.p50).toFixed(1)}× |`);
  counts = new Set();
}
log(`load after ${load()}`);
await store.close();

// Ingest's share: the typed values of 5,000 events of the ingest bench (6 names, 4 scalar paths each), CPU per event.
const scratch = await Store.open(':memory:');
const batch = Array.from({ length: 10 }, () => (JSON.parse(eventBatch()) as { batch: { event_name: string; properties: unknown }[] }).batch).flat()
  .map((e) => ({ event_name: e.event_name, payload: e.properties }));
const cpu: number[] = [];
for (let round = 0; round < 20; round++) {
  await scratch.transaction(async (tx) => {
    const before = process.cpuUsage();
    await scratch.typed.rows(tx, 'ws', batch);
    const used = process.cpuUsage(before);
    if (round >= 5) cpu.push((used.user + used.system) / batch.length);
  });
}
cpu.sort((a, b) => a - b);
log(`\ntyped values of a 5,000-event batch at ingest: p50 ${cpu[Math.floor(cpu.length / 2)]!.toFixed(2)} µs CPU per event (min ${cpu[0]!.toFixed(2)})`);
await scratch.close();
