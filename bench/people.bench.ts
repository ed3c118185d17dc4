// People lookup (GET /people's statements, store/control/lookup.ts) on a workspace of 1 M persons,
// on both control stores: the DuckDB file (default) and PostgreSQL (embedded, on a loopback port).
// The lookup as of `--before` (a git revision: its src/ tree, with its dialects, people searches and
// DuckDB reads: Store.query) and today's, in one
// run, on the same rows, alternated run by run; their answers are checked equal first. On DuckDB
// also GET /people whole (the lookup and the page's first touches, from the analytical store), and
// the cost that keeping the trigram indexes adds to the writes of persons (savePersons) and of
// customers (writeCustomers), with and without them.
//   npx tsx bench/people.bench.ts [--persons 1000000] [--runs 25] [--before none|<rev>] [--write api|sql] [--engines duckdb,postgres] [--data <dir>]
// `--data <dir>` keeps the rows there (a DuckDB file, a PostgreSQL directory) and reuses them when
// they are there already: a million persons through the API are written once, not at every run.
// `--write api` (the default) writes the rows as the service does (bench/support/people-api.ts:
// events through the ingest feature, customers through the payment writes); `--write sql` inserts
// them in a few statements and fills the indexes as the migrations do (the earlier figures).
// The persons: external ids, emails on five domains, names; ~8 % pay (a customer each, Stripe-like
// ids): 4 in 10 with a person of their own, 4 in 10 owned only through their linked visitor (link
// state linked: the service links a deferred customer in the unit of work that links its visitor),
// 1 in 10 deferred on an anonymous visitor of its own, 1 in 10 attributed to no one; a visitor per
// person.

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgres } from '../test/support/postgres-server.js';
import { type LookupRow, lookupPeople } from '../src/store/control/lookup.js';
import { type PersonRecord, savePersons } from '../src/store/control/people.js';
import { type CustomerRecord, writeCustomers } from '../src/store/control/payments.js';
import { NO_COPIES } from '../src/store/mirror.js';
import type { ControlDialect, ControlSql, ControlTx } from '../src/store/control/store.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { Store } from '../src/store/duckdb/db.js';
import { type DuckDBSearch, personSearch } from '../src/store/duckdb/search.js';
import type { PeopleSearch } from '../src/store/control/search.js';
import { PostgresControl } from '../src/store/postgres/control.js';
import { customerIdOf, emailOf, ingestPersons, resolvePersons, writePayers } from './support/people-api.js';
import { percentile } from './support/server.js';
import { openStores, type Stores } from '../src/store/open.js';
import { findPeople } from '../src/attribution/people.js';

const { values: args } = parseArgs({ options: {
  persons: { type: 'string', default: '1000000' },
  runs: { type: 'string', default: '25' },
  before: { type: 'string', default: 'none' },
  write: { type: 'string', default: 'api' },
  engines: { type: 'string', default: 'duckdb,postgres' },
  data: { type: 'string' },
} });
const API = args.write === 'api';
const ENGINES = new Set(args.engines.split(','));
const PERSONS = Number(args.persons);
const RUNS = Number(args.runs);
const WS = 'ws_people_bench';
const WS_WRITES = 'ws_people_writes';
const PAGE = 51;
const log = (line = '') => console.log(line);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' / ');

// Rows as SQL over g = 1..PERSONS; `stripe(g)` is a 14-character id from g, as unique as g.
const DOMAIN = "(ARRAY['example.com', 'gmail.com', 'acme.io', 'mail.org', 'corp.net'])[1 + g % 5]";
const CUSTOMER = 'g % 12 = 0';
const UNOWNED = 'g % 120 = 0';
const DEFERRED = 'g % 120 = 60';

interface Engine {
  name: string;
  control: ControlSql;
  /** The same store as the --before revision's dialect spells it (none: only today's lookup is timed). */
  before: ControlSql | null;
  /** The stores GET /people reads (its lookup and first touches): the request is timed whole too. */
  stores?: Stores;
  /** The same stores as the --before revision reads them. */
  storesBefore?: Stores;
}

