// Refresh, snapshots and deliveries on ClickHouse, with the semantics of store/duckdb/snapshots.ts.
// A snapshot's members, its diff and deliveries' work lists are ClickHouse rows written with
// INSERT … SELECT (profiles never leave the database except page by page); what points at them
// (the audience's snapshot, deliveries, what each destination has acknowledged) is in the control
// store. Without a transaction across the two, ClickHouse rows are written first, under ids nothing
// refers to yet, and checked; one control transaction then makes them current. A refresh or a
// delivery start stopped before that leaves unreferenced rows, removed on the spot where possible
// and never read otherwise.

import type { ClickHouseClient } from '@clickhouse/client';
import { clickhouseSplitSql, ClickHousePrinter, routedSql, type SplitPlacement, type SplitRoute } from '../../criteria/index.js';
import type { DiffMember, MemberRow, SnapshotInput } from '../analytics.js';
import {
  type AcknowledgedRow, adoptSnapshot, audienceSnapshotIds, currentSnapshot, type DeliveryBasis, deliveryBasis, destinationChanges, endDelivery,
  forgetSnapshots, nextSnapshotId, recordAcknowledgedPage, recordDeliveryStart, recordSnapshot, releasedSnapshots, sendsOwnDiff, startedDelivery,
} from '../control/audiences.js';
import type { DeliveryRow, SnapshotResult } from '../types.js';
import { RisingClock } from './clock.js';
import type { ClickHouseContext } from './context.js';
import { type Bound, bounded, consistentSettings, deleteWhere, num, rows, STOPPED, table, writeRows } from './run.js';

type Params = Record<string, unknown>;

/** Ids in one statement's array parameter, at most (the parameter travels in the request's URL). */
const IDS_PER_STATEMENT = 10_000;
/** Rows of a destination's acknowledged changes per insert into ClickHouse. */
const ROWS_PER_INSERT = 100_000;

const chunks = <T>(items: T[], size: number): T[][] => Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

const MEMBER_COLUMNS = 'p.person_id AS person_id, v.visitor_id AS visitor_id, p.external_id AS external_id, p.email AS email';

interface DetailRow {
  profile: unknown;
  person_id: string | null;
  visitor_id: string | null;
  external_id: string | null;
  email: string | null;
}

const toMember = (r: DetailRow): MemberRow => ({
  profile: num(r.profile), person_id: r.person_id, visitor_id: r.visitor_id, external_id: r.external_id, email: r.email,
});

export class ClickHouseSnapshots {
  /** Builds of work lists: increasing across restarts (microseconds of the clock), and within one. */
  private readonly builds = new RisingClock(1000n);

  constructor(readonly ctx: ClickHouseContext) {}

  private get client(): ClickHouseClient {
    return this.ctx.client;
  }

  /**
   * The new snapshot's members and its diff to the current one, under a new snapshot id, checked;
   * then one control transaction records the snapshot and adopts it (deliveries queued, the audience
   * points at it). Stopped by the limit or the signal before that, nothing points at the rows
   * written and they are deleted. Afterwards members and diffs nothing needs any more are deleted.
   */
  async refresh(input: SnapshotInput): Promise<SnapshotResult> {
    const { ws, audienceId: id } = input;
    const { control } = this.ctx;
    const bound = { deadline: performance.now() + input.limitMs, signal: input.signal };
    const interrupted = () => new Error(input.signal?.aborted ? 'interrupted: the service stopped during the refresh' : `interrupted after the ${input.limitMs} ms limit`);
    const previous = await currentSnapshot(control, ws, id);
    const snapshot = await control.transaction(nextSnapshotId);
    let result: SnapshotResult;
    try {
      result = await this.writeSnapshot(input, snapshot, previous, bound, interrupted);
      if (performance.now() >= bound.deadline || input.signal?.aborted) throw interrupted();
      await control.transaction(async (tx) => {
        if (await currentSnapshot(tx, ws, id) !== previous) throw new Error('the audience was refreshed by another refresh meanwhile');
        await recordSnapshot(tx, { ws, audienceId: id, snapshot: result, previous, at: input.at });
        await adoptSnapshot(tx, {
          ws, audienceId: id, snapshot: result, previous, destinationIds: input.destinationIds, at: input.at, nextRefreshAt: input.nextRefreshAt,
        });
      });
    } catch (err) {
      // Best effort: on chDB a stopped statement may still be writing (it cannot be interrupted).
      await this.deleteSnapshotRows(ws, id, [snapshot]).catch(() => undefined);
      throw err;
    }
    // The refresh is done; what this leaves behind, the next refresh deletes.
    await this.release(ws, id).catch(() => undefined);
    return result;
  }

