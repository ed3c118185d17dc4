// The representative criteria on both analytical stores, one run: DuckDB (the default) and
// ClickHouse (the embedded chDB, the same engine a cluster node runs), the same rows in each.
//   npx tsx bench/clickhouse.bench.ts [--people N --events N --pageviews N] [--prepare]
// --prepare builds both copies of the dataset and stops (the 100 M one takes long: bench/RESULTS.md).
// The DuckDB file is the estimate bench's (bench/support/dataset.ts); the ClickHouse copy is loaded
// once from it, keys and all, into data/bench/<sizes>.chdb.

import type { ClickHouseClient } from '@clickhouse/client';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, totalmem, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Bench } from 'tinybench';
import {
  CLICKHOUSE_QUERY_SETTINGS, ClickHousePrinter, planCriteria, printCount, type SetPlan, validateCriteria,
} from '../src/criteria/index.js';
import { connectClickHouse } from '../src/store/clickhouse/client.js';
import { reloadVisitorLinks } from '../src/store/clickhouse/links.js';
import { clickhouseSchema, EVENT_INSERT_SETTINGS } from '../src/store/clickhouse/schema.js';
import type { Store } from '../src/store/duckdb/db.js';
import { propertyCatalog } from '../src/store/duckdb/properties.js';
import { BENCH_CASES } from './criteria.js';
import { AT, benchArgs, openBenchDatabase, sizeTag, WS } from './support/dataset.js';
import { p50Of } from './support/tasks.js';

const DATABASE = 'bench';
const log = (line: string) => console.log(line);
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1);

const { sizes, values } = benchArgs({ prepare: { type: 'boolean', default: false } });
const { store } = await openBenchDatabase(sizes, log);
const chdbPath = join('data', 'bench', `${sizeTag(sizes)}.chdb`);
const fresh = !existsSync(chdbPath);
const client = await connectClickHouse({ path: chdbPath, database: DATABASE });
if (fresh) await loadClickHouse(store, client);
if (values.prepare) {
  await client.close();
  await store.close();
  process.exit(0);
}

log(`\nmachine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; chDB through @clickhouse/client`);
log(`dataset: ${sizes.people.toLocaleString('en-US')} people, ${sizes.events.toLocaleString('en-US')} events, ${sizes.pageviews.toLocaleString('en-US')} page views\n`);

const catalog = await propertyCatalog(store, WS);
const cases = BENCH_CASES.map((c) => {
  const validated = validateCriteria(c.criteria, catalog);
  if (!validated.ok) throw new Error(`${c.name}: ${JSON.stringify(validated.errors)}`);
  const plan = planCriteria(validated.criteria, AT);
  return { name: c.name, duckdb: printCount(plan, WS), clickhouse: new ClickHousePrinter(DATABASE).count(plan, WS) };
});

async function clickhouseCount(query: { sql: string; params: Record<string, unknown> }): Promise<number> {
  const result = await client.query({
    query: query.sql, query_params: query.params, format: 'JSONEachRow', clickhouse_settings: CLICKHOUSE_QUERY_SETTINGS,
  });
  return Number(((await result.json()) as { count: string }[])[0]!.count);
}

// Same answer first: a benchmark of a wrong query is worthless.
const counts: number[] = [];
for (const c of cases) {
  const duck = await store.countWithin(c.duckdb.sql, c.duckdb.params, 600_000);
  const house = await clickhouseCount(c.clickhouse);
  if (duck !== house) throw new Error(`${c.name}: DuckDB ${duck} ≠ ClickHouse ${house}`);
  counts.push(house);
}

const bench = new Bench({ iterations: 15, time: 0, warmupIterations: 2 });
for (const c of cases) {
  bench.add(`duckdb: ${c.name}`, async () => { await store.countWithin(c.duckdb.sql, c.duckdb.params, 600_000); });
  bench.add(`clickhouse: ${c.name}`, async () => { await clickhouseCount(c.clickhouse); });
}
await bench.run();
const p50 = (name: string) => p50Of(bench, name);

