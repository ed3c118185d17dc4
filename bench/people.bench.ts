// People lookup (GET /people's statement, store/control/lookup.ts) on a workspace of 1 M persons,
// on both control stores: the DuckDB file (default) and PostgreSQL (embedded, on a loopback port).
// The statement before issue 20 (a scan of every person and customer) and today's, in one run, on
// the same rows; their answers are checked equal first.
//   npx tsx bench/people.bench.ts [--persons 1000000] [--runs 25]
// The persons: external ids, emails on five domains, names; ~8 % pay (a customer each, Stripe-like
// ids): half with a person of their own, 2 in 5 owned only through their (linked) visitor, 1 in 10
// attributed to no person; a visitor per person.

import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgres } from '../test/support/postgres-server.js';
import { lookupPeople } from '../src/store/control/lookup.js';
import type { ControlSql } from '../src/store/control/store.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { Store } from '../src/store/duckdb/db.js';
import { personSearch } from '../src/store/duckdb/search.js';
import { PostgresControl } from '../src/store/postgres/control.js';
import { percentile } from './support/server.js';

const { values: args } = parseArgs({ options: {
  persons: { type: 'string', default: '1000000' },
  runs: { type: 'string', default: '25' },
} });
const PERSONS = Number(args.persons);
const RUNS = Number(args.runs);
const WS = 'ws_people_bench';
const PAGE = 51;
const log = (line = '') => console.log(line);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' / ');

// Rows as SQL over g = 1..PERSONS; `stripe(g)` is a 14-character id from g, as unique as g.
const DOMAIN = "(ARRAY['example.com', 'gmail.com', 'acme.io', 'mail.org', 'corp.net'])[1 + g % 5]";
const CUSTOMER = 'g % 12 = 0';
const UNOWNED = 'g % 120 = 0';

/** The statement of GET /people before issue 20, with the engine's `contains`. */
const before = (contains: (text: string) => string) => `WITH customers AS (
    SELECT c.customer_id, c.email, c.visitor_key, coalesce(c.person_key, v.person_key) AS owner,
      CASE WHEN c.link_state = 'deferred' AND v.person_key IS NOT NULL THEN 'linked' ELSE c.link_state END AS link_state
    FROM payment_customers c
      LEFT JOIN (SELECT visitor_key, person_key FROM visitors WHERE workspace_id = $1 AND person_key IS NOT NULL) v
        ON v.visitor_key = c.visitor_key
    WHERE c.workspace_id = $1),
  owned AS (
    SELECT owner, {listAgg} AS customer_ids,
      CASE WHEN bool_or(link_state = 'linked') THEN 'linked' WHEN bool_or(link_state = 'email_matched') THEN 'email_matched'
        ELSE min(link_state) END AS link_state
    FROM customers WHERE owner IS NOT NULL GROUP BY owner),
  matches AS (
    SELECT person_key FROM persons p
    WHERE p.workspace_id = $1 AND (${contains('p.email')} OR ${contains('p.external_id')} OR ${contains('p.name')})
    UNION
    SELECT owner FROM customers c WHERE c.owner IS NOT NULL AND ${contains('c.customer_id')}),
  people AS (
    SELECT 'p' || lpad(CAST(p.person_key AS VARCHAR), 20, '0') AS sort_key, p.person_key, p.person_id, p.external_id,
      p.email, p.name, CAST(NULL AS BIGINT) AS visitor_key, coalesce(o.customer_ids, {empty}) AS customer_ids, o.link_state
    FROM matches m JOIN persons p ON p.person_key = m.person_key AND p.workspace_id = $1
      LEFT JOIN owned o ON o.owner = p.person_key
    UNION ALL
    SELECT 'c' || c.customer_id, NULL, NULL, NULL, c.email, NULL, c.visitor_key, {one}, c.link_state
    FROM customers c
    WHERE c.owner IS NULL AND (${contains('c.email')} OR ${contains('c.customer_id')}))
  SELECT * FROM people WHERE sort_key > $3 ORDER BY sort_key LIMIT $4`;

interface Engine {
  name: string;
  control: ControlSql;
  before: string;
}

const QUERIES: [string, string][] = [
  ['exact email', `user777777@${['example.com', 'gmail.com', 'acme.io', 'mail.org', 'corp.net'][777_777 % 5]}`],
  ['exact customer id', ''], // filled from the rows: the last person's customer id
  ['substring, 4 letters of a domain (first page)', 'acme'],
  ['substring, rare', 'son 12345'],
  ['no match', 'zzzz-nothing'],
];

async function time(fn: () => Promise<unknown[]>): Promise<{ p50: number; p99: number; rows: number }> {
  const times: number[] = [];
  let rows = 0;
  await fn();
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    rows = (await fn()).length;
    times.push(performance.now() - t);
  }
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), rows };
}

const comparable = (rows: Record<string, unknown>[]) => JSON.stringify(rows.map((r) => [r.sort_key, r.email, r.customer_ids, r.link_state].map(String)));

async function measure(engine: Engine): Promise<void> {
  log(`\n| ${engine.name} | q | rows | before p50 ms | before p99 ms | after p50 ms | after p99 ms | load (1 min) |`);
  log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const [what, q] of QUERIES) {
    const old = () => engine.control.all(engine.before, [WS, q.toLowerCase(), '', PAGE]);
    const now = () => lookupPeople(engine.control, WS, q, '', PAGE);
    const [a, b] = [await old(), await now()];
    if (comparable(a) !== comparable(b as unknown as Record<string, unknown>[])) throw new Error(`${engine.name}, ${q}: the answers differ`);
    const x = await time(old);
    const y = await time(now);
    log(`| ${what} | \`${q}\` | ${y.rows} | ${x.p50.toFixed(1)} | ${x.p99.toFixed(1)} | ${y.p50.toFixed(1)} | ${y.p99.toFixed(1)} | ${loadavg()[0]!.toFixed(1)} |`);
  }
}