  private async writeSnapshot(input: SnapshotInput, snapshot: number, previous: number | null, bound: Bound, interrupted: () => Error): Promise<SnapshotResult> {
    const { ws, audienceId: id } = input;
    const [members, diffs] = [table(this.ctx, 'audience_members'), table(this.ctx, 'audience_diffs')];
    const profiles = new ClickHousePrinter(this.ctx.database).profiles(input.plan, ws);
    await this.write(bound, `INSERT INTO ${members} (workspace_id, snapshot_id, profile)
      SELECT {ws:String}, {snapshot:UInt64}, profile FROM (${profiles.sql}) AS members`, { ...profiles.params, ws, snapshot }, interrupted);
    // Numbered in page order (change, profile), so deliveries page it by `seq`. Snapshot 0 is none.
    const params = { ws, audience: id, snapshot, previous: previous ?? 0 };
    await this.write(bound, `INSERT INTO ${diffs} (workspace_id, audience_id, snapshot_id, seq, change, profile)
      SELECT {ws:String}, {audience:String}, {snapshot:UInt64}, row_number() OVER (ORDER BY change, profile) - 1, change, profile FROM (
        SELECT profile, if(max(snapshot_id) = {snapshot:UInt64}, 'added', 'removed') AS change
        FROM ${members} WHERE workspace_id = {ws:String} AND snapshot_id IN ({snapshot:UInt64}, {previous:UInt64})
        GROUP BY profile HAVING min(snapshot_id) = max(snapshot_id))`, params, interrupted);
    const [counts] = await this.read<Record<string, unknown>>(bound, `SELECT
        (SELECT count() FROM ${members} WHERE workspace_id = {ws:String} AND snapshot_id = {snapshot:UInt64}) AS members,
        (SELECT count() FROM ${members} WHERE workspace_id = {ws:String} AND snapshot_id = {previous:UInt64}) AS previous_members,
        countIf(change = 'added') AS added, countIf(change = 'removed') AS removed, count() AS rows, max(seq) AS last
      FROM ${diffs} WHERE workspace_id = {ws:String} AND audience_id = {audience:String} AND snapshot_id = {snapshot:UInt64}`, params, interrupted);
    const [n, before, added, removed, diffRows, last] = ['members', 'previous_members', 'added', 'removed', 'rows', 'last'].map((c) => num(counts![c]));
    if (n! - before! !== added! - removed! || (diffRows! > 0 && last !== diffRows! - 1)) {
      throw new Error(`snapshot ${snapshot}: its diff does not match its members (${n} members, ${before} before, ${added} added, ${removed} removed)`);
    }
    return { snapshot_id: snapshot, member_count: n!, added: added!, removed: removed! };
  }

  /**
   * Deletes the members of the audience's snapshots nothing needs any more (control/audiences.ts
   * releasedSnapshots), and the diffs no pending delivery and not the current snapshot needs.
   */
  private async release(ws: string, id: string): Promise<void> {
    const { released, diffsKept } = await releasedSnapshots(this.ctx.control, ws, id);
    for (const ids of chunks(released, IDS_PER_STATEMENT)) {
      await deleteWhere(this.ctx, 'audience_members', 'workspace_id = {ws:String} AND snapshot_id IN {ids:Array(UInt64)}', { ws, ids });
    }
    await deleteWhere(this.ctx, 'audience_diffs', 'workspace_id = {ws:String} AND audience_id = {audience:String} AND snapshot_id NOT IN {kept:Array(UInt64)}',
      { ws, audience: id, kept: diffsKept });
  }

  /** Deletes snapshots' members and diffs. */
  private async deleteSnapshotRows(ws: string, id: string, snapshots: number[]): Promise<void> {
    for (const ids of chunks(snapshots, IDS_PER_STATEMENT)) {
      await deleteWhere(this.ctx, 'audience_members', 'workspace_id = {ws:String} AND snapshot_id IN {ids:Array(UInt64)}', { ws, ids });
      await deleteWhere(this.ctx, 'audience_diffs', 'workspace_id = {ws:String} AND audience_id = {audience:String} AND snapshot_id IN {ids:Array(UInt64)}',
        { ws, audience: id, ids });
    }
  }