const QUERIES: [string, string][] = [
  ['exact email', emailOf(777_777)],
  ['exact external id', 'user_777777'],
  ['exact customer id', ''], // filled from the rows: the last person's customer id
  ['substring, 4 letters of a domain (first page)', 'acme'],
  // Events carry no name: through the API the rare term is part of an email.
  ['substring, rare', API ? '12345@' : 'son 12345'],
  ['no match', 'zzzz-nothing'],
];
const CUSTOMER_QUERY = 2;

type Timing = { p50: number; p99: number; rows: number };

/** Each function's p50 / p99 over RUNS runs after a warm-up, the functions alternated run by run. */
async function time(fns: (() => Promise<unknown[]>)[]): Promise<Timing[]> {
  const times = fns.map((): number[] => []);
  const rows = fns.map(() => 0);
  for (const fn of fns) await fn();
  for (let i = 0; i < RUNS; i++) {
    for (const [k, fn] of fns.entries()) {
      const t = performance.now();
      rows[k] = (await fn()).length;
      times[k]!.push(performance.now() - t);
    }
  }
  return times.map((ms, k) => ({ p50: percentile(ms, 0.5), p99: percentile(ms, 0.99), rows: rows[k]! }));
}

const comparable = (rows: LookupRow[]) => JSON.stringify(rows);

/**
 * savePersons's cost per person, for `batches` batches of `size` new persons, then of as many given
 * a new name, then of as many given traits only (their search text unchanged: the common write).
 */
async function writeCost(control: DuckDBControl, withIndex: boolean, firstKey: number, size: number, batches: number): Promise<Record<'create' | 'rename' | 'traits', number>> {
  const at = new Date();
  const txOf = (tx: ControlTx): ControlTx => (withIndex ? tx : Object.create(tx, { search: { value: Object.create(tx.search, { indexPersons: { value: () => undefined } }) as DuckDBSearch } }) as ControlTx);
  let create = 0;
  let rename = 0;
  let traits = 0;
  for (let b = 0; b < batches; b++) {
    const people: PersonRecord[] = Array.from({ length: size }, (_, i) => {
      const key = firstKey + b * size + i;
      return { person_key: key, person_id: `per_w${key}`, external_id: `writer_${key}`, email: `writer${key}@example.com` };
    });
    const named = (name: string) => new Map(people.map((p) => [p.person_key, { name: `${name} ${p.person_key}`, traits: { plan: 'pro' } }]));
    let t = performance.now();
    await control.transaction((tx) => savePersons({ control: txOf(tx), mirror: NO_COPIES }, WS_WRITES, people, [], named('Writer'), at));
    create += performance.now() - t;
    t = performance.now();
    await control.transaction((tx) => savePersons({ control: txOf(tx), mirror: NO_COPIES }, WS_WRITES, [], people, named('Renamed'), at));
    rename += performance.now() - t;
    t = performance.now();
    await control.transaction((tx) => savePersons({ control: txOf(tx), mirror: NO_COPIES }, WS_WRITES, [], people, new Map(people.map((p) => [p.person_key, { traits: { seen: b } }])), at));
    traits += performance.now() - t;
  }
  const perPerson = (ms: number) => (ms * 1000) / (size * batches);
  return { create: perPerson(create), rename: perPerson(rename), traits: perPerson(traits) };
}

/**
 * writeCustomers's cost per customer, for `batches` batches of `size` new customers, then of as many
 * given another email, then of as many changed otherwise (their link state: the common write).
 */
async function customerWriteCost(control: DuckDBControl, withIndex: boolean, round: number, size: number, batches: number): Promise<Record<'create' | 'email' | 'other', number>> {
  const at = new Date();
  const txOf = (tx: ControlTx): ControlTx => (withIndex ? tx : Object.create(tx, { search: { value: Object.create(tx.search, { indexCustomers: { value: () => undefined } }) as DuckDBSearch } }) as ControlTx);
  const cost = { create: 0, email: 0, other: 0 };
  const timed = async (what: keyof typeof cost, fn: (tx: ControlTx) => Promise<void>) => {
    const t = performance.now();
    await control.transaction((tx) => fn(txOf(tx)));
    cost[what] += performance.now() - t;
  };
  for (let b = 0; b < batches; b++) {
    const customers = (email: string, state: CustomerRecord['link_state']) => Array.from({ length: size }, (_, i): CustomerRecord => {
      const id = `cus_w${round}_${withIndex ? 'k' : 'n'}_${b * size + i}`;
      return {
        customer_id: id, email: `${email}.${id}@example.com`, customer_email: null, customer_email_created: null, payment_email: null, payment_email_created: null,
        person_key: null, visitor_key: null, tr_user_id: null, tr_visitor_id: null, tr_user_id_created: null, tr_visitor_id_created: null, link_state: state,
      };
    });
    const [created, moved, linked] = [customers('payer', 'unmatched'), customers('moved', 'unmatched'), customers('moved', 'deferred')];
    await timed('create', (tx) => writeCustomers({ control: tx, mirror: NO_COPIES }, WS_WRITES, created, [], [], at));
    await timed('email', (tx) => writeCustomers({ control: tx, mirror: NO_COPIES }, WS_WRITES, [], moved, moved, at));
    await timed('other', (tx) => writeCustomers({ control: tx, mirror: NO_COPIES }, WS_WRITES, [], linked, [], at));
  }
  const perCustomer = (ms: number) => (ms * 1000) / (size * batches);
  return { create: perCustomer(cost.create), email: perCustomer(cost.email), other: perCustomer(cost.other) };
}

