// The revenue report (issue 18 §2) on both analytical stores, the same rows in each: revenue by
// channel_category per month over the year before the dataset's "now", every attribution model.
//   npx tsx bench/revenue.bench.ts [--people N --events N --pageviews N] [--iterations N]
// Needs the DuckDB file and the ClickHouse copy of bench/clickhouse.bench.ts (data/bench/<sizes>.*),
// which it changes: the export layout has no payment time, so its paid invoices get their creation
// time as paid_at (as an import now does), and the ClickHouse copy gets the payments table.

import { existsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import {
  ATTRIBUTION_MODELS, CLICKHOUSE_QUERY_SETTINGS, ClickHousePrinter, DEFAULT_HALF_LIFE_DAYS, DEFAULT_LOOKBACK_DAYS, type ReportPlan,
} from '../src/criteria/index.js';
import type { RevenueRow } from '../src/store/analytics.js';
import { revenueRow } from '../src/store/query/rows.js';
import { connectClickHouse } from '../src/store/clickhouse/client.js';
import { clickhouseSchema } from '../src/store/clickhouse/schema.js';
import { CriteriaQueries } from '../src/store/query/queries.js';
import { AT, benchArgs, openBenchDatabase, sizeTag, WS } from './support/dataset.js';
import { p50Of } from './support/tasks.js';

const DATABASE = 'bench';
const log = (line: string) => console.log(line);
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1);

const { sizes, values } = benchArgs({ iterations: { type: 'string', default: '10' } });
const iterations = Number(values.iterations);
const chdbPath = join('data', 'bench', `${sizeTag(sizes)}.chdb`);
if (!existsSync(chdbPath)) throw new Error(`${chdbPath} is missing: run npx tsx bench/clickhouse.bench.ts --prepare first`);
const { store } = await openBenchDatabase(sizes, log);
const client = await connectClickHouse({ path: chdbPath, database: DATABASE });

await store.query('UPDATE invoices SET paid_at = created_at WHERE workspace_id = $1 AND amount_paid > 0 AND paid_at IS NULL', [WS]);
for (const statement of clickhouseSchema({ database: DATABASE })) await client.command({ query: statement });
await client.command({
  query: `ALTER TABLE ${DATABASE}.invoices UPDATE paid_at = created_at WHERE amount_paid > 0 AND paid_at IS NULL`,
  clickhouse_settings: { mutations_sync: '1' },
});

log(`\nmachine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; chDB through @clickhouse/client`);
log(`dataset: ${sizes.people.toLocaleString('en-US')} people, ${sizes.events.toLocaleString('en-US')} events, ${sizes.pageviews.toLocaleString('en-US')} page views`);
const [invoices] = await store.query('SELECT count(*) AS n, count(DISTINCT customer_id) AS customers FROM invoices WHERE workspace_id = $1 AND paid_at IS NOT NULL', [WS]);
log(`paid invoices: ${Number(invoices!.n).toLocaleString('en-US')} of ${Number(invoices!.customers).toLocaleString('en-US')} customers\n`);

const from = new Date(Date.UTC(AT.getUTCFullYear() - 1, AT.getUTCMonth(), 1));
const plans: ReportPlan[] = ATTRIBUTION_MODELS.map((model) => ({
  from, to: AT, interval: 'month', model, lookbackDays: DEFAULT_LOOKBACK_DAYS, halfLifeDays: DEFAULT_HALF_LIFE_DAYS, group: { touch: 'channel_category' }, audience: null,
}));

const duckQueries = new CriteriaQueries(store.driver);

async function duckdb(plan: ReportPlan): Promise<RevenueRow[]> {
  const turn = duckQueries.estimateTurn(600_000);
  try {
    return (await turn.revenue(plan, WS))!;
  } finally {
    turn.end();
  }
}

async function clickhouse(plan: ReportPlan): Promise<RevenueRow[]> {
  const query = new ClickHousePrinter(DATABASE).revenue(plan, WS);
  const result = await client.query({ query: query.sql, query_params: query.params, format: 'JSONEachRow', clickhouse_settings: CLICKHOUSE_QUERY_SETTINGS });
  return (await result.json<Record<string, unknown>>()).map(revenueRow);
}

// Same answer first: a benchmark of a wrong query is worthless.
const sorted = (rows: RevenueRow[]) => rows.map((r) => JSON.stringify(r)).sort();
const sizesOf: number[] = [];
for (const plan of plans) {
  const [duck, house] = [await duckdb(plan), await clickhouse(plan)];
  if (JSON.stringify(sorted(duck)) !== JSON.stringify(sorted(house))) throw new Error(`${plan.model}: DuckDB and ClickHouse differ`);
  sizesOf.push(duck.filter((r) => r.level === 1).length);
}

const bench = new Bench({ iterations, time: 0, warmupIterations: Math.min(2, iterations - 1) });
for (const plan of plans) {
  bench.add(`duckdb: ${plan.model}`, async () => { await duckdb(plan); });
  bench.add(`clickhouse: ${plan.model}`, async () => { await clickhouse(plan); });
}
await bench.run();
const p50 = (name: string) => p50Of(bench, name);
log(`| report (channel_category per month, ${from.toISOString().slice(0, 10)} to ${AT.toISOString().slice(0, 10)}) | rows | DuckDB p50 ms | ClickHouse p50 ms |`);
log('|---|---:|---:|---:|');
for (const [i, plan] of plans.entries()) {
  log(`| ${plan.model} | ${sizesOf[i]} | ${ms(p50(`duckdb: ${plan.model}`))} | ${ms(p50(`clickhouse: ${plan.model}`))} |`);
}
await client.close();
await store.close();