  /**
   * Forgets an audience's snapshots, members, diffs and work lists. Runs after the control rows of
   * the audience are deleted and committed (it reads the snapshots' ids from the control store and
   * then forgets them there in a transaction of its own).
   */
  async dropSnapshots(ws: string, id: string): Promise<void> {
    const snapshots = await audienceSnapshotIds(this.ctx.control, ws, id);
    for (const ids of chunks(snapshots, IDS_PER_STATEMENT)) {
      await deleteWhere(this.ctx, 'audience_members', 'workspace_id = {ws:String} AND snapshot_id IN {ids:Array(UInt64)}', { ws, ids });
    }
    for (const name of ['audience_diffs', 'audience_delivery_items', 'audience_delivery_acked']) {
      await deleteWhere(this.ctx, name, 'workspace_id = {ws:String} AND audience_id = {audience:String}', { ws, audience: id });
    }
    await forgetSnapshots(this.ctx.control, ws, id);
  }

  /**
   * Member details of the profiles `m.profile` of rows `keys` (a statement with a `profile`
   * column): the newest version of each person and visitor in the mirrors, read for those profiles
   * only. `{ws:String}` is the workspace; a miss reads as NULL under join_use_nulls = 1.
   */
  private details(keys: string): string {
    return `LEFT JOIN (SELECT person_key, s.1 AS person_id, s.2 AS external_id, s.3 AS email FROM (
        SELECT person_key, argMax(tuple(person_id, external_id, email), version) AS s FROM ${table(this.ctx, 'persons')}
        WHERE workspace_id = {ws:String} AND person_key IN (SELECT profile FROM (${keys})) GROUP BY person_key)) AS p ON p.person_key = m.profile
      LEFT JOIN (SELECT visitor_key, argMax(visitor_id, version) AS visitor_id FROM ${table(this.ctx, 'visitors')}
        WHERE workspace_id = {ws:String} AND visitor_key IN (SELECT -profile FROM (${keys})) GROUP BY visitor_key) AS v ON v.visitor_key = -m.profile`;
  }

  async membersPage(ws: string, snapshotId: number, after: bigint | null, limit: number): Promise<MemberRow[]> {
    // A cursor is an Int64 as text: chDB binds no integer past 2^53.
    const params: Params = after === null ? { ws, snapshot: snapshotId, limit } : { ws, snapshot: snapshotId, limit, after: after.toString() };
    const page = `SELECT profile FROM ${table(this.ctx, 'audience_members')} WHERE workspace_id = {ws:String} AND snapshot_id = {snapshot:UInt64}
      ${after === null ? '' : 'AND profile > {after:Int64}'} ORDER BY profile LIMIT {limit:UInt64}`;
    const found = await rows<DetailRow>(this.ctx, `SELECT m.profile AS profile, ${MEMBER_COLUMNS} FROM (${page}) AS m ${this.details(page)}
      ORDER BY m.profile SETTINGS join_use_nulls = 1`, params);
    return found.map(toMember);
  }

  /** A snapshot's members by profile: public columns only (and each member's split). */
  private exportQuery(ws: string, snapshotId: number, placement: SplitPlacement | null): { sql: string; params: Params } {
    const members = `SELECT profile FROM ${table(this.ctx, 'audience_members')} WHERE workspace_id = {ws:String} AND snapshot_id = {snapshot:UInt64}`;
    const params: Params = { ws, snapshot: snapshotId };
    const bind = (v: string | number) => {
      const name = `s${Object.keys(params).length}`;
      params[name] = v;
      return `{${name}:${typeof v === 'number' ? 'UInt64' : 'String'}}`;
    };
    const split = placement ? `, ${clickhouseSplitSql(placement, 'm.profile', bind)} AS split` : '';
    return { sql: `SELECT ${MEMBER_COLUMNS}${split} FROM (${members}) AS m ${this.details(members)} ORDER BY m.profile SETTINGS join_use_nulls = 1`, params };
  }

  async exportSnapshot(ws: string, snapshotId: number, path: string, format: 'csv' | 'parquet', placement: SplitPlacement | null): Promise<void> {
    await writeRows(this.ctx, this.exportQuery(ws, snapshotId, placement), path, format);
  }

