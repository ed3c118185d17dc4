// The ClickHouse analytical store's query side (counts, members, exports, refresh, snapshots,
// deliveries) against the DuckDB store: the same datasets loaded into an embedded chDB and into
// DuckDB with the same keys, the same criteria and the same steps, equal answers. Data is loaded
// directly (test/support/clickhouse.ts), not ingested. Skipped, with one line saying so, where chdb
// is not installed.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AudienceCriteria, type CriteriaNode, planCriteria } from '../src/criteria/index.js';
import { type AnalyticsStore, EstimatesBusy, type MemberRow } from '../src/store/analytics.js';
import { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import type { ClickHouseContext } from '../src/store/clickhouse/context.js';
import { ClickHouseDriver } from '../src/store/clickhouse/driver.js';
import { ClickHouseSnapshots } from '../src/store/clickhouse/snapshots.js';
import {
  type AudienceRow, getAudience, insertAudience, pendingDeliveries, queueDeliveries, updateAudience,
} from '../src/store/control/audiences.js';
import type { ControlStore } from '../src/store/control/store.js';
import { CriteriaQueries } from '../src/store/query/queries.js';
import type { DeliveryRow } from '../src/store/types.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { DuckDBAnalytics } from '../src/store/duckdb/analytics.js';
import { Store } from '../src/store/duckdb/db.js';
import { importDataset } from '../src/store/duckdb/import.js';
import type { Dataset, EventRow } from '../src/store/layout.js';
import { AT, criteriaArb, datasetArb, EVENT_NAMES } from './support/arbitraries.js';
import { ASLEEP_CLICKHOUSE } from './support/asleep.js';
import { clickhouseSchema } from '../src/store/clickhouse/schema.js';
import { CHDB_MISSING, DATABASE, type LoadedKeys, loadDataset, openChdb } from './support/clickhouse.js';
import { tierRuns } from './support/tier.js';

const chdb = await openChdb();
if (!chdb) console.warn(CHDB_MISSING);
// chDB binds one data directory per process: the next file run in this worker opens its own.
afterAll(() => chdb?.close());

const DAY = 86_400_000;
const ever = { kind: 'ever' as const };
const did = (name: string, window: unknown = ever): CriteriaNode =>
  ({ source: 'product_event', name, filter: [], occurrence: { op: 'did', count: null, window } } as CriteriaNode);

/** A count past any budget of these tests: chDB stops it at its max_execution_time, a server by KILL QUERY too. */
const ENDLESS = { sql: 'SELECT count() AS count FROM numbers(1000000000000) WHERE sipHash64(number) % 1000 = 7', params: {} };

/** An or of 999 distinct leaves: planning and running it outlasts a few milliseconds. */
const HEAVY: AudienceCriteria = {
  version: 1,
  root: {
    op: 'or',
    children: Array.from({ length: 999 }, (_, i): CriteriaNode => ({
      source: 'product_event', name: EVENT_NAMES[i % EVENT_NAMES.length]!,
      filter: [{ field: 'payload.plan', op: '!=', value: `plan${i}` }, { field: 'payload.amount', op: '>=', value: i % 7 }],
      occurrence: { op: 'did', count: { op: '>=', value: 1 + (i % 3) }, window: { kind: 'last_n_days', n: 1 + (i % 30) } },
    })),
  },
};

interface Engines {
  duck: Store;
  control: ControlStore;
  duckdb: DuckDBAnalytics;
  clickhouse: ClickHouseAnalytics;
  ctx: ClickHouseContext;
  /** A temporary directory for the files written. */
  dir: string;
  close(): Promise<void>;
}

/**
 * A DuckDB store (data and control) and a ClickHouse store (data in chDB, control in a DuckDB of its
 * own). Each pair gets a ClickHouse database of its own: keys come from the pair's DuckDB, and one
 * database holds the keys of one control store (the links dictionary is keyed by visitor key alone).
 */
async function openEngines(database: string): Promise<Engines> {
  const duck = await Store.open(':memory:', { threads: 1 });
  const control = new DuckDBControl(await Store.open(':memory:', { threads: 1 }));
  for (const statement of clickhouseSchema({ database })) await chdb!.client.command({ query: statement });
  // loadDataset names tables unqualified: chDB's one session keeps USE.
  await chdb!.client.command({ query: `USE ${database}` });
  const ctx = { client: chdb!.client, database, control };
  const dir = await mkdtemp(join(tmpdir(), 'clickhouse-store-'));
  return {
    duck, control, ctx, dir, duckdb: new DuckDBAnalytics(duck), clickhouse: new ClickHouseAnalytics(ctx, { connections: 2, queueMax: 2 }),
    close: async () => {
      await duck.close();
      await control.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

let workspaces = 0;

/** The dataset in DuckDB, then in ClickHouse with the keys DuckDB gave (the same profiles in both). */
async function loadBoth(e: Engines, ds: Dataset): Promise<{ ws: string; keys: LoadedKeys }> {
  const ws = `ws_store_${workspaces++}`;
  await importDataset(e.duck, ws, ds);
  const keys = await keysOf(e.duck, ws);
  await loadDataset(chdb!.client, ws, ds, keys);
  return { ws, keys };
}

async function keysOf(store: Store, ws: string): Promise<LoadedKeys> {
  const persons = await store.query('SELECT person_id AS id, person_key AS k FROM persons WHERE workspace_id = $1', [ws]);
  const visitors = await store.query('SELECT visitor_id AS id, visitor_key AS k FROM visitors WHERE workspace_id = $1', [ws]);
  const map = (rows: Record<string, unknown>[]) => new Map(rows.map((r) => [String(r.id), Number(r.k)]));
  return { personKey: map(persons), visitorKey: map(visitors) };
}

/** A file's rows as DuckDB reads them; a quoted empty CSV field is the empty string, an unquoted one NULL. */
async function fileRows(store: Store, path: string, format: 'csv' | 'parquet'): Promise<Record<string, unknown>[]> {
  const source = format === 'csv'
    ? `read_csv('${path}', header = true, all_varchar = true, allow_quoted_nulls = false,
        columns = {'person_id': 'VARCHAR', 'visitor_id': 'VARCHAR', 'external_id': 'VARCHAR', 'email': 'VARCHAR'})`
    : `read_parquet('${path}')`;
  return store.query(`SELECT person_id, visitor_id, external_id, email FROM ${source}`);
}

const publicRow = ({ profile: _, ...member }: MemberRow) => member;

describe.skipIf(!chdb)('the ClickHouse store against the DuckDB store', () => {
  let e: Engines;
  beforeAll(async () => {
    e = await openEngines(DATABASE);
  });
  afterAll(() => e.close());

  it('counts, lists and writes the same members, in the same order, for generated datasets and criteria', async () => {
    let files = 0;
    let nonEmpty = 0;
    await fc.assert(fc.asyncProperty(datasetArb, fc.array(criteriaArb(3), { minLength: 2, maxLength: 2 }), async (ds, trees) => {
      const { ws } = await loadBoth(e, ds);
      for (const tree of trees) {
        const plan = planCriteria(tree, AT);
        const listed = await e.clickhouse.listMembers(plan, ws);
        expect(listed).toEqual(await e.duckdb.listMembers(plan, ws));
        if (listed.length > 0) nonEmpty++;
        expect(await e.clickhouse.countWithin(plan, ws, 60_000)).toBe(listed.length);
        const turn = e.clickhouse.estimateTurn(60_000);
        try {
          expect(await turn.count(plan, ws)).toBe(listed.length);
        } finally {
          turn.end();
        }
        for (const format of ['csv', 'parquet'] as const) {
          const [ch, dk] = [join(e.dir, `ch${files}.${format}`), join(e.dir, `dk${files++}.${format}`)];
          expect(await e.clickhouse.writeMembers(plan, ws, ch, format)).toBe(listed.length);
          expect(await e.duckdb.writeMembers(plan, ws, dk, format)).toBe(listed.length);
          const rows = await fileRows(e.duck, ch, format);
          expect(rows).toEqual(await fileRows(e.duck, dk, format));
          expect(rows).toEqual(listed);
        }
      }
    }), { numRuns: tierRuns(6), seed: 20261124 });
    expect(nonEmpty).toBeGreaterThan(0);
  });

  it('writes values a CSV must quote, and NULL apart from the empty string, as DuckDB does', async () => {
    const odd = ['a,b', 'say "hi"', 'two\nlines', '', 'Ärger', ' padded '];
    const ds: Dataset = {
      persons: odd.map((value, i) => ({ person_id: `p${i}`, external_id: value, email: i % 2 ? null : `u${i}@example.com`, name: null, traits: null, created_at: AT })),
      visitors: [{ visitor_id: 'v,1', person_id: null, first_seen_at: AT }],
      events: [...odd.map((_, i) => ({ person_id: `p${i}`, visitor_id: null })), { person_id: null, visitor_id: 'v,1' }]
        .map((owner, i): EventRow => ({ event_id: `e${i}`, event_name: 'signup', ts: AT, properties: '{}', ...owner })),
      pageviews: [], customers: [], subscriptions: [], invoices: [], payment_events: [],
    };
    const { ws } = await loadBoth(e, ds);
    const plan = planCriteria({ version: 1, root: did('signup') }, AT);
    const listed = await e.clickhouse.listMembers(plan, ws);
    expect(listed.map((m) => m.external_id)).toEqual(expect.arrayContaining([...odd, null]));
    for (const format of ['csv', 'parquet'] as const) {
      const path = join(e.dir, `odd.${format}`);
      expect(await e.clickhouse.writeMembers(plan, ws, path, format)).toBe(odd.length + 1);
      expect(await fileRows(e.duck, path, format)).toEqual(await e.duckdb.listMembers(plan, ws));
    }
  });

  it('answers a count past its budget with null, and shows its statement and its index use', async () => {
    const queries = new CriteriaQueries(new ClickHouseDriver(e.ctx, { connections: 1, queueMax: 1 }));
    // chDB answers once its own limit stops the query, after the deadline: a late answer is null too.
    expect(await queries.countQueryWithin(ENDLESS, 200)).toBeNull();
    const { ws } = await loadBoth(e, fc.sample(datasetArb, { numRuns: 1, seed: 11 })[0]!);
    expect(await queries.countWithin(planCriteria(HEAVY, AT), ws, 20)).toBeNull();
    const plan = planCriteria({ version: 1, root: did('signup') }, AT);
    expect(await queries.countWithin(plan, ws, 60_000)).toBe(await e.duckdb.countWithin(plan, ws, 60_000));

    const query = await e.clickhouse.countQuery(plan, ws);
    expect(query.sql).toContain(`\`${DATABASE}\`.events`);
    // The explain output numbers the parameters: {pN:Type} is the N-th.
    expect(query.sql).toContain('{p1:String}');
    expect(query.params[0]).toBe(ws);
    const profile = await e.clickhouse.profileWithin(plan, ws, 60_000);
    expect(profile).toMatch(/ReadFromMergeTree \(analytics\.events\)/);
    expect(profile).toMatch(/Granules: \d+\/\d+/);
    expect(await queries.profileWithin(planCriteria(HEAVY, AT), ws, 0)).toBeNull();
  });

  it('refuses an estimate past the queue at once, and lets a waiting one run out of budget without running its query', async () => {
    const queries = new CriteriaQueries(new ClickHouseDriver(e.ctx, { connections: 1, queueMax: 1 }));
    const blocker = queries.countQueryWithin(ASLEEP_CLICKHOUSE, 3000);
    await expect.poll(() => queries.estimateStats().running).toBe(1);
    const waiting = queries.estimateTurn(50);
    let refused: unknown;
    try {
      queries.estimateTurn(50);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(EstimatesBusy);
    expect((refused as EstimatesBusy).retryAfterMs).toBeGreaterThan(0);
    expect((refused as EstimatesBusy).retryAfterMs).toBeLessThanOrEqual(3000);
    const plan = planCriteria({ version: 1, root: did('signup') }, AT);
    try {
      expect(await waiting.count(plan, 'ws_none')).toBeNull();
    } finally {
      waiting.end();
    }
    expect(queries.estimateStats()).toEqual({ running: 1, waiting: 0, started: 1, expired: 1, refused: 1 });
    expect(await blocker).toBeNull();
    expect(await queries.countWithin(plan, 'ws_none', 60_000)).toBe(0);
    expect(queries.estimateStats()).toEqual({ running: 0, waiting: 0, started: 2, expired: 1, refused: 1 });
  });
});

/** A fixed workspace whose membership changes between refreshes: windowed signups, and new ones later. */
function deliveryDataset(): Dataset {
  const persons = ['a,b', 'say "hi"', '', 'Ärger', null, 'x', 'y', 'z'].map((external_id, i) => ({
    person_id: `p${i}`, external_id, email: i % 3 ? `p${i}@example.com` : null, name: null, traits: null, created_at: AT,
  }));
  const visitors = ['v0', 'v1', 'v2', 'v3'].map((visitor_id, i) => ({ visitor_id, person_id: i === 0 ? 'p0' : null, first_seen_at: AT }));
  const owners = [...persons.map((p) => ({ person_id: p.person_id, visitor_id: null })), ...visitors.map((v) => ({ person_id: null, visitor_id: v.visitor_id }))];
  const events = owners.map((owner, i): EventRow => ({
    event_id: `e${i}`, event_name: 'signup', ts: new Date(AT.getTime() - (i % 4) * 6 * DAY), properties: '{}', ...owner,
  }));
  return { persons, visitors, events, pageviews: [], customers: [], subscriptions: [], invoices: [], payment_events: [] };
}

function audienceRow(ws: string, id: string, destinations: string[]): AudienceRow {
  return {
    workspace_id: ws, audience_id: id, name: id, criteria: '{}', is_time_windowed: true, refresh_every: '1d', refresh_every_ms: DAY,
    destinations: JSON.stringify(destinations.map((d) => ({ id: d, type: 'webhook' }))), splits: '[]', split_salt: 'salt', status: 'pending', snapshot_id: null,
    member_count: null, last_refreshed_at: null, next_refresh_at: AT, last_error: null, created_at: AT, updated_at: AT,
  };
}

interface Side {
  analytics: AnalyticsStore;
  control: ControlStore;
  log: unknown[];
}

describe.skipIf(!chdb)('refreshes and deliveries on ClickHouse against DuckDB', () => {
  let e: Engines;
  beforeAll(async () => {
    e = await openEngines('deliveries');
  });
  afterAll(() => e.close());

  const PAGE = 2;
  const AUDIENCE = 'aud_signups';
  const criteria: AudienceCriteria = { version: 1, root: did('signup', { kind: 'last_n_days', n: 14 }) };

  async function refresh(s: Side, ws: string, at: Date, limitMs = 60_000, signal?: AbortSignal) {
    const destinations = JSON.parse((await getAudience(s.control, ws, AUDIENCE))!.destinations) as { id: string }[];
    const result = await s.analytics.refresh({
      ws, audienceId: AUDIENCE, at, nextRefreshAt: new Date(at.getTime() + DAY), plan: planCriteria(criteria, at),
      destinationIds: destinations.map((d) => d.id), limitMs, signal,
    });
    s.log.push({ refresh: result });
    return result;
  }

  async function pagesOf(s: Side, ws: string, snapshot: number): Promise<MemberRow[]> {
    const all: MemberRow[] = [];
    for (let after: bigint | null = null; ;) {
      const page = await s.analytics.membersPage(ws, snapshot, after, PAGE);
      all.push(...page);
      if (page.length < PAGE) return all;
      after = BigInt(page.at(-1)!.profile);
    }
  }

  /** Runs the destination's pending delivery: every page, or `pages` of them and then a failure. */
  async function deliver(s: Side, ws: string, destination: string, at: Date, pages = Infinity): Promise<void> {
    const pending = (await pendingDeliveries(s.control, ws, AUDIENCE)).filter((d) => d.destination_id === destination);
    s.log.push({ pending: pending.map((d) => [d.delivery_id, d.snapshot_id, d.page_count]) });
    const latest = pending.find((d) => d.page_count !== null) ?? pending.at(-1)!;
    const started: DeliveryRow = latest.page_count !== null ? latest : await s.analytics.startDelivery(latest, PAGE, at, 60_000);
    const { delivery_id, base_snapshot_id, sends_diff, page_count, added_count, removed_count, next_page } = started;
    s.log.push({ started: { delivery_id, base_snapshot_id, sends_diff, page_count, added_count, removed_count, next_page } });
    let page = started.next_page;
    for (; page < started.page_count! && page < pages; page++) {
      s.log.push({ page, members: await s.analytics.deliveryPage(started, page) });
      await s.analytics.acknowledgePage(started, page, 0);
    }
    await s.analytics.finishDelivery(started, page === started.page_count ? 'delivered' : 'failed', page === started.page_count ? null : 'test', at);
    s.log.push({ state: await destinationState(s.control, ws) });
  }

  async function destinationState(control: ControlStore, ws: string): Promise<unknown> {
    return {
      acked: await control.all('SELECT destination_id, acked_snapshot_id FROM audience_destinations WHERE workspace_id = $1 ORDER BY ALL', [ws]),
      changes: await control.all('SELECT destination_id, change, profile FROM audience_destination_changes WHERE workspace_id = $1 ORDER BY ALL', [ws]),
      deliveries: await control.all(`SELECT delivery_id, destination_id, snapshot_id, status, last_error, next_page
        FROM audience_deliveries WHERE workspace_id = $1 ORDER BY delivery_id`, [ws]),
    };
  }

  /**
   * The same steps on one store: refreshes as data and time move; deliveries of a snapshot's diff
   * and of work lists of their own, failing halfway and catching up; a destination added later.
   */
  async function scenario(s: Side, ws: string, more: (ws: string) => Promise<void>): Promise<void> {
    await insertAudience(s.control, audienceRow(ws, AUDIENCE, ['d1', 'd2']));
    const first = await refresh(s, ws, AT);
    s.log.push({ members: await pagesOf(s, ws, first.snapshot_id) });
    await deliver(s, ws, 'd1', AT);
    await deliver(s, ws, 'd2', AT, 1);

    await more(ws);
    const later = new Date(AT.getTime() + 7 * DAY);
    const second = await refresh(s, ws, later);
    s.log.push({ members: await pagesOf(s, ws, second.snapshot_id) });
    await deliver(s, ws, 'd1', later, 1);
    await deliver(s, ws, 'd2', later, 2);
    // Failed deliveries wait for the next refresh; queued now instead, they carry what is left.
    await queueDeliveries(s.control, ws, AUDIENCE, ['d1', 'd2'], later);
    await deliver(s, ws, 'd1', later);
    await deliver(s, ws, 'd2', later);

    await updateAudience(s.control, ws, AUDIENCE, { destinations: audienceRow(ws, AUDIENCE, ['d1', 'd2', 'd3']).destinations });
    await queueDeliveries(s.control, ws, AUDIENCE, ['d3'], later);
    await deliver(s, ws, 'd3', later);
    const third = await refresh(s, ws, later);
    s.log.push({ audience: await s.control.all('SELECT snapshot_id, member_count, status FROM audiences WHERE workspace_id = $1', [ws]) });
    s.log.push({ members: (await pagesOf(s, ws, third.snapshot_id)).map(publicRow) });
    s.log.push({ state: await destinationState(s.control, ws) });
  }

  it('refreshes, diffs, pages, exports and delivers what DuckDB does, step by step', async () => {
    const ds = deliveryDataset();
    const { ws, keys } = await loadBoth(e, ds);
    // Signups of members and of people who were not: a week later some have left the window.
    const more: EventRow[] = ['p5', 'p6', 'p7'].map((person_id, i) => ({
      event_id: `later${i}`, event_name: 'signup', ts: new Date(AT.getTime() + (6 - i) * DAY), person_id, visitor_id: null, properties: '{}',
    }));
    const duckdb: Side = { analytics: e.duckdb, control: new DuckDBControl(e.duck), log: [] };
    const clickhouse: Side = { analytics: e.clickhouse, control: e.control, log: [] };
    await scenario(duckdb, ws, (w) => importDataset(e.duck, w, { events: more }));
    await scenario(clickhouse, ws, (w) => loadDataset(chdb!.client, w, { ...ds, persons: [], visitors: [], events: more }, keys).then(() => undefined));
    expect(clickhouse.log).toEqual(duckdb.log);

    // The scenario sent a snapshot's own diff, work lists of their own, a failed delivery's rest and removals.
    const started = duckdb.log.flatMap((x) => ('started' in (x as object) ? [(x as { started: DeliveryRow }).started] : []));
    expect(started.some((d) => d.sends_diff)).toBe(true);
    expect(started.some((d) => !d.sends_diff && d.base_snapshot_id !== null)).toBe(true);
    expect(started.some((d) => d.base_snapshot_id === null && d.page_count! > 1)).toBe(true);
    expect(started.some((d) => d.removed_count! > 0)).toBe(true);

    // Members and diffs are kept for the same snapshots; finished deliveries' work lists are gone.
    const stored = async (table: string) => (await (await chdb!.client.query({
      query: `SELECT DISTINCT snapshot_id FROM ${e.ctx.database}.${table} WHERE workspace_id = {ws:String} ORDER BY snapshot_id`, query_params: { ws }, format: 'JSONEachRow',
    })).json<{ snapshot_id: unknown }>()).map((r) => Number(r.snapshot_id));
    for (const table of ['audience_members', 'audience_diffs']) {
      const kept = await e.duck.query(`SELECT DISTINCT snapshot_id FROM ${table} WHERE workspace_id = $1 ORDER BY snapshot_id`, [ws]);
      expect(await stored(table)).toEqual(kept.map((r) => Number(r.snapshot_id)));
    }
    const [{ n }] = await (await chdb!.client.query({
      query: `SELECT count() AS n FROM ${e.ctx.database}.audience_delivery_items WHERE workspace_id = {ws:String}`, query_params: { ws }, format: 'JSONEachRow',
    })).json<{ n: unknown }>() as [{ n: unknown }];
    expect(Number(n)).toBe(0);

    // The current snapshot exported and streamed as DuckDB's.
    const current = (await getAudience(e.control, ws, AUDIENCE))!.snapshot_id!;
    const expected = await e.duck.query(`SELECT p.person_id, v.visitor_id, p.external_id, p.email FROM audience_members m
      LEFT JOIN persons p ON p.workspace_id = $1 AND p.person_key = m.profile LEFT JOIN visitors v ON v.workspace_id = $1 AND v.visitor_key = -m.profile
      WHERE m.workspace_id = $1 AND m.snapshot_id = $2 ORDER BY m.profile`, [ws, current]);
    expect(expected.length).toBeGreaterThan(PAGE);
    for (const format of ['csv', 'parquet'] as const) {
      const [ch, dk] = [join(e.dir, `ch.${format}`), join(e.dir, `dk.${format}`)];
      await e.clickhouse.exportSnapshot(ws, current, ch, format, null);
      await e.duckdb.exportSnapshot(ws, current, dk, format, null);
      expect(await fileRows(e.duck, ch, format)).toEqual(await fileRows(e.duck, dk, format));
      expect(await fileRows(e.duck, ch, format)).toEqual(expected);
    }
    for (const side of [e.clickhouse, e.duckdb]) {
      const chunks: Uint8Array[] = [];
      for await (const chunk of await side.exportArrow(ws, current, null)) chunks.push(chunk);
      const table = tableFromIPC(Buffer.concat(chunks));
      expect(table.schema.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual(
        ['person_id', 'visitor_id', 'external_id', 'email'].map((name) => [name, 'Utf8', true]));
      expect(table.toArray().map((r) => ({ ...r.toJSON() }))).toEqual(expected);
    }

    // Dropping the audience's snapshots leaves nothing of them in ClickHouse or in the control store.
    await new ClickHouseSnapshots(e.ctx).dropSnapshots(ws, AUDIENCE);
    for (const table of ['audience_members', 'audience_diffs']) expect(await stored(table)).toEqual([]);
    expect(await e.control.all('SELECT * FROM audience_snapshots WHERE workspace_id = $1', [ws])).toEqual([]);
  });

  it('keeps the previous snapshot current when a refresh is stopped by its limit or the service stopping', async () => {
    const { ws } = await loadBoth(e, deliveryDataset());
    const s: Side = { analytics: e.clickhouse, control: e.control, log: [] };
    await insertAudience(e.control, audienceRow(ws, AUDIENCE, ['d1']));
    const first = await refresh(s, ws, AT);
    const stopping = new AbortController();
    stopping.abort();
    await expect(refresh(s, ws, AT, 60_000, stopping.signal)).rejects.toThrow('interrupted: the service stopped during the refresh');
    const heavy = (at: Date) => e.clickhouse.refresh({
      ws, audienceId: AUDIENCE, at, nextRefreshAt: at, plan: planCriteria(HEAVY, at), destinationIds: ['d1'], limitMs: 20,
    });
    await expect(heavy(AT)).rejects.toThrow('interrupted after the 20 ms limit');
    expect(await getAudience(e.control, ws, AUDIENCE)).toMatchObject({ snapshot_id: first.snapshot_id, member_count: first.member_count });
    expect((await pendingDeliveries(e.control, ws, AUDIENCE)).map((d) => d.snapshot_id)).toEqual([first.snapshot_id]);

    // The next refresh diffs against the snapshot that stayed current.
    const again = await refresh(s, ws, AT);
    expect(again).toMatchObject({ member_count: first.member_count, added: 0, removed: 0 });
    expect(await e.control.all('SELECT previous_snapshot_id FROM audience_snapshots WHERE workspace_id = $1 AND snapshot_id = $2', [ws, again.snapshot_id]))
      .toEqual([{ previous_snapshot_id: BigInt(first.snapshot_id) }]);
  });
});
