// Audience snapshots on DuckDB: a snapshot is a set of profiles written with INSERT … SELECT from
// the compiled criteria, its diff EXCEPTs between two sets, and deliveries page through diffs or
// work lists of their own. Member lists never leave the database except page by page. A refresh
// and a delivery's steps write their control rows (store/control/audiences.ts, on the same
// connection) in the same transaction.

import type { DuckDBConnection } from '@duckdb/node-api';
import { duckdbSplitSql, printProfiles, routedSql, type SplitPlacement, type SplitRoute } from '../../criteria/index.js';
import type { DiffMember, MemberRow, SnapshotInput } from '../analytics.js';
import {
  type AcknowledgedRow, adoptSnapshot, currentSnapshot, type DeliveryBasis, deliveryBasis, endDelivery, forgetSnapshots, nextSnapshotId,
  recordAcknowledgedPage, recordDeliveryStart, recordSnapshot, releasedSnapshots, sendsOwnDiff, startedDelivery,
} from '../control/audiences.js';
import type { ControlSql } from '../control/store.js';
import type { DeliveryRow, SnapshotResult } from '../types.js';
import { column, keys } from './columns.js';
import { controlSql } from './control.js';
import type { Params, Row, Store } from './db.js';
import { readAhead } from './tail.js';

/**
 * One transaction: the new snapshot's members, its diff to the current snapshot, then its control
 * side (recorded and adopted: deliveries queued, the audience points at it), then members and diffs
 * nothing needs any more are deleted (releasedSnapshots). A crash before COMMIT leaves the previous
 * snapshot in place.
 */
export async function writeSnapshot(store: Store, input: SnapshotInput): Promise<SnapshotResult> {
  const { ws, audienceId: id } = input;
  const profiles = printProfiles(input.plan, ws);
  return store.transactionWithin(input.limitMs, async (tx) => {
    const control = controlSql(tx);
    const previous = await currentSnapshot(control, ws, id);
    const snapshot = await nextSnapshotId(control);
    const n = profiles.params.length;
    await tx.run(`INSERT INTO audience_members (workspace_id, snapshot_id, profile)
      SELECT $${n + 1}, $${n + 2}, profile FROM (${profiles.sql}) AS members`,
      [...profiles.params, ws, snapshot]);
    // Numbered in page order (change, profile), so deliveries page it by `seq`.
    await tx.run(`INSERT INTO audience_diffs (workspace_id, audience_id, snapshot_id, change, profile, seq)
      SELECT $1, $2, $3, change, profile, row_number() OVER (ORDER BY change, profile) - 1 FROM (
        SELECT 'added' AS change, profile FROM (
          SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $3
          EXCEPT SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $4)
        UNION ALL SELECT 'removed' AS change, profile FROM (
          SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $4
          EXCEPT SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $3))`, [ws, id, snapshot, previous ?? -1]);
    const counts = (await one(tx, `SELECT
        (SELECT count(*) FROM audience_members WHERE workspace_id = $3 AND snapshot_id = $1) AS members,
        count(*) FILTER (WHERE change = 'added') AS added, count(*) FILTER (WHERE change = 'removed') AS removed
      FROM audience_diffs WHERE workspace_id = $3 AND audience_id = $2 AND snapshot_id = $1`, [snapshot, id, ws]))!;
    const result = { snapshot_id: snapshot, member_count: Number(counts.members), added: Number(counts.added), removed: Number(counts.removed) };
    await recordSnapshot(control, { ws, audienceId: id, snapshot: result, previous, at: input.at });
    await adoptSnapshot(control, {
      ws, audienceId: id, snapshot: result, previous, destinationIds: input.destinationIds, at: input.at, nextRefreshAt: input.nextRefreshAt,
    });
    await release(tx, control, ws, id);
    return result;
  }, input.signal);
}