  /**
   * ClickHouse's own ArrowStream output, handed on as it arrives: a record batch per block, strings
   * as Utf8, uncompressed (apache-arrow reads no compressed batches). A server streams it; the
   * embedded chDB answers with the whole result at once.
   */
  async exportArrow(ws: string, snapshotId: number, placement: SplitPlacement | null): Promise<AsyncIterable<Uint8Array>> {
    const { sql, params } = this.exportQuery(ws, snapshotId, placement);
    const result = await this.client.exec({
      query: `${sql}\nFORMAT ArrowStream`, query_params: params,
      clickhouse_settings: { ...consistentSettings(this.ctx), output_format_arrow_string_as_string: 1, output_format_arrow_compression_method: 'none' },
    });
    return result.stream;
  }

  /**
   * Starts a pending delivery, as DuckDB's startDelivery: its work list is its snapshot against
   * what the destination has acknowledged; the snapshot's own diff when the destination had
   * acknowledged exactly the previous snapshot, else a list built for this delivery (a rebuild,
   * after a start that never recorded itself, is a newer build and the one sent). Then one control
   * transaction records the start and supersedes older deliveries that never started.
   */
  async startDelivery(d: DeliveryRow, pageSize: number, at: Date, limitMs: number, route?: SplitRoute | null): Promise<DeliveryRow> {
    const { control } = this.ctx;
    const bound = { deadline: performance.now() + limitMs };
    const interrupted = () => new Error(`interrupted after the ${limitMs} ms limit`);
    const basis = await deliveryBasis(control, d);
    if (!basis) throw new Error(`snapshot ${d.snapshot_id} no longer exists`);
    const list = sendsOwnDiff(basis) ? basis : await this.buildWorkList(d, basis, bound, interrupted);
    const sent = route ? await this.routedCounts({ ...d, sends_diff: sendsOwnDiff(basis) }, route, bound, interrupted) : list;
    const started = startedDelivery(d, basis, pageSize, list, sent);
    if (performance.now() >= bound.deadline) throw interrupted();
    await control.transaction(async (tx) => {
      // Only this destination's delivery run changes what it acknowledged, and it is here.
      const now = await deliveryBasis(tx, d);
      if (now?.base !== basis.base || now.changes !== basis.changes) throw new Error('the destination acknowledged other changes while the delivery started');
      await recordDeliveryStart(tx, started, at);
    });
    return started;
  }

  /** The changes of the delivery's work list (its latest build) whose members `route` sends to the destination. */
  private async routedCounts(d: DeliveryRow, route: SplitRoute, bound: Bound, interrupted: () => Error): Promise<{ added: number; removed: number }> {
    const source = this.listRows(d);
    const params: Params = { ...source.params };
    const bind = (v: string | number) => {
      const name = `r${Object.keys(params).length}`;
      params[name] = v;
      return `{${name}:${typeof v === 'number' ? 'UInt64' : 'String'}}`;
    };
    const [counts] = await this.read<Record<string, unknown>>(bound, `SELECT countIf(change = 'added') AS added, countIf(change = 'removed') AS removed
      FROM (${source.sql}) AS i WHERE ${routedSql(route, clickhouseSplitSql(route.placement, 'i.profile', bind), bind)}`, params, interrupted);
    return { added: num(counts!.added)!, removed: num(counts!.removed)! };
  }

