// The estimate's other statements on both analytical stores, one run, against the exact count of
// the representative criteria: the sampled count an estimate runs past its exact one (1 % of the
// profiles), the breakdown by first-touch channel, and the overlap of three and four audiences.
//   npx tsx bench/insights.bench.ts [--people N --events N --pageviews N]
// Needs both copies of the dataset (npx tsx bench/clickhouse.bench.ts --prepare).

import { existsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { DEFAULT_SAMPLE } from '../src/audiences/compile.js';
import {
  type Breakdown, CLICKHOUSE_QUERY_SETTINGS, ClickHousePrinter, type CompiledQuery, type ClickHouseQuery, planCriteria, printBreakdown, printCount,
  printOverlap, type SetPlan, validateCriteria,
} from '../src/criteria/index.js';
import { connectClickHouse } from '../src/store/clickhouse/client.js';
import { propertyCatalog } from '../src/store/duckdb/properties.js';
import { BENCH_CASES } from './criteria.js';
import { AT, benchArgs, openBenchDatabase, sizeTag, WS } from './support/dataset.js';
import { p50Of } from './support/tasks.js';

const DATABASE = 'bench';
const log = (line: string) => console.log(line);
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1);

const { sizes } = benchArgs();
const chdbPath = join('data', 'bench', `${sizeTag(sizes)}.chdb`);
if (!existsSync(chdbPath)) throw new Error(`no ClickHouse copy at ${chdbPath}: run npx tsx bench/clickhouse.bench.ts --prepare first`);
const { store } = await openBenchDatabase(sizes, log);
const client = await connectClickHouse({ path: chdbPath, database: DATABASE });

log(`\nmachine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; chDB through @clickhouse/client`);
log(`dataset: ${sizes.people.toLocaleString('en-US')} people, ${sizes.events.toLocaleString('en-US')} events, ${sizes.pageviews.toLocaleString('en-US')} page views\n`);

const catalog = await propertyCatalog(store, WS);
const plans = BENCH_CASES.map((c) => {
  const validated = validateCriteria(c.criteria, catalog);
  if (!validated.ok) throw new Error(`${c.name}: ${JSON.stringify(validated.errors)}`);
  return { name: c.name, plan: planCriteria(validated.criteria, AT) };
});
const byChannel: Breakdown = { kind: 'first_touch_channel' };

type Row = Record<string, unknown>;
const duck = async (q: CompiledQuery): Promise<Row[]> => store.query(q.sql, q.params);
const house = async (q: ClickHouseQuery): Promise<Row[]> => {
  const result = await client.query({ query: q.sql, query_params: q.params, format: 'JSONEachRow', clickhouse_settings: CLICKHOUSE_QUERY_SETTINGS });
  return result.json<Row>();
};

/** Each statement in both dialects. */
const chPrinter = new ClickHousePrinter(DATABASE);
interface Statement { name: string; duckdb: CompiledQuery; clickhouse: ClickHouseQuery }
const statements: Statement[] = [];
for (const { name, plan } of plans) {
  statements.push(
    { name: `${name}: count`, duckdb: printCount(plan, WS), clickhouse: chPrinter.count(plan, WS) },
    { name: `${name}: 1 % sample`, duckdb: printCount(plan, WS, DEFAULT_SAMPLE), clickhouse: chPrinter.count(plan, WS, DEFAULT_SAMPLE) },
    { name: `${name}: by channel`, duckdb: printBreakdown(plan, WS, byChannel), clickhouse: chPrinter.breakdown(plan, WS, byChannel) },
  );
}
for (const n of [3, 4]) {
  const some: SetPlan[] = plans.slice(0, n).map((p) => p.plan);
  statements.push({ name: `overlap of the first ${n}`, duckdb: printOverlap(some, WS), clickhouse: chPrinter.overlap(some, WS) });
}

// Same answers first: totals of the breakdowns and the overlaps' sizes against the counts.
const total = (rows: Row[]) => Number(rows[0]?.total ?? rows[0]?.count ?? 0);
for (const s of statements) {
  const [a, b] = [await duck(s.duckdb), await house(s.clickhouse)];
  const [x, y] = s.name.startsWith('overlap')
    ? [a, b].map((rows) => rows.reduce((sum, r) => sum + Number(r.count), 0))
    : [total(a), total(b)];
  if (s.name.endsWith('sample')) log(`${s.name}: DuckDB ${x}, ClickHouse ${y} sampled`);
  else if (x !== y) throw new Error(`${s.name}: DuckDB ${x} ≠ ClickHouse ${y}`);
}

const bench = new Bench({ iterations: 7, time: 0, warmupIterations: 1 });
for (const s of statements) {
  bench.add(`duckdb: ${s.name}`, async () => { await duck(s.duckdb); });
  bench.add(`clickhouse: ${s.name}`, async () => { await house(s.clickhouse); });
}
await bench.run();
const p50 = (name: string) => p50Of(bench, name);
log('| statement | DuckDB p50 ms | ClickHouse p50 ms |');
log('|---|---:|---:|');
for (const s of statements) log(`| ${s.name} | ${ms(p50(`duckdb: ${s.name}`))} | ${ms(p50(`clickhouse: ${s.name}`))} |`);
await client.close();
await store.close();