/** Deletes the members and diffs of the audience's snapshots that nothing needs any more (releasedSnapshots). */
async function release(tx: DuckDBConnection, control: ControlSql, ws: string, id: string): Promise<void> {
  const { released, diffsKept } = await releasedSnapshots(control, ws, id);
  if (released.length > 0) {
    await tx.run(`DELETE FROM audience_members WHERE workspace_id = $1 AND snapshot_id IN (SELECT unnest(${keys('$2')}))`, [ws, column(released)]);
  }
  await tx.run(`DELETE FROM audience_diffs WHERE workspace_id = $1 AND audience_id = $2 AND snapshot_id NOT IN (SELECT unnest(${keys('$3')}))`,
    [ws, id, column(diffsKept)]);
}

/** Deletes an audience's snapshots: their work lists, members and diffs, then their control rows. */
export async function dropSnapshots(tx: DuckDBConnection, ws: string, id: string): Promise<void> {
  await tx.run(`DELETE FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id IN (
    SELECT delivery_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2)`, [ws, id]);
  await tx.run(`DELETE FROM audience_members WHERE workspace_id = $1 AND snapshot_id IN (
    SELECT snapshot_id FROM audience_snapshots WHERE workspace_id = $1 AND audience_id = $2)`, [ws, id]);
  await tx.run('DELETE FROM audience_diffs WHERE workspace_id = $1 AND audience_id = $2', [ws, id]);
  await forgetSnapshots(controlSql(tx), ws, id);
}

async function one(tx: DuckDBConnection, sql: string, params: Params): Promise<Row | undefined> {
  return (await tx.runAndReadAll(sql, params)).getRowObjectsJS()[0] as Row | undefined;
}

/** Member details of profiles; `$1` is the workspace. */
const DETAILS = `LEFT JOIN persons p ON p.workspace_id = $1 AND p.person_key = m.profile
  LEFT JOIN visitors v ON v.workspace_id = $1 AND v.visitor_key = -m.profile`;
const MEMBER_COLUMNS = 'm.profile, p.person_id, v.visitor_id, p.external_id, p.email';

function toMember(r: Row): MemberRow {
  return {
    profile: Number(r.profile),
    person_id: (r.person_id as string | null) ?? null,
    visitor_id: (r.visitor_id as string | null) ?? null,
    external_id: (r.external_id as string | null) ?? null,
    email: (r.email as string | null) ?? null,
  };
}

/** A page of a snapshot's members after profile `after`, by profile. */
export async function membersPage(store: Store, ws: string, snapshotId: number, after: bigint | null, limit: number): Promise<MemberRow[]> {
  const rows = await store.query(`SELECT ${MEMBER_COLUMNS} FROM audience_members m ${DETAILS}
    WHERE m.workspace_id = $1 AND m.snapshot_id = $2 AND m.profile > $3 ORDER BY m.profile LIMIT $4`,
  [ws, snapshotId, after ?? -(2n ** 63n) + 1n, limit]);
  return rows.map(toMember);
}

/** The columns of exportQuery; `split` with the audience's splits. */
const EXPORT_COLUMNS = ['person_id', 'visitor_id', 'external_id', 'email'];

/** The export query of a snapshot: public columns only (and each member's split), by profile. */
function exportQuery(ws: string, snapshotId: number, placement: SplitPlacement | null): { sql: string; params: Params } {
  const params: Params = [ws, snapshotId];
  const bind = (v: string | number) => `$${params.push(v)}`;
  const split = placement ? `, ${duckdbSplitSql(placement, 'm.profile', bind)} AS split` : '';
  return {
    sql: `SELECT p.person_id, v.visitor_id, p.external_id, p.email${split} FROM audience_members m ${DETAILS}
      WHERE m.workspace_id = $1 AND m.snapshot_id = $2 ORDER BY m.profile`,
    params,
  };
}

/** Writes a snapshot's members to `path` (a temporary file the service chose) with DuckDB's COPY. */
export async function copyMembers(store: Store, ws: string, snapshotId: number, path: string, format: 'csv' | 'parquet', placement: SplitPlacement | null): Promise<void> {
  const { sql, params } = exportQuery(ws, snapshotId, placement);
  await store.copyTo(sql, params, path, format);
}