  /** Writes the delivery's work list as a new build; its counts. */
  private async buildWorkList(d: DeliveryRow, basis: DeliveryBasis, bound: Bound, interrupted: () => Error): Promise<{ added: number; removed: number }> {
    const ws = d.workspace_id;
    await this.checkMembersKept(ws, [[d.snapshot_id, basis.members], ...(basis.base === null ? [] : [[basis.base, basis.baseMembers ?? -1] as const])]);
    const build = Number(this.builds.next());
    const key = { ws, audience: d.audience_id, delivery: d.delivery_id, build };
    const [members, items, acked] = ['audience_members', 'audience_delivery_items', 'audience_delivery_acked'].map((name) => table(this.ctx, name));
    if (basis.changes > 0) await this.copyChanges(d, build, basis.changes);
    await this.write(bound, `INSERT INTO ${items} (workspace_id, audience_id, delivery_id, build, seq, change, profile)
      SELECT {ws:String}, {audience:String}, {delivery:UInt64}, {build:UInt64}, row_number() OVER (ORDER BY change, profile) - 1, change, profile FROM (
        SELECT profile, if(max(in_target), 'added', 'removed') AS change FROM (
          SELECT profile, snapshot_id = {target:UInt64} AS in_target, snapshot_id = {base:UInt64} AS in_base, 0 AS added, 0 AS removed
          FROM ${members} WHERE workspace_id = {ws:String} AND snapshot_id IN ({target:UInt64}, {base:UInt64})
          UNION ALL SELECT profile, 0, 0, change = 'added', change = 'removed'
          FROM ${acked} WHERE workspace_id = {ws:String} AND delivery_id = {delivery:UInt64} AND build = {build:UInt64})
        GROUP BY profile
        HAVING max(in_target) != ((max(in_base) AND NOT max(removed)) OR max(added)))`,
    { ...key, target: d.snapshot_id, base: basis.base ?? 0 }, interrupted);
    const [counts] = await this.read<Record<string, unknown>>(bound, `SELECT countIf(change = 'added') AS added, countIf(change = 'removed') AS removed,
        count() AS rows, max(seq) AS last
      FROM ${items} WHERE workspace_id = {ws:String} AND delivery_id = {delivery:UInt64} AND build = {build:UInt64}`, key, interrupted);
    const [added, removed, listed, last] = ['added', 'removed', 'rows', 'last'].map((c) => num(counts![c]));
    if (listed! > 0 && last !== listed! - 1) throw new Error(`delivery ${d.delivery_id}: its work list is not numbered 0 to ${listed! - 1}`);
    return { added: added!, removed: removed! };
  }

  /** Fails unless each snapshot's members are all still stored (they are kept while referred to). */
  private async checkMembersKept(ws: string, expected: (readonly [snapshot: number, members: number])[]): Promise<void> {
    const stored = await rows<{ snapshot_id: unknown; n: unknown }>(this.ctx, `SELECT snapshot_id, count() AS n FROM ${table(this.ctx, 'audience_members')}
      WHERE workspace_id = {ws:String} AND snapshot_id IN {ids:Array(UInt64)} GROUP BY snapshot_id`, { ws, ids: expected.map(([s]) => s) });
    const counts = new Map(stored.map((r) => [num(r.snapshot_id), num(r.n)]));
    for (const [snapshot, members] of expected) {
      if ((counts.get(snapshot) ?? 0) !== members) throw new Error(`the members of snapshot ${snapshot} are no longer stored`);
    }
  }

  /** Copies the destination's acknowledged changes (control store) beside the build, checked complete. */
  private async copyChanges(d: DeliveryRow, build: number, expected: number): Promise<void> {
    const key = { workspace_id: d.workspace_id, audience_id: d.audience_id, delivery_id: d.delivery_id, build };
    let batch: Record<string, unknown>[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      await this.client.insert({ table: table(this.ctx, 'audience_delivery_acked'), values: batch, format: 'JSONEachRow', clickhouse_settings: consistentSettings(this.ctx) });
      batch = [];
    };
    for (const c of await destinationChanges(this.ctx.control, d)) {
      batch.push({ ...key, change: c.change, profile: Number(c.profile) });
      if (batch.length >= ROWS_PER_INSERT) await flush();
    }
    await flush();
    const [copied] = await rows<{ n: unknown }>(this.ctx, `SELECT count() AS n FROM ${table(this.ctx, 'audience_delivery_acked')}
      WHERE workspace_id = {ws:String} AND delivery_id = {delivery:UInt64} AND build = {build:UInt64}`, { ws: d.workspace_id, delivery: d.delivery_id, build });
    if (num(copied!.n) !== expected) throw new Error(`delivery ${d.delivery_id}: ${num(copied!.n)} of the destination's ${expected} changes copied`);
  }

