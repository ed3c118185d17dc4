// The estimate dataset's shape (fixtures/generate.ts) built inside ClickHouse by INSERT … SELECT
// from numbers(): the same persons, devices, anonymous share, power-law activity, year of
// timestamps denser near its end, event names and payload schema, page view channels. Not the
// same rows (ClickHouse's hashes, not DuckDB's), and keys are index + 1, no import on the way:
// minutes instead of the hour of generate → DuckDB import → chDB load. Persons, visitors, events
// and page views only (payments stay empty). Run alone, it builds a chDB directory (chDB is one
// directory per process: the bench copies it):
//   npx tsx bench/support/clickhouse-dataset.ts --people N --events N --pageviews N --out DIR

import type { ClickHouseClient } from '@clickhouse/client';
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ACTIVITY_DECAY, ANONYMOUS_EVENT_SHARE, ANONYMOUS_PAGEVIEW_SHARE, ANONYMOUS_VISITORS_PER_PERSON, APP_ENTRY_PATHS, APP_HOST,
  APP_PATHS, ARRIVAL_GROWTH, DAY_US, DEFAULT_NOW, DEVICE_SLOTS, DEVICES_PER_PERSON, EVENT_SCHEMA, EVENT_WITH_VISITOR_SHARE,
  type LandingVariant, landingVariants, propsSql, SECOND_US, saltCounter, SITE_HOST, SITE_PATHS, sqlList, weightedIndexSql, YEAR_US,
} from '../../fixtures/generate.js';
import { connectClickHouse } from '../../src/store/clickhouse/client.js';
import { clickhouseSchema, EVENT_INSERT_SETTINGS } from '../../src/store/clickhouse/schema.js';
import { type BenchSizes, benchArgs, WS } from './dataset.js';

/** Rows per INSERT: one statement's memory stays small, and the log shows progress. */
const CHUNK = 10_000_000;

/**
 * Fills `database`'s persons, visitors, events and page views of workspace `ws` (schema created
 * already); `log` gets a line per table.
 */