log('| criteria | count | DuckDB p50 ms | ClickHouse p50 ms | ClickHouse / DuckDB |');
log('|---|---:|---:|---:|---:|');
for (const [i, c] of cases.entries()) {
  const duck = p50(`duckdb: ${c.name}`);
  const house = p50(`clickhouse: ${c.name}`);
  log(`| ${c.name} | ${counts[i]!.toLocaleString('en-US')} | ${ms(duck)} | ${ms(house)} | ${(house / duck).toFixed(2)} |`);
}
await client.close();
await store.close();

/**
 * Copies the workspace's rows from the DuckDB file into ClickHouse through parquet files, keys
 * unchanged, link and state tables as version 1 of each row.
 */
async function loadClickHouse(duck: Store, ch: ClickHouseClient): Promise<void> {
  const t0 = performance.now();
  for (const statement of clickhouseSchema({ database: DATABASE })) await ch.command({ query: statement });
  const dir = await mkdtemp(join(tmpdir(), 'bench-ch-'));
  // Per table: its columns, and what DuckDB reads for each where it differs (key columns hold 0 for none).
  const none = (column: string) => `coalesce(${column}, 0)`;
  const copies: Record<string, Record<string, string | null>> = {
    events: { workspace_id: null, event_id: null, message_id: null, event_name: null, ts: null, person_key: none('person_key'),
      visitor_key: none('visitor_key'), properties: 'CAST(properties AS VARCHAR)', received_at: null },
    pageviews: Object.fromEntries(['workspace_id', 'pageview_id', 'visitor_key', 'ts', 'url', 'referrer', 'title', 'host', 'path',
      'referrer_host', 'source', 'medium', 'campaign', 'channel', 'channel_category'].map((c) => [c, null])),
    visitors: { workspace_id: null, visitor_key: null, visitor_id: null, person_key: none('person_key'), version: '1' },
    persons: { workspace_id: null, person_key: null, person_id: null, external_id: null, email: null, version: '1' },
    payment_customers: { workspace_id: null, customer_id: null, person_key: none('person_key'), visitor_key: none('visitor_key'), version: '1' },
    subscriptions: { workspace_id: null, subscription_id: null, customer_id: null, status: null, price_id: null, product_id: null,
      interval: '"interval"', amount: null, currency: null, cancel_at_period_end: null, created_at: null, version: '1' },
    invoices: { workspace_id: null, invoice_id: null, customer_id: null, subscription_id: null, status: null, amount_due: null,
      amount_paid: null, currency: null, created_at: null, paid_at: null, version: '1' },
    payment_events: { workspace_id: null, kind: null, customer_id: null, object_id: null, ts: null, version: '1', deleted: '0' },
  };
  try {
    for (const [table, columns] of Object.entries(copies)) {
      const file = resolve(dir, `${table}.parquet`);
      const select = Object.entries(columns).map(([name, expr]) => `${expr ?? `"${name}"`} AS "${name}"`).join(', ');
      await duck.copyTo(`SELECT ${select} FROM ${table} WHERE workspace_id = '${WS}'`, [], file, 'parquet');
      const names = Object.keys(columns);
      const [into, from] = table === 'events'
        ? [[...names, 'property_objects'], [...names.map((n) => (n === 'properties' ? 'CAST(properties AS JSON)' : n)), 'CAST([] AS Array(String))']]
        : [names, names];
      await ch.command({
        query: `INSERT INTO ${DATABASE}.${table} (${into.map((n) => `\`${n}\``).join(', ')}) SELECT ${from.join(', ')} FROM file('${file}', Parquet)`,
        clickhouse_settings: EVENT_INSERT_SETTINGS,
      });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // Every link is version 1, before the dictionary's cut: load them into it.
  await reloadVisitorLinks({ client: ch, database: DATABASE });
  log(`loaded into ${chdbPath} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