log(`People lookup, ${PERSONS.toLocaleString('en-US')} persons, ${RUNS} runs each, first page (${PAGE - 1} + 1 rows); load ${load()} at start`);
const dir = await mkdtemp(join(tmpdir(), 'people-bench-'));

// DuckDB: the rows in a few statements, then the search column as its migration fills it.
const store = await Store.open(join(dir, 'people.duckdb'));
const duck = new DuckDBControl(store);
let t0 = performance.now();
await duck.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at)
  SELECT $1, g, 'per_' || g, 'user_' || g, 'user' || g || '@' || ${DOMAIN}, 'Person ' || g, NULL, now(), now() FROM range(1, CAST($2 AS BIGINT) + 1) t(g)`, [WS, PERSONS]);
await duck.run(`INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at)
  SELECT $1, g, 'v_' || g, g, now(), now() FROM range(1, CAST($2 AS BIGINT) + 1) t(g)`, [WS, PERSONS]);
await duck.run(`INSERT INTO payment_customers (workspace_id, customer_id, email, person_key, visitor_key, link_state, updated_at)
  SELECT $1, 'cus_' || substr(md5(CAST(g AS VARCHAR)), 1, 14), CASE WHEN ${UNOWNED} THEN 'payer' || g || '@example.com' ELSE 'user' || g || '@' || ${DOMAIN} END,
    CASE WHEN ${UNOWNED} OR g % 24 = 0 THEN NULL ELSE g END, CASE WHEN ${UNOWNED} THEN NULL ELSE g END,
    CASE WHEN ${UNOWNED} THEN 'unmatched' WHEN g % 24 = 0 THEN 'deferred' ELSE 'linked' END, now()
  FROM range(1, CAST($2 AS BIGINT) + 1) t(g) WHERE ${CUSTOMER}`, [WS, PERSONS]);
log(`\nDuckDB: rows inserted in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
t0 = performance.now();
await duck.run(`UPDATE persons SET search = ${personSearch('email', 'external_id', 'name')}`);
log(`DuckDB: search column filled (its migration's statement) in ${((performance.now() - t0) / 1000).toFixed(1)} s; load ${load()}`);
const [sample] = await duck.all(`SELECT customer_id FROM payment_customers WHERE workspace_id = $1 AND person_key IS NOT NULL ORDER BY person_key DESC LIMIT 1`, [WS]);
QUERIES[1]![1] = sample!.customer_id as string;
await measure({
  name: 'DuckDB', control: duck,
  before: before((text) => `contains(lower(coalesce(${text}, '')), $2)`)
    .replace('{listAgg}', 'list(customer_id ORDER BY customer_id)').replace('{empty}', 'CAST([] AS VARCHAR[])').replace('{one}', '[c.customer_id]'),
});
await store.close();

// PostgreSQL: migrated (the trigram indexes exist), then the same rows.
const server = await startPostgres({ durable: false });
const admin = new pg.Client({ connectionString: `${server.url}/postgres` });
await admin.connect();
await admin.query('CREATE DATABASE people');
await admin.end();
const postgres = await PostgresControl.open({ url: `${server.url}/people` });
t0 = performance.now();
await postgres.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at)
  SELECT $1, g, 'per_' || g, 'user_' || g, 'user' || g || '@' || ${DOMAIN}, 'Person ' || g, NULL, now(), now() FROM generate_series(1, $2::int) g`, [WS, PERSONS]);
await postgres.run(`INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at)
  SELECT $1, g, 'v_' || g, g, now(), now() FROM generate_series(1, $2::int) g`, [WS, PERSONS]);
await postgres.run(`INSERT INTO payment_customers (workspace_id, customer_id, email, person_key, visitor_key, link_state, updated_at)
  SELECT $1, 'cus_' || substr(md5(CAST(g AS text)), 1, 14), CASE WHEN ${UNOWNED} THEN 'payer' || g || '@example.com' ELSE 'user' || g || '@' || ${DOMAIN} END,
    CASE WHEN ${UNOWNED} OR g % 24 = 0 THEN NULL ELSE g END, CASE WHEN ${UNOWNED} THEN NULL ELSE g END,
    CASE WHEN ${UNOWNED} THEN 'unmatched' WHEN g % 24 = 0 THEN 'deferred' ELSE 'linked' END, now()
  FROM generate_series(1, $2::int) g WHERE ${CUSTOMER}`, [WS, PERSONS]);
await postgres.run('VACUUM ANALYZE persons');
await postgres.run('VACUUM ANALYZE visitors');
await postgres.run('VACUUM ANALYZE payment_customers');
log(`\nPostgreSQL: rows inserted into the indexed tables, vacuumed and analyzed in ${((performance.now() - t0) / 1000).toFixed(1)} s; load ${load()}`);
await measure({
  name: 'PostgreSQL', control: postgres,
  before: before((text) => `strpos(lower(coalesce(${text}, '')), $2) > 0`)
    .replace('{listAgg}', 'array_agg(customer_id ORDER BY customer_id)').replace('{empty}', 'CAST(ARRAY[] AS text[])').replace('{one}', 'ARRAY[c.customer_id]'),
});
await postgres.close();
await server.stop();
await rm(dir, { recursive: true, force: true });