/**
 * A snapshot's members as an Arrow IPC stream: COPY's CSV read into record batches while COPY
 * writes it (store/duckdb/arrow.ts says why).
 */
export async function arrowMembers(store: Store, ws: string, snapshotId: number, placement: SplitPlacement | null): Promise<AsyncIterable<Uint8Array>> {
  // apache-arrow loaded on first use: every start of the command line paid for it.
  const { ARROW_CSV_OPTIONS, arrowFromCsv } = await import('./arrow.js');
  const { sql, params } = exportQuery(ws, snapshotId, placement);
  return readAhead(arrowFromCsv(await store.copyStream(sql, params, ARROW_CSV_OPTIONS), placement ? [...EXPORT_COLUMNS, 'split'] : EXPORT_COLUMNS));
}

/**
 * What the destination has acknowledged: the members of its base snapshot, less the profiles it
 * acknowledged as removed since, plus those it acknowledged as added. `$1` workspace, `$2` audience,
 * `$3` destination, `$4` base snapshot (-1: none).
 */
const ACKED = `(SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $4
    EXCEPT SELECT profile FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3 AND change = 'removed')
  UNION SELECT profile FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3 AND change = 'added'`;

/** Fails unless each snapshot's members are all still stored (they are kept while referred to). */
async function checkMembersKept(tx: DuckDBConnection, ws: string, expected: (readonly [snapshot: number, members: number])[]): Promise<void> {
  for (const [snapshot, members] of expected) {
    const row = await one(tx, 'SELECT count(*) AS n FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $2', [ws, snapshot]);
    if (Number(row!.n) !== members) throw new Error(`the members of snapshot ${snapshot} are no longer stored`);
  }
}

/**
 * Starts a pending delivery: its work list is its snapshot against what the destination has
 * acknowledged (added: members it lacks; removed: profiles it has that are not members). When the
 * destination had acknowledged exactly the previous snapshot (the usual case) that is the snapshot's
 * own diff, sent as it is stored; otherwise the list is written once for this delivery, so a resumed
 * delivery sends the same pages. The start is recorded in the same transaction (recordDeliveryStart:
 * older deliveries that never started are superseded). On a connection of its own (a large work
 * list does not hold up ingest), within `limitMs`.
 */
export async function startDelivery(store: Store, d: DeliveryRow, pageSize: number, at: Date, limitMs: number, route?: SplitRoute | null): Promise<DeliveryRow> {
  return store.transactionWithin(limitMs, async (tx) => {
    const control = controlSql(tx);
    const basis = await deliveryBasis(control, d);
    if (!basis) throw new Error(`snapshot ${d.snapshot_id} no longer exists`);
    const list = sendsOwnDiff(basis) ? basis : await writeWorkList(tx, d, basis);
    const started = startedDelivery(d, basis, pageSize, list, route ? await routedCounts(tx, { ...d, sends_diff: sendsOwnDiff(basis) }, route) : list);
    await recordDeliveryStart(control, started, at);
    return started;
  });
}

/** The changes of the delivery's work list whose members `route` sends to the destination. */
async function routedCounts(tx: DuckDBConnection, d: DeliveryRow, route: SplitRoute): Promise<{ added: number; removed: number }> {
  const rows = listRows(d);
  const params: Params = [d.workspace_id, ...rows.params];
  const bind = (v: string | number) => `$${params.push(v)}`;
  const counts = (await one(tx, `SELECT count(*) FILTER (WHERE change = 'added') AS added, count(*) FILTER (WHERE change = 'removed') AS removed
    FROM (${rows.sql}) i WHERE ${routedSql(route, duckdbSplitSql(route.placement, 'i.profile', bind), bind)}`, params))!;
  return { added: Number(counts.added), removed: Number(counts.removed) };
}