async function measure(engine: Engine): Promise<void> {
  const before = engine.before;
  log(`\n| ${engine.name} | q | rows | ${before ? 'before p50 ms | before p99 ms | after p50 ms | after p99 ms' : 'p50 ms | p99 ms'} | load (1 min) |`);
  log(`|---|---|---:|${before ? '---:|---:|' : ''}---:|---:|---:|`);
  for (const [what, q] of QUERIES) {
    const now = () => lookupPeople(engine.control, WS, q, '', PAGE);
    const old = before && (() => lookupBefore!(before, WS, q, '', PAGE));
    if (old && comparable(await old()) !== comparable(await now())) throw new Error(`${engine.name}, ${q}: the answers differ`);
    const timings = await time(old ? [old, now] : [now]);
    const y = timings[timings.length - 1]!;
    log(`| ${what} | \`${q}\` | ${y.rows} | ${timings.map((x) => `${x.p50.toFixed(1)} | ${x.p99.toFixed(1)}`).join(' | ')} | ${loadavg()[0]!.toFixed(1)} |`);
  }
  const stores = engine.stores;
  if (!stores) return;
  // GET /people whole (its lookup, then the page's first touches), as the route calls it.
  log(`\n| ${engine.name}, GET /people (lookup and first touches) | q | rows | ${before ? 'before p50 ms | before p99 ms | after p50 ms | after p99 ms' : 'p50 ms | p99 ms'} | load (1 min) |`);
  log(`|---|---|---:|${before ? '---:|---:|' : ''}---:|---:|---:|`);
  for (const [what, q] of QUERIES) {
    const now = async () => (await findPeople(stores, WS, q, PAGE - 1)).data;
    const old = before && findPeopleBefore && (async () => (await findPeopleBefore!(engine.storesBefore!, WS, q, PAGE - 1)).data);
    if (old && JSON.stringify(await old()) !== JSON.stringify(await now())) throw new Error(`${engine.name}, GET /people?q=${q}: the answers differ`);
    const timings = await time(old ? [old, now] : [now]);
    const y = timings[timings.length - 1]!;
    log(`| ${what} | \`${q}\` | ${y.rows} | ${timings.map((x) => `${x.p50.toFixed(1)} | ${x.p99.toFixed(1)}`).join(' | ')} | ${loadavg()[0]!.toFixed(1)} |`);
  }
}

