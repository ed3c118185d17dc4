// The ClickHouse dialect against DuckDB and the reference evaluator (docs/criteria.md): the same
// random datasets loaded into an embedded chDB and into DuckDB, the same random trees, equal member
// lists and counts, whole trees and leaf by leaf. Skipped, with one line saying so, where chdb is
// not installed.

import type { ClickHouseClient } from '@clickhouse/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AudienceCriteria, CLICKHOUSE_QUERY_SETTINGS, type ClickHouseQuery, clickhousePrinter, type CriteriaNode, planCriteria, type Predicate, printCount,
  printMembers,
} from '../src/criteria/index.js';
import { scanUses } from '../src/criteria/print/walker.js';
import { CLICKHOUSE_TABLES, clickhouseSchema, VISITOR_LINKS } from '../src/store/clickhouse/schema.js';
import { Store } from '../src/store/duckdb/db.js';
import { importDataset } from '../src/store/duckdb/import.js';
import type { Dataset } from '../src/store/layout.js';
import { AT, criteriaArb, datasetArb, EVENT_NAMES } from './support/arbitraries.js';
import { CHDB_MISSING, DATABASE, loadDataset, openChdb } from './support/clickhouse.js';
import { equalityOrsArb, leavesOf, sameScanOr } from './support/criteria-cases.js';
import { anonymousProfile, personProfile, referenceProfiles } from './support/reference.js';
import { tierRuns } from './support/tier.js';

const chdb = await openChdb();
if (!chdb) console.warn(CHDB_MISSING);

interface MemberRow {
  profile: unknown;
  person_id: string | null;
  visitor_id: string | null;
  external_id: string | null;
  email: string | null;
}

const profileOf = (r: MemberRow) => (r.person_id !== null ? personProfile(r.person_id) : anonymousProfile(r.visitor_id!));
/** Member rows without the store's internal key, in one order whatever the stores' keys. */
const publicRows = (rows: MemberRow[]) => rows.map(({ profile: _, ...r }) => JSON.stringify(r)).sort();

const ever = { kind: 'ever' as const };
const did = (name: string, filter: Predicate[]): CriteriaNode =>
  ({ source: 'product_event', name, filter, occurrence: { op: 'did', count: null, window: ever } });

/** Trees that use a leaf twice (ClickHouse reads it once; DuckDB shares it as a CTE). */
function sharedLeafTrees(tree: AudienceCriteria): AudienceCriteria[] {
  const [first, second = first] = leavesOf(tree.root).map((c) => c.root);
  if (!first || !second) return [];
  const and = (children: CriteriaNode[]): CriteriaNode => ({ op: 'and', children });
  return [
    { version: 1, root: { op: 'or', children: [and([first, second]), and([first, { op: 'not', child: second }])] } },
    { version: 1, root: and([tree.root, { op: 'or', children: [first, tree.root] }]) },
  ];
}