  /** The `change, profile, seq` rows of a started delivery's work list, and their parameters. */
  private listRows(d: DeliveryRow): { sql: string; params: Params } {
    if (d.sends_diff) {
      return {
        sql: `SELECT change, profile, seq FROM ${table(this.ctx, 'audience_diffs')} WHERE workspace_id = {ws:String} AND audience_id = {audience:String}
          AND snapshot_id = {snapshot:UInt64}`,
        params: { ws: d.workspace_id, audience: d.audience_id, snapshot: d.snapshot_id },
      };
    }
    const items = table(this.ctx, 'audience_delivery_items');
    return {
      sql: `SELECT change, profile, seq FROM ${items} WHERE workspace_id = {ws:String} AND delivery_id = {delivery:UInt64}
        AND build = (SELECT max(build) FROM ${items} WHERE workspace_id = {ws:String} AND delivery_id = {delivery:UInt64})`,
      params: { ws: d.workspace_id, delivery: d.delivery_id },
    };
  }

  /** The rows of page `page` of a started delivery's work list (listRows). */
  private pageRows(d: DeliveryRow, page: number): { sql: string; params: Params } {
    const from = page * d.page_size!;
    const list = this.listRows(d);
    return { sql: `${list.sql} AND seq >= {from:UInt64} AND seq < {to:UInt64}`, params: { ...list.params, from, to: from + d.page_size! } };
  }

  async deliveryPage(d: DeliveryRow, page: number): Promise<DiffMember[]> {
    const source = this.pageRows(d, page);
    const found = await rows<DetailRow & { change: DiffMember['change'] }>(this.ctx, `SELECT m.change AS change, m.profile AS profile, ${MEMBER_COLUMNS}
      FROM (${source.sql}) AS m ${this.details(source.sql)} ORDER BY m.change, m.profile SETTINGS join_use_nulls = 1`, source.params);
    return found.map((r) => ({ ...toMember(r), change: r.change }));
  }

  /** Records page `page` as acknowledged: its rows, with whether each profile is in the delivery's base, go to the control store with the progress. */
  async acknowledgePage(d: DeliveryRow, page: number, skipped: number): Promise<void> {
    const source = this.pageRows(d, page);
    const found = await rows<{ change: AcknowledgedRow['change']; profile: unknown; in_base: unknown }>(this.ctx, `SELECT change, profile,
        profile IN (SELECT profile FROM ${table(this.ctx, 'audience_members')} WHERE workspace_id = {ws:String} AND snapshot_id = {base:UInt64}) AS in_base
      FROM (${source.sql})`, { ...source.params, base: d.base_snapshot_id ?? 0 });
    const acknowledged = found.map((r) => ({ change: r.change, profile: num(r.profile), in_base: num(r.in_base) === 1 }));
    await this.ctx.control.transaction((tx) => recordAcknowledgedPage(tx, d, page, acknowledged, skipped));
  }

  /** Ends a delivery (control store), then deletes the work lists built for it. */
  async finishDelivery(d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void> {
    await this.ctx.control.transaction((tx) => endDelivery(tx, d, status, error, at));
    if (d.sends_diff === true) return;
    // A finished delivery's lists are never read again: left behind by a failure here, they go with the audience.
    for (const name of ['audience_delivery_items', 'audience_delivery_acked']) {
      await deleteWhere(this.ctx, name, 'workspace_id = {ws:String} AND delivery_id = {delivery:UInt64}', { ws: d.workspace_id, delivery: d.delivery_id })
        .catch(() => undefined);
    }
  }

  /** Runs a statement that writes, within `bound`; `interrupted()` is thrown past it. */
  private async write(bound: Bound, sql: string, params: Params, interrupted: () => Error): Promise<void> {
    const done = await bounded(this.ctx, bound, (run) => this.client.command({
      query: `${sql}\nSETTINGS ${run.limit}`, query_params: params, query_id: run.query_id, abort_signal: run.abort_signal,
      clickhouse_settings: consistentSettings(this.ctx),
    }));
    if (done === STOPPED) throw interrupted();
  }

  /** The rows of a query, within `bound`; `interrupted()` is thrown past it. */
  private async read<T>(bound: Bound, sql: string, params: Params, interrupted: () => Error): Promise<T[]> {
    const found = await bounded(this.ctx, bound, async (run) => {
      const result = await this.client.query({
        query: `${sql}\nSETTINGS ${run.limit}`, query_params: params, query_id: run.query_id, abort_signal: run.abort_signal,
        format: 'JSONEachRow', clickhouse_settings: consistentSettings(this.ctx),
      });
      return result.json<T>();
    });
    if (found === STOPPED) throw interrupted();
    return found;
  }
}
