// The storage design against a plain events table (issue 7): the same 3-leaf question (two event
// leaves with a count and a window, one JSON property filter, one set difference) written by hand
// over `events(person_id, event_name, ts, properties JSON)` in arrival (time) order, and compiled
// over the store's layout (integer keys, rows ordered by event name and time). Both must give the
// same count.
//   npx tsx bench/storage.bench.ts [--events 10000000]   (after `npm run bench` made the fixture and its database)

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { Bench } from 'tinybench';
import { DEFAULT_NOW } from '../fixtures/generate.js';
import { planCriteria, printCount, validateCriteria } from '../src/criteria/index.js';
import { Store } from '../src/store/duckdb/db.js';
import { propertyCatalog } from '../src/store/duckdb/properties.js';
import { utc } from '../src/store/duckdb/time.js';
import { BENCH_CASES } from './criteria.js';
import { p50Of } from './support/tasks.js';

const { values: args } = parseArgs({ options: {
  people: { type: 'string', default: '1000000' },
  events: { type: 'string', default: '10000000' },
  pageviews: { type: 'string', default: '2000000' },
} });
const tag = `${args.people}-${args.events}-${args.pageviews}`;
const fixtureDir = join('data', 'fixtures', tag);
const storePath = join('data', 'bench', `${tag}.duckdb`);
const plainPath = join('data', 'bench', `plain-${tag}.duckdb`);
if (!existsSync(storePath)) throw new Error(`${storePath} is missing: run npm run bench -- --events ${args.events} first`);
const WS = 'ws_bench';
const CASE = BENCH_CASES.find((c) => c.name.startsWith('power users'))!;

// Every event with the person it counts for: its own, its visitor's linked person, or the anonymous visitor.
const plainDb = await DuckDBInstance.create(plainPath);
const plain = await plainDb.connect();
const built = (await plain.runAndReadAll(`SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'events'`)).getRowObjectsJS()[0]!.n;
if (Number(built) === 0) {
  const t0 = performance.now();
  await plain.run(`CREATE TABLE events AS
    SELECT coalesce(e.person_id, v.person_id, 'visitor:' || e.visitor_id) AS person_id, e.event_name, e.ts, CAST(e.properties AS JSON) AS properties
    FROM read_parquet('${join(fixtureDir, 'events.parquet')}') e
      LEFT JOIN read_parquet('${join(fixtureDir, 'visitors.parquet')}') v ON v.visitor_id = e.visitor_id
    ORDER BY e.ts`);
  await plain.run('CHECKPOINT');
  console.log(`built ${plainPath} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

const at = utc(DEFAULT_NOW);
const handSql = `SELECT count(*) AS n FROM (
  (SELECT person_id FROM events WHERE event_name = 'feature_used'
     AND ts >= CAST($1 AS TIMESTAMP) - INTERVAL 30 DAY AND ts <= CAST($1 AS TIMESTAMP) GROUP BY person_id HAVING count(*) >= 10
   INTERSECT SELECT person_id FROM events WHERE event_name = 'plan_viewed' AND json_extract_string(properties, '$.plan') = 'enterprise')
  EXCEPT SELECT person_id FROM events WHERE event_name = 'export_report')`;

const store = await Store.open(storePath);
const validated = validateCriteria(CASE.criteria, await propertyCatalog(store, WS));
if (!validated.ok) throw new Error(JSON.stringify(validated.errors));
const query = printCount(planCriteria(validated.criteria, DEFAULT_NOW), WS);
const mine = await store.countWithin(query.sql, query.params, 600_000);
const theirs = Number((await plain.runAndReadAll(handSql, [at])).getRowObjectsJS()[0]!.n);
if (mine !== theirs) throw new Error(`compiled ${mine} ≠ plain table ${theirs}`);

const bench = new Bench({ iterations: 15, time: 0, warmupIterations: 2 });
bench.add('plain', async () => { await plain.run(handSql, [at]); });
bench.add('compiled', async () => { await store.countWithin(query.sql, query.params, 600_000); });
await bench.run();
const p50 = (name: string) => p50Of(bench, name);
console.log(`${CASE.name}: ${mine.toLocaleString('en-US')} profiles; ${Number(args.events).toLocaleString('en-US')} events`);
console.log(`hand-written over the plain table: p50 ${p50('plain').toFixed(1)} ms; compiled over the store: p50 ${p50('compiled').toFixed(1)} ms; `
  + `${(p50('plain') / p50('compiled')).toFixed(1)}× faster`);
plain.closeSync();
await store.close();