log(`People lookup, ${PERSONS.toLocaleString('en-US')} persons, ${RUNS} runs each, first page (${PAGE - 1} + 1 rows); load ${load()} at start`);
const dir = args.data ?? await mkdtemp(join(tmpdir(), 'people-bench-'));
await mkdir(dir, { recursive: true });
// The lookup as of --before, and its dialects: that revision's src/ beside this one (below the
// checkout, so that its packages resolve), run on today's stores with its dialect and search.
const beforeDir = join(dirname(fileURLToPath(import.meta.url)), `.before-${process.pid}`);
let lookupBefore: typeof lookupPeople | undefined;
let findPeopleBefore: typeof findPeople | undefined;
let beforeDialects: Record<'duckdb' | 'postgres', ControlDialect> | undefined;
// Its people searches too (their candidates and indexes): a DuckDB one is filled from the rows.
let beforeSearches: { duckdb: new (store: Store) => DuckDBSearch; postgres: new () => PeopleSearch } | undefined;
// And its DuckDB reads (Store.query: how a read's connection and statement are made), on today's store.
let queryBefore: Store['query'] | undefined;
if (args.before !== 'none') {
  await mkdir(beforeDir, { recursive: true });
  execFileSync('git', ['archive', '--output', join(beforeDir, 'src.tar'), args.before, 'src']);
  execFileSync('tar', ['-x', '-C', beforeDir, '-f', join(beforeDir, 'src.tar')]);
  lookupBefore = (await import(join(beforeDir, 'src/store/control/lookup.ts')) as { lookupPeople: typeof lookupPeople }).lookupPeople;
  findPeopleBefore = (await import(join(beforeDir, 'src/attribution/people.ts')) as { findPeople: typeof findPeople }).findPeople;
  beforeDialects = {
    duckdb: (await import(join(beforeDir, 'src/store/duckdb/control.ts')) as { duckdbDialect: ControlDialect }).duckdbDialect,
    postgres: (await import(join(beforeDir, 'src/store/postgres/dialect.ts')) as { postgresDialect: ControlDialect }).postgresDialect,
  };
  beforeSearches = {
    duckdb: (await import(join(beforeDir, 'src/store/duckdb/search.ts')) as { DuckDBSearch: new (store: Store) => DuckDBSearch }).DuckDBSearch,
    postgres: (await import(join(beforeDir, 'src/store/postgres/search.ts')) as { PostgresSearch: new () => PeopleSearch }).PostgresSearch,
  };
  queryBefore = (await import(join(beforeDir, 'src/store/duckdb/db.ts')) as { Store: { prototype: Store } }).Store.prototype.query;
  log(`before: the lookup of ${execFileSync('git', ['log', '-1', '--format=%h %cs', args.before], { encoding: 'utf8' }).trim()}`);
}
const spelledAs = (control: ControlSql, engine: 'duckdb' | 'postgres', search: PeopleSearch | undefined, store?: Store): ControlSql | null =>
  (beforeDialects ? Object.create(control, { dialect: { value: beforeDialects[engine] }, search: { value: search }, ...store && { store: { value: store } } }) as ControlSql : null);

/** Today's DuckDB store reading as the --before revision's Store.query reads. */
const readingBefore = (store: Store): Store | undefined => (queryBefore ? Object.create(store, { query: { value: queryBefore } }) as Store : undefined);

/** GET /people's stores as the --before revision reads them: its control store and the first touches' reads. */
function storesBefore(stores: Stores, control: ControlSql | null, store: Store | undefined): Stores | undefined {
  if (!control || !store) return undefined;
  const { queries } = stores.analytics as unknown as { queries: { driver: { store: Store } } };
  const driver = Object.create(queries.driver, { store: { value: store } }) as object;
  const analytics = Object.create(stores.analytics, { queries: { value: Object.create(queries, { driver: { value: driver } }) } }) as Stores['analytics'];
  return { ...stores, control: control as Stores['control'], analytics };
}

/** The --before revision's DuckDB search on this store, its indexes filled from the rows. */
async function duckdbSearchBefore(store: Store): Promise<DuckDBSearch | undefined> {
  if (!beforeSearches) return undefined;
  const search = new beforeSearches.duckdb(store);
  if (!await search.ready(WS)) throw new Error('the --before search\'s indexes were not filled');
  return search;
}

const seconds = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);
const [sampleCustomer] = [customerIdOf(Math.floor(PERSONS / 24) * 24 - 12)];