describe.skipIf(!chdb)('the ClickHouse dialect against DuckDB and the reference evaluator', () => {
  let client: ClickHouseClient;
  let store: Store;
  let workspaces = 0;
  beforeAll(async () => {
    client = chdb!.client;
    store = await Store.open(':memory:', { threads: 1 });
  });
  afterAll(async () => {
    await store.close();
    await chdb!.close();
  });

  /** Rows of a ClickHouse query; join_use_nulls given every time (chDB keeps a query's settings for the next). */
  async function rows<T>(query: ClickHouseQuery, joinUseNulls: 0 | 1 = 0): Promise<T[]> {
    const result = await client.query({
      query: query.sql, query_params: query.params, format: 'JSONEachRow', clickhouse_settings: { ...CLICKHOUSE_QUERY_SETTINGS, join_use_nulls: joinUseNulls },
    });
    return result.json<T>();
  }

  async function loadBoth(ds: Dataset): Promise<string> {
    const ws = `ws_ch_${workspaces++}`;
    await importDataset(store, ws, ds);
    await loadDataset(client, ws, ds);
    return ws;
  }

  async function expectSameMembers(ds: Dataset, ws: string, criteria: AudienceCriteria): Promise<void> {
    const plan = planCriteria(criteria, AT);
    const expected = referenceProfiles(ds, criteria, AT);
    const members = await rows<MemberRow>(clickhousePrinter.members(plan, ws));
    expect(new Set(members.map(profileOf))).toEqual(expected);
    expect(members.length).toBe(expected.size);
    const duckdb = printMembers(plan, ws);
    expect(publicRows(members)).toEqual(publicRows(await store.query(duckdb.sql, duckdb.params) as unknown as MemberRow[]));
    const profiles = await rows<{ profile: string }>(clickhousePrinter.profiles(plan, ws));
    expect(profiles.map((r) => String(r.profile)).sort()).toEqual(members.map((r) => String(r.profile)).sort());
  }

  async function expectSameCount(ds: Dataset, ws: string, criteria: AudienceCriteria, joinUseNulls: 0 | 1 = 0): Promise<void> {
    const plan = planCriteria(criteria, AT);
    const expected = referenceProfiles(ds, criteria, AT).size;
    const [{ count }] = await rows<{ count: string }>(clickhousePrinter.count(plan, ws), joinUseNulls) as [{ count: string }];
    expect(Number(count)).toBe(expected);
    const duckdb = printCount(plan, ws);
    expect(await store.countWithin(duckdb.sql, duckdb.params, 60_000)).toBe(expected);
  }

  it('selects the same members and counts as DuckDB and the reference, for generated datasets and criteria', async () => {
    let sharedPlans = 0;
    await fc.assert(fc.asyncProperty(datasetArb, fc.array(criteriaArb(3), { minLength: 3, maxLength: 3 }), equalityOrsArb, async (ds, trees, ors) => {
      const ws = await loadBoth(ds);
      for (const tree of trees) {
        await expectSameMembers(ds, ws, tree);
        // Under join_use_nulls = 1 a LEFT JOIN miss is NULL, not 0: the same answer either way.
        await expectSameCount(ds, ws, tree, 1);
        const merged = [sameScanOr(tree, 'product_event'), sameScanOr(tree, 'pageview')].filter((c) => c !== null);
        const shared = sharedLeafTrees(tree);
        sharedPlans += shared.filter((c) => [...scanUses(planCriteria(c, AT)).values()].some((n) => n > 1)).length;
        for (const single of [...leavesOf(tree.root), ...merged, ...shared, ...(tree === trees[0] ? ors : [])]) {
          await expectSameCount(ds, ws, single);
        }
      }
    }), { numRuns: tierRuns(15), seed: 20261123 });
    expect(sharedPlans).toBeGreaterThan(0);
  }, 240_000);

  it('keeps the JSON types of payload and trait values: a number never equals a string, null and absent are absent, objects are present', async () => {
    const documents = [
      '{"v": 12}', '{"v": "12"}', '{"v": 12.5}', '{"v": 1e2}', '{"v": 100}', '{"v": -0}', '{"v": 18446744073709551615}', '{"v": 1152921504606846976}',
      '{"v": true}', '{"v": "true"}', '{"v": false}', '{"v": null}', '{}', '{"v": {}}', '{"v": {"w": null}}', '{"v": {"w": "x"}}',
      '{"v": [1, 2]}', '{"v": []}', '{"v": "2026-01-01"}', '{"v": "2026-01-01 10:00:00"}', '{"v": "Ärger"}', '{"v": "ÉCOLE"}',
      '{"v": "école"}', '{"v": "a\'b\\\\c\\nd"}', '{"v": ""}', '{"a.b": 1}', '{"a": {"b": 2}}', '{"odd key": "x"}', '{"odd key": 5}',
    ];
    // Each document both as an event's properties and as its person's traits.
    const ds: Dataset = {
      persons: documents.map((traits, i) => ({ person_id: `p${i}`, external_id: null, email: null, name: null, traits, created_at: AT })),
      visitors: [],
      events: documents.map((properties, i) => ({ event_id: `e${i}`, event_name: 'typed', ts: AT, person_id: `p${i}`, visitor_id: null, properties })),
      pageviews: [], customers: [], subscriptions: [], invoices: [], payment_events: [],
    };
    const ws = await loadBoth(ds);
    const leaves = { payload: (filter: Predicate[]) => did('typed', filter), traits: (filter: Predicate[]): CriteriaNode => ({ source: 'person', filter }) };
    for (const [prefix, leaf] of Object.entries(leaves)) {
      const v = (op: Predicate['op'], value?: Predicate['value']): Predicate => ({ field: `${prefix}.v`, op, ...(value === undefined ? {} : { value }) });
      const at = (path: string, op: Predicate['op'], value?: Predicate['value']): Predicate => ({ ...v(op, value), field: `${prefix}.${path}` });
      const filters: Predicate[][] = [
        [v('=', 12)], [v('=', '12')], [v('=', 100)], [v('=', 0)], [v('=', 2 ** 60)], [v('>', 2 ** 60)], [v('=', true)], [v('=', 'true')],
        [v('=', false)], [v('=', '')], [v('=', '2026-01-01')], [v('=', "a'b\\c\nd")], [v('!=', 12)], [v('!=', '12')],
        [v('in', [12, 'true', false])], [v('in', ['12', 'école'])], [v('not_in', [12, '12'])], [v('>', 12)], [v('>=', 12.5)],
        [v('<', 100)], [v('<=', 0)], [v('>', '1')], [v('<', '2026')], [v('>=', 'Ä')], [v('contains', 'ä')], [v('contains', 'G')],
        [v('contains', '')], [v('contains', '1')], [v('starts_with', 'é')], [v('starts_with', 'ÉC')], [v('ends_with', 'GER')],
        [v('ends_with', '26-01-01')], [v('not_contains', 'e')], [v('is_set')], [v('is_not_set')],
        [at('v.w', 'is_set')], [at('v.w', 'is_not_set')], [at('v.w', '=', 'x')], [at('a.b', '=', 1)], [at('a.b', '=', 2)], [at('a', 'is_set')],
        [at('odd key', '=', 'x')], [at('odd key', '=', 5)], [at('odd key', 'is_set')], [at('odd key', 'contains', 'X')],
        [at('never', 'is_not_set')], [v('is_set'), v('!=', 12), v('not_contains', 'x')],
      ];
      for (const filter of filters) await expectSameMembers(ds, ws, { version: 1, root: leaf(filter) });
      // The cases discriminate: `= 12` is one document, and six documents have no `v` (absent or null).
      expect(referenceProfiles(ds, { version: 1, root: leaf([v('=', 12)]) }, AT)).toEqual(new Set(['p0']));
      expect(referenceProfiles(ds, { version: 1, root: leaf([v('is_set')]) }, AT).size).toBe(documents.length - 6);
    }
  });

  it('counts a relinked visitor for its newest person, from the links dictionary, from links past its cut, and after ClickHouse merges the versions', async () => {
    const ds: Dataset = {
      persons: ['p1', 'p2'].map((person_id) => ({ person_id, external_id: null, email: null, name: null, traits: null, created_at: AT })),
      visitors: [{ visitor_id: 'v1', person_id: 'p1', first_seen_at: AT }, { visitor_id: 'v2', person_id: null, first_seen_at: AT }],
      events: ['v1', 'v2'].map((visitor_id, i) => ({ event_id: `e${i}`, event_name: 'signup', ts: AT, person_id: null, visitor_id, properties: '{}' })),
      pageviews: [], customers: [], subscriptions: [], invoices: [], payment_events: [],
    };
    const ws = `ws_ch_${workspaces++}`;
    const keys = await loadDataset(client, ws, ds);
    const criteria: AudienceCriteria = { version: 1, root: did('signup', []) };
    const members = async () => new Set((await rows<MemberRow>(clickhousePrinter.members(planCriteria(criteria, AT), ws))).map(profileOf));
    // `version` old (before the dictionary's cut: reloaded into it) or now in ns (past the cut: read from the table).
    const relink = async (links: Record<string, string | null>, version: bigint, reload: boolean) => {
      const values = Object.entries(links).map(([visitor_id, person_id]) => ({ workspace_id: ws, visitor_key: keys.visitorKey.get(visitor_id),
        visitor_id, person_key: person_id === null ? 0 : keys.personKey.get(person_id), version: String(version) }));
      await client.insert({ table: 'visitors', values, format: 'JSONEachRow' });
      if (reload) await client.command({ query: `SYSTEM RELOAD DICTIONARY ${VISITOR_LINKS}` });
      ds.visitors = ds.visitors.map((v) => (v.visitor_id in links ? { ...v, person_id: links[v.visitor_id] ?? null } : v));
      return referenceProfiles({ ...ds }, criteria, AT);
    };
    const now = () => BigInt(Date.now()) * 1_000_000n;
    const dictionaryPeople = async () => Number((await rows<{ n: string }>({
      sql: `SELECT count() AS n FROM ${DATABASE}.visitors FINAL WHERE workspace_id = {ws:String}
        AND dictGetOrDefault('${DATABASE}.${VISITOR_LINKS}', 'person_key', toUInt64(visitor_key), toInt64(0)) != 0`, params: { ws } }))[0]!.n);

    expect(await members()).toEqual(new Set(['p1', 'v:v2']));
    expect(await dictionaryPeople()).toBe(1);
    expect(await relink({ v1: 'p2', v2: 'p1' }, 3n, true)).toEqual(await members());
    expect(await members()).toEqual(new Set(['p2', 'p1']));
    expect(await dictionaryPeople()).toBe(2);
    // Past the cut, the table's newest row wins over the dictionary's, "no person" (0) included.
    expect(await relink({ v1: null }, now(), false)).toEqual(await members());
    expect(await members()).toEqual(new Set(['v:v1', 'p1']));
    expect(await relink({ v1: 'p1', v2: 'p2' }, now(), false)).toEqual(await members());
    expect(await members()).toEqual(new Set(['p1', 'p2']));
    expect(await relink({ v1: null }, now(), false)).toEqual(await members());
    await client.command({ query: 'OPTIMIZE TABLE visitors FINAL' });
    await client.command({ query: `SYSTEM RELOAD DICTIONARY ${VISITOR_LINKS}` });
    expect(await members()).toEqual(new Set(['v:v1', 'p2']));
  });

  it('counts trees at the size limits: an or of 999 distinct leaves, and two ors sharing 200 of their 400 leaves', async () => {
    const ds = fc.sample(datasetArb, { numRuns: 1, seed: 7 })[0]!;
    const ws = `ws_ch_${workspaces++}`;
    await loadDataset(client, ws, ds);
    const leaves: CriteriaNode[] = Array.from({ length: 999 }, (_, i) => ({
      source: 'product_event', name: EVENT_NAMES[i % EVENT_NAMES.length]!,
      filter: [{ field: 'payload.plan', op: '!=', value: `plan${i}` }, { field: 'payload.amount', op: '>=', value: i % 7 },
        { field: 'payload.coupon', op: 'is_not_set' }],
      occurrence: { op: 'did', count: { op: i % 2 === 0 ? '>=' : '<=', value: 1 + (i % 3) }, window: { kind: 'last_n_days', n: 1 + (i % 30) } },
    }));
    const trees: AudienceCriteria[] = [
      { version: 1, root: { op: 'or', children: leaves } },
      { version: 1, root: { op: 'and', children: [{ op: 'or', children: leaves.slice(0, 400) }, { op: 'not', child: { op: 'or', children: leaves.slice(200, 600) } }] } },
    ];
    for (const tree of trees) {
      const [{ count }] = await rows<{ count: string }>(clickhousePrinter.count(planCriteria(tree, AT), ws)) as [{ count: string }];
      expect(Number(count)).toBe(referenceProfiles(ds, tree, AT).size);
    }
  }, 240_000);

  it('creates the single-node tables ordered for the criteria queries', async () => {
    const tables = await (await client.query({
      query: 'SELECT name, engine, sorting_key, partition_key FROM system.tables WHERE database = {db:String} ORDER BY name',
      query_params: { db: DATABASE }, format: 'JSONEachRow',
    })).json<{ name: string; engine: string; sorting_key: string; partition_key: string }>();
    const byName = new Map(tables.map((t) => [t.name, t]));
    expect(byName.get('events')).toMatchObject({ engine: 'MergeTree', sorting_key: 'workspace_id, event_name, ts', partition_key: 'toYYYYMM(ts)' });
    expect(byName.get('visitors')).toMatchObject({ engine: 'ReplacingMergeTree', sorting_key: 'workspace_id, visitor_key' });
    expect(byName.get('payment_events')).toMatchObject({ engine: 'ReplacingMergeTree' });
    const columns = await (await client.query({
      query: "SELECT type FROM system.columns WHERE database = {db:String} AND table = 'events' AND name IN ('ts', 'properties') ORDER BY name",
      query_params: { db: DATABASE }, format: 'JSONEachRow',
    })).json<{ type: string }>();
    expect(columns.map((c) => c.type)).toEqual(['JSON', "DateTime64(6, 'UTC')"]);
  });

  it('writes cluster DDL the engine parses: replicated local tables behind Distributed ones sharded by workspace', async () => {
    const statements = clickhouseSchema({ database: DATABASE, cluster: 'analytics_cluster', dictionarySource: { username: 'svc', password: "p'w\\" } });
    const formatted: string[] = [];
    for (const statement of statements) {
      const [row] = await (await client.query({ query: 'SELECT formatQuery({q:String}) AS f', query_params: { q: statement }, format: 'JSONEachRow' }))
        .json<{ f: string }>();
      formatted.push(row!.f);
    }
    expect(formatted.every((f) => f.includes('ON CLUSTER analytics_cluster'))).toBe(true);
    const single = CLICKHOUSE_TABLES.length;
    const local = formatted.filter((f) => /CREATE TABLE IF NOT EXISTS analytics\.\w+_local/.test(f));
    const distributed = formatted.filter((f) => f.includes("ENGINE = Distributed(analytics_cluster, analytics, ") && f.includes('cityHash64(workspace_id)'));
    expect(local).toHaveLength(single);
    expect(distributed).toHaveLength(single);
    expect(local.every((f) => /ENGINE = Replicated\w*MergeTree\('\/clickhouse\/tables\/\{shard\}\/\{database\}\/\{table\}', '\{replica\}'/.test(f))).toBe(true);
    expect(local.find((f) => f.includes('analytics.visitors_local'))).toContain("'{replica}', version)");
    // The version index on the replicated table; the links dictionary on every node, over the Distributed table.
    expect(formatted.filter((f) => /^ALTER TABLE analytics\.visitors_local ON CLUSTER analytics_cluster\s+\(?ADD INDEX IF NOT EXISTS version_minmax /.test(f))).toHaveLength(1);
    const dictionary = formatted.find((f) => f.startsWith(`CREATE DICTIONARY IF NOT EXISTS analytics.${VISITOR_LINKS} ON CLUSTER`));
    expect(dictionary).toMatch(/FROM `?analytics`?\.`?visitors`? FINAL/);
    // The service's own login for the dictionary's source, quoted as literals.
    expect(dictionary).toContain("USER 'svc' PASSWORD 'p\\'w\\\\'");
  });
});