export async function generateInClickHouse(client: ClickHouseClient, database: string, ws: string, sizes: BenchSizes, log: (line: string) => void): Promise<void> {
  const nowUs = DEFAULT_NOW.getTime() * 1000;
  const anon0 = DEVICE_SLOTS * sizes.people;
  const anonymous = Math.max(1, Math.round(sizes.people * ANONYMOUS_VISITORS_PER_PERSON));
  // The three draws propsSql's text calls (u, pick, ri), as lambdas: the key offset by the salt times
  // the golden ratio, mixed by intHash64 (a tenth of sipHash64's time here).
  const mix = 'intHash64(toUInt64(k) + toUInt64(salt) * 11400714819323198485)';
  for (const fn of [
    `u AS (k, salt) -> bitShiftRight(${mix}, 11) / 9007199254740992`,
    `ri AS (k, salt, n) -> toInt64(${mix} % greatest(toUInt64(n), 1))`,
    'pick AS (l, k, salt) -> l[1 + ri(k, salt, length(l))]',
  ]) await client.command({ query: `CREATE FUNCTION IF NOT EXISTS ${fn}` });
  // The generator's macros, as text (they depend on the sizes).
  const arrival = (k: string, salt: number) => `(${nowUs} - toInt64(floor(${YEAR_US} * pow(u(${k}, ${salt}), ${ARRIVAL_GROWTH}) / ${SECOND_US}) * ${SECOND_US}))`;
  const active = (since: string, k: string, salt: number) => `(${nowUs} - toInt64(floor((${nowUs} - ${since}) * pow(u(${k}, ${salt}), ${ACTIVITY_DECAY}) / 1000) * 1000))`;
  const created = (p: string) => arrival(p, 101);
  const devices = (p: string) => `pick(${sqlList(DEVICES_PER_PERSON)}, ${p}, 103)`;
  const firstSeen = (v: string) => `multiIf(${v} >= ${anon0}, ${arrival(v, 201)},
    ${v} % ${DEVICE_SLOTS} = 0, greatest(${nowUs - YEAR_US}, ${created(`intDiv(${v}, ${DEVICE_SLOTS})`)} - toInt64(floor(${7 * DAY_US} * u(${v}, 202) / 1000) * 1000)),
    ${active(created(`intDiv(${v}, ${DEVICE_SLOTS})`), v, 203)})`;
  const ts = (us: string) => `fromUnixTimestamp64Micro(${us}, 'UTC')`;
  const db = database;
  const run = async (table: string, rows: number, insert: (from: number, n: number) => string) => {
    const t0 = performance.now();
    for (let from = 0; from < rows; from += CHUNK) {
      await client.command({ query: insert(from, Math.min(CHUNK, rows - from)), clickhouse_settings: EVENT_INSERT_SETTINGS });
    }
    log(`generated ${rows.toLocaleString('en-US')} ${table} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  };

  await run('persons', sizes.people, (from, n) => `INSERT INTO ${db}.persons (workspace_id, person_key, person_id, external_id, email, version, traits)
    SELECT '${ws}', i + 1, concat('p_', toString(i)), if(u(i, 104) < 0.7, concat('u_', toString(i)), NULL),
      if(u(i, 102) < 0.85, concat('user', toString(i), '@example.com'), NULL), 1,
      concat('{"plan":"', pick(['free', 'free', 'pro', 'team', 'enterprise'], i, 109), '","company_size":', toString(toInt64(1 + floor(5000 * pow(u(i, 110), 4)))), '}')
    FROM (SELECT number AS i FROM numbers_mt(${from}, ${n}))`);
  await run('visitors', anon0 + anonymous, (from, n) => `INSERT INTO ${db}.visitors (workspace_id, visitor_key, visitor_id, person_key, version)
    SELECT '${ws}', i + 1, concat('v_', toString(i)), if(i < ${anon0}, intDiv(i, ${DEVICE_SLOTS}) + 1, 0), 1
    FROM (SELECT number AS i FROM numbers_mt(${from}, ${n}))
    WHERE i >= ${anon0} OR i % ${DEVICE_SLOTS} < ${devices(`intDiv(i, ${DEVICE_SLOTS})`)}`);

  const specs = Object.values(EVENT_SCHEMA);
  const identified = specs.map((s, k) => ({ k: k + 1, weight: s.weight }));
  const anonymousNames = identified.filter(({ k }) => specs[k - 1]?.anonymous);
  // multiIf, not CASE k: ClickHouse evaluates a CASE's every branch on every row (10× slower here).
  const properties = specs.map((s, k) => `k = ${k + 1}, ${propsSql(s.props, saltCounter(1000 + 100 * k))}`);
  // The top-level keys whose value is an object (the schema nests no deeper): property_objects.
  const objects = [...new Set(specs.flatMap((s) => Object.entries(s.props).filter(([, p]) => p.type === 'object').map(([key]) => key)))];
  await run('events', sizes.events, (from, n) => `INSERT INTO ${db}.events
      (workspace_id, event_id, message_id, event_name, ts, person_key, visitor_key, properties, property_objects, received_at)
    SELECT '${ws}', concat('e_', toString(i)), NULL, ${sqlList(Object.keys(EVENT_SCHEMA))}[k], ${ts('ts_us')},
      if(anon, 0, p + 1), visitor, props, arrayFilter(x -> JSONHas(props, x), ${sqlList(objects)}), ${ts('ts_us')}
    FROM (
      SELECT i, anon, p, ts_us, k,
        -- a device first seen after the event falls back to the first device (seen before sign-up)
        multiIf(anon, av + 1, ${devices('p')} = 0 OR u(i, 306) >= ${EVENT_WITH_VISITOR_SHARE}, 0,
          ${firstSeen('device')} <= ts_us, device + 1, ${DEVICE_SLOTS} * p + 1) AS visitor,
        multiIf(${properties.join(',\n')}, '{}') AS props
      FROM (
        SELECT *, ${active(`if(anon, ${firstSeen('av')}, ${created('p')})`, 'i', 304)} AS ts_us,
          ${DEVICE_SLOTS} * p + ri(i, 305, ${devices('p')}) AS device,
          if(anon, ${weightedIndexSql('name_u', anonymousNames)}, ${weightedIndexSql('name_u', identified)}) AS k
        FROM (
          SELECT number AS i, u(i, 301) < ${ANONYMOUS_EVENT_SHARE} AS anon,
            toInt64(floor(${sizes.people} * pow(u(i, 302), 3))) AS p,
            ${anon0} + ri(i, 303, ${anonymous}) AS av, u(i, 307) AS name_u
          FROM numbers_mt(${from}, ${n})
        )
      )
    )`);

  const variants = landingVariants();
  const direct = variants.findIndex((x) => x.category === 'Direct') + 1;
  const col = (key: Exclude<keyof LandingVariant, 'weight'>) => sqlList(variants.map((x) => x[key]));
  const channel = weightedIndexSql('channel_u', variants.map((x, k) => ({ k: k + 1, weight: x.weight })));
  await run('page views', sizes.pageviews, (from, n) => `INSERT INTO ${db}.pageviews (workspace_id, pageview_id, visitor_key, ts, url, referrer, title,
      host, path, referrer_host, source, medium, campaign, channel, channel_category)
    SELECT '${ws}', concat('pv_', toString(i)), v + 1, ${ts('ts_us')}, concat('https://', host, path, ${col('query')}[k]), ${col('referrer')}[k], NULL,
      host, path, ${col('referrerHost')}[k], ${col('source')}[k], ${col('medium')}[k], ${col('campaign')}[k], ${col('channel')}[k], ${col('category')}[k]
    FROM (
      SELECT i, v, ts_us, if(in_app, '${APP_HOST}', '${SITE_HOST}') AS host,
        multiIf(NOT in_app, pick(${sqlList(SITE_PATHS)}, i, 407), anon, pick(${sqlList(APP_ENTRY_PATHS)}, i, 407), pick(${sqlList(APP_PATHS)}, i, 407)) AS path,
        -- app traffic is mostly direct navigation
        if(in_app AND u(i, 409) < 0.6, ${direct}, ${channel}) AS k
      FROM (
        SELECT i, v, v >= ${anon0} AS anon, ${active(firstSeen('v'), 'i', 405)} AS ts_us,
          u(i, 406) < if(v >= ${anon0}, 0.1, 0.55) AS in_app, u(i, 408) AS channel_u
        FROM (
          SELECT number AS i, toInt64(floor(${sizes.people} * pow(u(i, 401), 2))) AS p,
            if(u(i, 403) < ${ANONYMOUS_PAGEVIEW_SHARE} OR ${devices('p')} = 0,
              ${anon0} + toInt64(floor(${anonymous} * pow(u(i, 402), 2))), ${DEVICE_SLOTS} * p + ri(i, 404, ${devices('p')})) AS v
          FROM numbers_mt(${from}, ${n})
        )
      )
    )`);
}

/**
 * Makes `events` `copies` times as big: its parts attached again copies − 1 times (hard links, no
 * rewrite) through a table beside it. Each person gets `copies` times its events, as in a dataset of
 * that many events over the same persons; every row has `copies` identical twins.
 */
export async function multiplyEvents(client: ClickHouseClient, database: string, copies: number): Promise<void> {
  const partitions = await (await client.query({ query: `SELECT DISTINCT partition_id AS id FROM system.parts
    WHERE database = {db:String} AND table = 'events' AND active`, query_params: { db: database }, format: 'JSONEachRow' })).json<{ id: string }>();
  await client.command({ query: `CREATE TABLE ${database}.events_copy AS ${database}.events` });
  for (const { id } of partitions) await client.command({ query: `ALTER TABLE ${database}.events_copy ATTACH PARTITION ID '${id}' FROM ${database}.events` });
  for (let copy = 1; copy < copies; copy++) {
    for (const { id } of partitions) await client.command({ query: `ALTER TABLE ${database}.events ATTACH PARTITION ID '${id}' FROM ${database}.events_copy` });
  }
  await client.command({ query: `DROP TABLE ${database}.events_copy SYNC` });
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(realpathSync(resolve(entry))).href) {
  const { sizes, values } = benchArgs({ out: { type: 'string' } });
  if (typeof values.out !== 'string') throw new Error('--out DIR is required');
  const client = await connectClickHouse({ path: values.out, database: 'bench', engineArgs: [] });
  for (const statement of clickhouseSchema({ database: 'bench' })) await client.command({ query: statement });
  await generateInClickHouse(client, 'bench', WS, sizes, (line) => console.log(line));
  await client.close();
}