/** DuckDB: the rows in a few statements, then the search column as its migration fills it. */
async function bulkDuckDB(store: Store, duck: DuckDBControl): Promise<void> {
  let t0 = performance.now();
  await duck.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at)
    SELECT $1, g, 'per_' || g, 'user_' || g, 'user' || g || '@' || ${DOMAIN}, 'Person ' || g, NULL, now(), now() FROM range(1, CAST($2 AS BIGINT) + 1) t(g)`, [WS, PERSONS]);
  await duck.run(`INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at)
    SELECT $1, g, 'v_' || g, g, now(), now() FROM range(1, CAST($2 AS BIGINT) + 1) t(g)
    UNION ALL SELECT $1, CAST($2 AS BIGINT) + g, 'v_' || (CAST($2 AS BIGINT) + g), NULL, now(), NULL FROM range(1, CAST($2 AS BIGINT) + 1) t(g) WHERE ${DEFERRED}`, [WS, PERSONS]);
  await duck.run(`INSERT INTO payment_customers (workspace_id, customer_id, email, person_key, visitor_key, link_state, updated_at)
    SELECT $1, 'cus_' || substr(md5(CAST(g AS VARCHAR)), 1, 14), CASE WHEN ${UNOWNED} THEN 'payer' || g || '@example.com' ELSE 'user' || g || '@' || ${DOMAIN} END,
      CASE WHEN ${UNOWNED} OR ${DEFERRED} OR g % 24 = 0 THEN NULL ELSE g END, CASE WHEN ${UNOWNED} THEN NULL WHEN ${DEFERRED} THEN CAST($2 AS BIGINT) + g ELSE g END,
      CASE WHEN ${UNOWNED} THEN 'unmatched' WHEN ${DEFERRED} THEN 'deferred' ELSE 'linked' END, now()
    FROM range(1, CAST($2 AS BIGINT) + 1) t(g) WHERE ${CUSTOMER}`, [WS, PERSONS]);
  log(`\nDuckDB: rows inserted in ${seconds(t0)} s`);
  t0 = performance.now();
  await duck.run(`UPDATE persons SET search = ${personSearch('email', 'external_id', 'name')}`);
  log(`DuckDB: search column filled (its migration's statement) in ${seconds(t0)} s; load ${load()}`);
}

if (ENGINES.has('duckdb')) {
  const path = join(dir, `people-${args.write}-${PERSONS}.duckdb`);
  // A file is kept once written whole (its mark beside it): an interrupted one is written again.
  const kept = args.data !== undefined && existsSync(`${path}.done`);
  if (!kept) await Promise.all([path, `${path}.wal`].map((f) => rm(f, { force: true })));
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: path });
  const store = stores.duckdb!;
  const duck = stores.control as DuckDBControl;
  const t0 = performance.now();
  if (kept) {
    log(`\nDuckDB: the rows of ${path} (written before)`);
  } else if (API) {
    // As in a running service: the workspace's indexes exist (a lookup made them), and the writes keep them.
    await duck.search.ready(WS);
    await ingestPersons(stores, WS, PERSONS, log);
    await writePayers(duck, WS, PERSONS);
    log(`\nDuckDB: ${PERSONS.toLocaleString('en-US')} persons through ingest's events, their customers through the payment writes, in ${seconds(t0)} s; load ${load()}`);
  } else {
    await bulkDuckDB(store, duck);
  }
  await duck.run('CHECKPOINT');
  if (args.data) await writeFile(`${path}.done`, '');
  const [size] = await duck.all('SELECT database_size FROM pragma_database_size()');
  log(`DuckDB file: ${size!.database_size as string}`);
  QUERIES[CUSTOMER_QUERY]![1] = sampleCustomer;
  const filling = performance.now();
  if (!await duck.search.ready(WS)) throw new Error('the search indexes were not filled');
  log(`DuckDB: the people search's indexes ${API && !kept ? 'kept by the writes' : 'filled from the tables (as at a workspace\'s first lookup after a start)'} in ${seconds(filling)} s; `
    + `heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB; load ${load()}`);
  const readsBefore = readingBefore(store);
  const before = spelledAs(duck, 'duckdb', await duckdbSearchBefore(store), readsBefore);
  await measure({ name: 'DuckDB', control: duck, before, stores, storesBefore: storesBefore(stores, before, readsBefore) });
  if (!API && !kept) {
    // The writes: 500 persons a batch (a batch of events' new persons), alternating without and with the index.
    log('\n| savePersons on DuckDB, per person | index | new person µs | renamed person µs | traits only µs | load (1 min) |');
    log('|---|---|---:|---:|---:|---:|');
    for (let round = 0; round < 2; round++) {
      for (const withIndex of [false, true]) {
        const cost = await writeCost(duck, withIndex, 10_000_000 + (round * 2 + Number(withIndex)) * 100_000, 500, 20);
        log(`| round ${round + 1} | ${withIndex ? 'kept' : 'none'} | ${cost.create.toFixed(1)} | ${cost.rename.toFixed(1)} | ${cost.traits.toFixed(1)} | ${loadavg()[0]!.toFixed(1)} |`);
      }
    }
    log('\n| writeCustomers on DuckDB, per customer | index | new customer µs | another email µs | link state only µs | load (1 min) |');
    log('|---|---|---:|---:|---:|---:|');
    for (let round = 0; round < 2; round++) {
      for (const withIndex of [false, true]) {
        const cost = await customerWriteCost(duck, withIndex, round, 100, 20);
        log(`| round ${round + 1} | ${withIndex ? 'kept' : 'none'} | ${cost.create.toFixed(1)} | ${cost.email.toFixed(1)} | ${cost.other.toFixed(1)} | ${loadavg()[0]!.toFixed(1)} |`);
      }
    }
  }
  await stores.close();
}

