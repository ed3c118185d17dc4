// The revenue report (issue 18 §2) on both analytical stores, the same rows in each: revenue by
// channel_category per month over the year before the dataset's "now", every attribution model,
// per lookback; and on DuckDB the lift report (issue 38) of an audience of everyone who viewed a page,
// per currency and in USD.
//   npx tsx bench/revenue.bench.ts [--people N --events N --pageviews N] [--iterations N]
//     [--engines duckdb,clickhouse] [--lookbacks 90,30] [--before <git revision>] [--api-people N]
// Needs the DuckDB file of the estimate benches and, for ClickHouse, the copy of
// bench/clickhouse.bench.ts (data/bench/<sizes>.*), which it changes: the export layout has no
// payment time, so its paid invoices get their creation time as paid_at (as an import now does),
// and DuckDB's gets a snapshot of the lift's audience. Once per data file, --api-people people
// (default 10,000) with page views, identifying events and payments (signed Stripe notifications)
// are written through the app into the same workspace, with a year of exchange rates; ClickHouse's
// control state is a copy of the DuckDB file taken before (data/bench/<sizes>.chdb-control.duckdb).
// `--before`: that revision's printers run beside this checkout's in the same tinybench run.

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Bench } from 'tinybench';
import {
  ATTRIBUTION_MODELS, CLICKHOUSE_QUERY_SETTINGS, type ClickHousePrinter, DEFAULT_HALF_LIFE_DAYS, type LiftPlan, placement, type Printer, type ReportPlan,
  type CompiledQuery,
} from '../src/criteria/index.js';
import type { RevenueRow } from '../src/store/analytics.js';
import type { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';
import { liftRow, revenueRow } from '../src/store/query/rows.js';
import { AT, benchArgs, openBenchDatabase, sizeTag, WS } from './support/dataset.js';
import { benchApp, writeRevenueSlice, writeYearOfRates } from './support/revenue-api.js';
import { p50Of } from './support/tasks.js';

const DATABASE = 'bench';
/** The lift's snapshot: a number no refresh of the bench's workspace hands out. */
const LIFT_SNAPSHOT = -38;
const log = (line: string) => console.log(line);
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');

const { sizes, values } = benchArgs({
  iterations: { type: 'string', default: '10' },
  engines: { type: 'string', default: 'duckdb,clickhouse' },
  lookbacks: { type: 'string', default: '90' },
  before: { type: 'string' },
  'api-people': { type: 'string', default: '10000' },
});
const apiPeople = Number(values['api-people']);
const iterations = Number(values.iterations);
const engines = String(values.engines).split(',');
const lookbacks = String(values.lookbacks).split(',').map(Number);
const withClickHouse = engines.includes('clickhouse');
const withDuckDB = engines.includes('duckdb');

interface Printers { name: string; duckdb: Printer<CompiledQuery>; clickhouse: ClickHousePrinter }
const here = dirname(fileURLToPath(import.meta.url));
const beforeDir = join(here, `.before-${process.pid}`);
const root = join(here, '..');
const revision = (rev: string) => execFileSync('git', ['-C', root, 'log', '-1', '--format=%h', rev], { encoding: 'utf8' }).trim();
const printersOf = async (dir: string, name: string): Promise<Printers> => {
  const sql = await import(join(dir, 'criteria', 'sql.js')) as typeof import('../src/criteria/sql.js');
  return { name, duckdb: sql.duckdbPrinter, clickhouse: new sql.ClickHousePrinter(DATABASE) };
};
const builds = [await printersOf(join(root, 'src'), values.before ? `after (${revision('HEAD')} + worktree)` : '')];
if (typeof values.before === 'string') {
  mkdirSync(beforeDir, { recursive: true });
  execFileSync('git', ['-C', root, 'archive', '--output', join(beforeDir, 'src.tar'), values.before, 'src']);
  execFileSync('tar', ['-x', '-C', beforeDir, '-f', join(beforeDir, 'src.tar')]);
  builds.unshift(await printersOf(join(beforeDir, 'src'), `before (${revision(values.before)})`));
}

const chdbPath = join('data', 'bench', `${sizeTag(sizes)}.chdb`);
if (withClickHouse && !existsSync(chdbPath)) throw new Error(`${chdbPath} is missing: run npx tsx bench/clickhouse.bench.ts --prepare first`);
const duckdbPath = join('data', 'bench', `${sizeTag(sizes)}.duckdb`);
await (await openBenchDatabase(sizes, log)).store.close();
// ClickHouse's control state (identity, payments) is the import's, as in the DuckDB file the chDB copy was loaded from: a copy of it
// taken before any slice is written there, so that each engine's slice is written the same way.
const controlPath = join('data', 'bench', `${sizeTag(sizes)}.chdb-control.duckdb`);
const controlCopied = withClickHouse && !existsSync(controlPath);
if (controlCopied) copyFileSync(duckdbPath, controlPath);
const duck = await openStores({ analyticsStore: 'duckdb', databasePath: duckdbPath });
const store = duck.duckdb!;
const house = withClickHouse ? await openStores({ analyticsStore: 'clickhouse', databasePath: controlPath, clickhouse: { path: chdbPath, database: DATABASE } }) : null;
const client = house ? (house.analytics as ClickHouseAnalytics).ctx.client : null;

// A slice of people, page views and payments written through the app, once per data file, into the imported workspace: the
// reports then read live-written customers beside the imported ones. Its rates serve the reports in one currency.
for (const stores of house ? [duck, house] : [duck]) {
  if (await new Workspaces(stores.control).get(WS)) {
    if (stores === house && controlCopied) throw new Error(`${duckdbPath} holds a slice already: delete ${controlPath} and ${chdbPath} and prepare them again`);
    continue;
  }
  const ws = await new Workspaces(stores.control).create('bench', { workspace_id: WS });
  const app = await benchApp(stores);
  await writeRevenueSlice(app, ws, { people: apiPeople, now: AT, prefix: 'api_', log });
  await writeYearOfRates(stores, WS, AT);
  await app.close();
}

await store.query('UPDATE invoices SET paid_at = created_at WHERE workspace_id = $1 AND amount_paid > 0 AND paid_at IS NULL', [WS]);
if (client) {
  await client.command({
    query: `ALTER TABLE ${DATABASE}.invoices UPDATE paid_at = created_at WHERE amount_paid > 0 AND paid_at IS NULL`,
    clickhouse_settings: { mutations_sync: '1' },
  });
}
// The lift's audience, as a refresh writes a snapshot: every profile with a page view.
await store.query('DELETE FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $2', [WS, LIFT_SNAPSHOT]);
await store.query(`INSERT INTO audience_members (workspace_id, snapshot_id, profile)
  SELECT DISTINCT $1, $2, coalesce(v.person_key, -v.visitor_key) FROM pageviews pv JOIN visitors v ON v.workspace_id = $1 AND v.visitor_key = pv.visitor_key
  WHERE pv.workspace_id = $1`, [WS, LIFT_SNAPSHOT]);

log(`\nmachine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; chDB through @clickhouse/client; load ${load()}`);
log(`dataset: ${sizes.people.toLocaleString('en-US')} people, ${sizes.events.toLocaleString('en-US')} events, ${sizes.pageviews.toLocaleString('en-US')} page views`);
const [invoices] = await store.query('SELECT count(*) AS n, count(DISTINCT customer_id) AS customers FROM invoices WHERE workspace_id = $1 AND paid_at IS NOT NULL', [WS]);
const [members] = await store.query('SELECT count(*) AS n FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $2', [WS, LIFT_SNAPSHOT]);
log(`paid invoices: ${Number(invoices!.n).toLocaleString('en-US')} of ${Number(invoices!.customers).toLocaleString('en-US')} customers; lift audience ${Number(members!.n).toLocaleString('en-US')} members, 10 % held out\n`);

const from = new Date(Date.UTC(AT.getUTCFullYear() - 1, AT.getUTCMonth(), 1));
const plans: ReportPlan[] = ATTRIBUTION_MODELS.flatMap((model) => (model === 'first_touch' ? [lookbacks[0]!] : lookbacks).map((lookbackDays) => ({
  from, to: AT, interval: 'month' as const, model, lookbackDays, halfLifeDays: DEFAULT_HALF_LIFE_DAYS, group: { touch: 'channel_category' as const }, audience: null,
})));
const label = (plan: ReportPlan) => (plan.model === 'first_touch' ? plan.model : `${plan.model}, ${plan.lookbackDays} d`);
const lifts: LiftPlan[] = ([[null, null], ['first_touch', null], ['linear', null], [null, 'usd'], ['linear', 'usd']] as const).map(([model, currency]) => ({
  snapshotId: LIFT_SNAPSHOT, placement: placement('bench', [{ name: 'holdout', percent: 10 }, { name: 'treatment', percent: 90 }]), from, to: AT,
  attribution: model && { model, lookbackDays: lookbacks[0]!, halfLifeDays: DEFAULT_HALF_LIFE_DAYS }, currency,
}));
const liftLabel = (plan: LiftPlan) => `lift, ${plan.attribution?.model ?? 'all revenue'}${plan.currency ? ` in ${plan.currency.toUpperCase()}` : ''}`;

const duckdb = async (query: CompiledQuery) => store.query(query.sql, query.params);
async function clickhouse(printer: ClickHousePrinter, plan: ReportPlan): Promise<RevenueRow[]> {
  const query = printer.revenue(plan, WS);
  const result = await client!.query({ query: query.sql, query_params: query.params, format: 'JSONEachRow', clickhouse_settings: CLICKHOUSE_QUERY_SETTINGS });
  return (await result.json<Record<string, unknown>>()).map(revenueRow);
}

// Same answer first, from every engine and build: a benchmark of a wrong query is worthless.
const sorted = (rows: unknown[]) => JSON.stringify(rows.map((r) => JSON.stringify(r)).sort());
const sizesOf: number[] = [];
for (const plan of plans) {
  const answers: string[] = [];
  for (const b of builds) {
    if (withDuckDB) answers.push(sorted((await duckdb(b.duckdb.revenue(plan, WS))).map(revenueRow)));
    if (client) answers.push(sorted(await clickhouse(b.clickhouse, plan)));
  }
  if (answers.some((a) => a !== answers[0])) throw new Error(`${label(plan)}: the engines or builds differ`);
  sizesOf.push((JSON.parse(answers[0]!) as string[]).filter((r) => (JSON.parse(r) as RevenueRow).level === 1).length);
}
if (withDuckDB) {
  // A missing rate converts to 0 in the statement (the route answers 400 first): none may be missing here.
  const [missing] = await duckdb(builds[0]!.duckdb.missingRate({ ...plans[0]!, currency: 'usd' }, WS));
  if (missing) throw new Error(`no USD rate for ${JSON.stringify(missing)}`);
  for (const plan of lifts) {
    // Sums of squares are floats summed in another order by each build: equal to 12 digits.
    const answers = await Promise.all(builds.map(async (b) => sorted((await duckdb(b.duckdb.lift(plan, WS)))
      .flatMap((r) => liftRow(r) ?? []).map((r) => ({ ...r, squares: Number(r.squares.toPrecision(12)) })))));
    if (answers.some((a) => a !== answers[0])) throw new Error(`${liftLabel(plan)}: the builds differ`);
  }
}

const bench = new Bench({ iterations, time: 0, warmupIterations: Math.min(2, iterations - 1) });
const task = (b: Printers, what: string) => `${b.name} ${what}`;
// The process's CPU time per run beside the wall time: on a shared machine it moves far less with the load
// (DuckDB and chDB run in this process; at one DuckDB thread it is about a quiet machine's wall time).
const cpu = new Map<string, number[]>();
const add = (name: string, run: () => Promise<unknown>) => {
  cpu.set(name, []);
  bench.add(name, async () => {
    const before = process.cpuUsage();
    await run();
    const used = process.cpuUsage(before);
    cpu.get(name)!.push((used.user + used.system) / 1000);
  });
};
for (const plan of plans) {
  for (const b of builds) {
    if (withDuckDB) add(task(b, `duckdb: ${label(plan)}`), () => duckdb(b.duckdb.revenue(plan, WS)));
    if (client) add(task(b, `clickhouse: ${label(plan)}`), () => clickhouse(b.clickhouse, plan));
  }
}
if (withDuckDB) for (const plan of lifts) for (const b of builds) add(task(b, `duckdb: ${liftLabel(plan)}`), () => duckdb(b.duckdb.lift(plan, WS)));
await bench.run();
log(`load after the run: ${load()}\n`);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** Wall p50 / median CPU of the measured runs (the warm-ups' are left out). */
const p50 = (name: string) => `${ms(p50Of(bench, name))} / ${ms(median(cpu.get(name)!.slice(-iterations)))}`;
const columns = builds.flatMap((b) => engines.map((e) => `${b.name} ${e === 'duckdb' ? 'DuckDB' : 'ClickHouse'} p50 wall / CPU ms`.trim()));
log(`| report (channel_category per month, ${from.toISOString().slice(0, 10)} to ${AT.toISOString().slice(0, 10)}) | rows | ${columns.join(' | ')} |`);
log(`|---|---:|${columns.map(() => '---:').join('|')}|`);
for (const [i, plan] of plans.entries()) {
  log(`| ${label(plan)} | ${sizesOf[i]} | ${builds.flatMap((b) => engines.map((e) => p50(task(b, `${e}: ${label(plan)}`)))).join(' | ')} |`);
}
if (withDuckDB) {
  for (const plan of lifts) log(`| ${liftLabel(plan)} (${lookbacks[0]} d) | | ${builds.flatMap((b) => engines.map((e) => (e === 'duckdb' ? p50(task(b, `duckdb: ${liftLabel(plan)}`)) : ''))).join(' | ')} |`);
}
await house?.close();
await duck.close();
rmSync(beforeDir, { recursive: true, force: true });