/** Writes the delivery's work list; its counts. */
async function writeWorkList(tx: DuckDBConnection, d: DeliveryRow, basis: DeliveryBasis): Promise<{ added: number; removed: number }> {
  const ws = d.workspace_id;
  await checkMembersKept(tx, ws, [[d.snapshot_id, basis.members], ...(basis.base === null ? [] : [[basis.base, basis.baseMembers ?? -1] as const])]);
  const target = 'SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $6';
  await tx.run(`INSERT INTO audience_delivery_items (workspace_id, delivery_id, seq, change, profile)
    SELECT $1, $5, row_number() OVER (ORDER BY change, profile) - 1, change, profile FROM (
      SELECT 'added' AS change, profile FROM (${target} EXCEPT (${ACKED}))
      UNION ALL SELECT 'removed' AS change, profile FROM ((${ACKED}) EXCEPT ${target}))`,
  [ws, d.audience_id, d.destination_id, basis.base ?? -1, d.delivery_id, d.snapshot_id]);
  const counts = (await one(tx, `SELECT count(*) FILTER (WHERE change = 'added') AS added, count(*) FILTER (WHERE change = 'removed') AS removed
    FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id = $2`, [ws, d.delivery_id]))!;
  return { added: Number(counts.added), removed: Number(counts.removed) };
}

/**
 * The `change, profile, seq` rows of a started delivery's work list. `$1` is the workspace; the
 * other placeholders start at `$2`.
 */
function listRows(d: DeliveryRow): { sql: string; params: Params } {
  return d.sends_diff
    ? { sql: 'SELECT change, profile, seq FROM audience_diffs WHERE workspace_id = $1 AND audience_id = $2 AND snapshot_id = $3', params: [d.audience_id, d.snapshot_id] }
    : { sql: 'SELECT change, profile, seq FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id = $2', params: [d.delivery_id] };
}

/** The rows of page `page` of a started delivery's work list (listRows). */
function pageRows(d: DeliveryRow, page: number): { sql: string; params: Params } {
  const from = page * d.page_size!;
  const list = listRows(d);
  const n = list.params.length;
  return { sql: `${list.sql} AND seq >= $${n + 2} AND seq < $${n + 3}`, params: [...list.params, from, from + d.page_size!] };
}

/** Page `page` of a started delivery, added first, by profile, with the members' details. */
export async function deliveryPage(store: Store, d: DeliveryRow, page: number): Promise<DiffMember[]> {
  const rows = pageRows(d, page);
  const members = await store.query(`SELECT m.change, ${MEMBER_COLUMNS} FROM (${rows.sql}) m ${DETAILS} ORDER BY m.change, m.profile`,
    [d.workspace_id, ...rows.params]);
  return members.map((r) => ({ ...toMember(r), change: r.change as DiffMember['change'] }));
}

/**
 * Records page `page` as acknowledged (recordAcknowledgedPage): its rows, with whether each profile
 * is in the delivery's base, in one transaction with the delivery's progress.
 */
export async function acknowledgePage(store: Store, d: DeliveryRow, page: number, skipped: number): Promise<void> {
  const rows = pageRows(d, page);
  await store.transaction(async (tx) => {
    const found = (await tx.runAndReadAll(`SELECT i.change, i.profile, EXISTS (SELECT 1 FROM audience_members m
        WHERE m.workspace_id = $1 AND m.snapshot_id = $${rows.params.length + 2} AND m.profile = i.profile) AS in_base
      FROM (${rows.sql}) i`, [d.workspace_id, ...rows.params, d.base_snapshot_id ?? -1])).getRowObjectsJS();
    const acknowledged: AcknowledgedRow[] = found.map((r) => ({ change: r.change as AcknowledgedRow['change'], profile: Number(r.profile), in_base: r.in_base === true }));
    await recordAcknowledgedPage(controlSql(tx), d, page, acknowledged, skipped);
  });
}

/** Ends a delivery (control/audiences.ts endDelivery), in a transaction of its own. */
export async function finishDelivery(store: Store, d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void> {
  await store.transaction(async (tx) => {
    await endDelivery(controlSql(tx), d, status, error, at);
    await tx.run('DELETE FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id = $2', [d.workspace_id, d.delivery_id]);
  });
}