/** PostgreSQL: migrated (the trigram indexes exist), then the same rows in a few statements. */
async function bulkPostgres(postgres: PostgresControl): Promise<void> {
  await postgres.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at)
    SELECT $1, g, 'per_' || g, 'user_' || g, 'user' || g || '@' || ${DOMAIN}, 'Person ' || g, NULL, now(), now() FROM generate_series(1, $2::int) g`, [WS, PERSONS]);
  await postgres.run(`INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at)
    SELECT $1, g, 'v_' || g, g, now(), now() FROM generate_series(1, $2::int) g
    UNION ALL SELECT $1, $2::int + g, 'v_' || ($2::int + g), NULL, now(), NULL FROM generate_series(1, $2::int) g WHERE ${DEFERRED}`, [WS, PERSONS]);
  await postgres.run(`INSERT INTO payment_customers (workspace_id, customer_id, email, person_key, visitor_key, link_state, updated_at)
    SELECT $1, 'cus_' || substr(md5(CAST(g AS text)), 1, 14), CASE WHEN ${UNOWNED} THEN 'payer' || g || '@example.com' ELSE 'user' || g || '@' || ${DOMAIN} END,
      CASE WHEN ${UNOWNED} OR ${DEFERRED} OR g % 24 = 0 THEN NULL ELSE g END, CASE WHEN ${UNOWNED} THEN NULL WHEN ${DEFERRED} THEN $2::int + g ELSE g END,
      CASE WHEN ${UNOWNED} THEN 'unmatched' WHEN ${DEFERRED} THEN 'deferred' ELSE 'linked' END, now()
    FROM generate_series(1, $2::int) g WHERE ${CUSTOMER}`, [WS, PERSONS]);
}

if (ENGINES.has('postgres')) {
  const keep = args.data && join(dir, `postgres-${args.write}-${PERSONS}`);
  const kept = keep !== undefined && existsSync(`${keep}.done`);
  const server = await startPostgres({ durable: false, keep });
  const admin = new pg.Client({ connectionString: `${server.url}/postgres` });
  await admin.connect();
  if (!kept) await admin.query('DROP DATABASE IF EXISTS people');
  if (!kept) await admin.query('CREATE DATABASE people');
  await admin.end();
  const postgres = await PostgresControl.open({ url: `${server.url}/people` });
  const t0 = performance.now();
  if (kept) {
    log('\nPostgreSQL: the rows written before');
  } else if (API) {
    await resolvePersons(postgres, WS, PERSONS, log);
    await writePayers(postgres, WS, PERSONS);
    // Autovacuum would have run by now on a live database; the embedded one is started without waiting for it.
  } else {
    await bulkPostgres(postgres);
  }
  await postgres.run('VACUUM ANALYZE persons');
  await postgres.run('VACUUM ANALYZE visitors');
  await postgres.run('VACUUM ANALYZE payment_customers');
  if (keep) await writeFile(`${keep}.done`, '');
  log(`\nPostgreSQL: rows written (${API ? 'identity resolution and the payment writes' : 'bulk'}), vacuumed and analyzed in ${seconds(t0)} s; load ${load()}`);
  QUERIES[CUSTOMER_QUERY]![1] = sampleCustomer;
  await measure({ name: 'PostgreSQL', control: postgres, before: spelledAs(postgres, 'postgres', beforeSearches && new beforeSearches.postgres()) });
  await postgres.close();
  await server.stop();
}
if (!args.data) await rm(dir, { recursive: true, force: true });
if (lookupBefore) await rm(beforeDir, { recursive: true, force: true });
