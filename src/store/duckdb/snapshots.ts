// Audience snapshots on DuckDB: a snapshot is a set of profiles written with INSERT … SELECT from
// the compiled criteria, its diff EXCEPTs between two sets, and deliveries page through diffs or
// work lists of their own. Member lists never leave the database except page by page. A refresh
// and a delivery's steps write their control rows (store/control/audiences.ts) in the same
// transaction.

import type { DuckDBConnection } from '@duckdb/node-api';
import { printProfiles } from '../../criteria/index.js';
import type { DiffMember, MemberRow, SnapshotInput, SnapshotResult } from '../analytics.js';
import { adoptSnapshot, currentSnapshot, type DeliveryRow, endDelivery } from '../control/audiences.js';
import { controlSql } from './control.js';
import type { Params, Row, Store } from './db.js';
import { readAhead } from './tail.js';
import { timestamp } from './time.js';

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/**
 * One transaction: the new snapshot's members, its diff to the current snapshot, then its control
 * side (adoptSnapshot: deliveries queued, the audience points at it). A crash before COMMIT leaves
 * the previous snapshot in place. Members are kept for the last two snapshots and for
 * every snapshot a destination's acknowledged state or a pending delivery refers to; diffs while a
 * pending delivery targets their snapshot.
 */
export async function writeSnapshot(store: Store, input: SnapshotInput): Promise<SnapshotResult> {
  const { ws, audienceId: id } = input;
  const profiles = printProfiles(input.plan, ws);
  return store.transactionWithin(input.limitMs, async (tx) => {
    const control = controlSql(tx);
    const previous = await currentSnapshot(control, ws, id);
    const snapshot = Number((await one(tx, "SELECT nextval('audience_snapshot_ids') AS id", []))!.id);
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
    await tx.run(`INSERT INTO audience_snapshots VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [ws, id, snapshot, previous, timestamp(input.at), result.member_count, result.added, result.removed]);
    await adoptSnapshot(control, {
      ws, audienceId: id, snapshot: result, previous, destinationIds: input.destinationIds, at: input.at, nextRefreshAt: input.nextRefreshAt,
    });
    await tx.run(`DELETE FROM audience_members WHERE workspace_id = $1 AND snapshot_id IN (
      SELECT snapshot_id FROM audience_snapshots WHERE workspace_id = $1 AND audience_id = $2 AND snapshot_id NOT IN ($3, $4)
        AND snapshot_id NOT IN (SELECT acked_snapshot_id FROM audience_destinations WHERE workspace_id = $1 AND audience_id = $2)
        AND snapshot_id NOT IN (SELECT snapshot_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND status = 'pending'))`,
    [ws, id, snapshot, previous ?? -1]);
    await tx.run(`DELETE FROM audience_diffs WHERE workspace_id = $1 AND audience_id = $2 AND snapshot_id <> $3
      AND snapshot_id NOT IN (SELECT snapshot_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND status = 'pending')`,
    [ws, id, snapshot]);
    return result;
  }, input.signal);
}

/** Deletes an audience's snapshots with their members and diffs. */
export async function dropSnapshots(tx: DuckDBConnection, ws: string, id: string): Promise<void> {
  await tx.run(`DELETE FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id IN (
    SELECT delivery_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2)`, [ws, id]);
  await tx.run(`DELETE FROM audience_members WHERE workspace_id = $1 AND snapshot_id IN (
    SELECT snapshot_id FROM audience_snapshots WHERE workspace_id = $1 AND audience_id = $2)`, [ws, id]);
  for (const table of ['audience_snapshots', 'audience_diffs']) {
    await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2`, [ws, id]);
  }
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

/** The columns of exportQuery. */
const EXPORT_COLUMNS = ['person_id', 'visitor_id', 'external_id', 'email'];

/** The export query of a snapshot: public columns only, by profile. */
function exportQuery(ws: string, snapshotId: number): { sql: string; params: Params } {
  return {
    sql: `SELECT p.person_id, v.visitor_id, p.external_id, p.email FROM audience_members m ${DETAILS}
      WHERE m.workspace_id = $1 AND m.snapshot_id = $2 ORDER BY m.profile`,
    params: [ws, snapshotId],
  };
}

/** Writes a snapshot's members to `path` (a temporary file the service chose) with DuckDB's COPY. */
export async function copyMembers(store: Store, ws: string, snapshotId: number, path: string, format: 'csv' | 'parquet'): Promise<void> {
  const { sql, params } = exportQuery(ws, snapshotId);
  await store.copyTo(sql, params, path, format);
}

/**
 * A snapshot's members as an Arrow IPC stream: COPY's CSV read into record batches while COPY
 * writes it (store/duckdb/arrow.ts says why).
 */
export async function arrowMembers(store: Store, ws: string, snapshotId: number): Promise<AsyncIterable<Uint8Array>> {
  // apache-arrow loaded on first use: every start of the command line paid for it.
  const { ARROW_CSV_OPTIONS, arrowFromCsv } = await import('./arrow.js');
  const { sql, params } = exportQuery(ws, snapshotId);
  return readAhead(arrowFromCsv(await store.copyStream(sql, params, ARROW_CSV_OPTIONS), EXPORT_COLUMNS));
}

/**
 * What the destination has acknowledged: the members of its base snapshot, less the profiles it
 * acknowledged as removed since, plus those it acknowledged as added. `$1` workspace, `$2` audience,
 * `$3` destination, `$4` base snapshot (-1: none).
 */
const ACKED = `(SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $4
    EXCEPT SELECT profile FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3 AND change = 'removed')
  UNION SELECT profile FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3 AND change = 'added'`;

/** Fails unless the snapshot's members are all still stored (they are kept while referred to). */
async function checkMembersKept(tx: DuckDBConnection, ws: string, snapshot: number): Promise<void> {
  const row = await one(tx, `SELECT s.member_count, (SELECT count(*) FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $2) AS kept
    FROM audience_snapshots s WHERE s.workspace_id = $1 AND s.snapshot_id = $2`, [ws, snapshot]);
  if (!row || Number(row.kept) !== Number(row.member_count)) throw new Error(`the members of snapshot ${snapshot} are no longer stored`);
}

/**
 * Starts a pending delivery: its work list is its snapshot against what the destination has
 * acknowledged (added: members it lacks; removed: profiles it has that are not members). When the
 * destination had acknowledged exactly the previous snapshot (the usual case) that is the snapshot's
 * own diff, sent as it is stored; otherwise the list is written once for this delivery, so a resumed
 * delivery sends the same pages. Pending deliveries of the destination that never started, of this
 * snapshot or older ones, are superseded: this one carries their changes. On a connection of its
 * own (a large work list does not hold up ingest), within `limitMs`.
 */
export async function startDelivery(store: Store, d: DeliveryRow, pageSize: number, at: Date, limitMs: number): Promise<DeliveryRow> {
  const ws = d.workspace_id;
  return store.transactionWithin(limitMs, async (tx) => {
    const state = (await one(tx, `SELECT
        (SELECT max(acked_snapshot_id) FROM audience_destinations WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3) AS base,
        EXISTS (SELECT 1 FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3) AS changes,
        s.previous_snapshot_id AS previous, s.added_count, s.removed_count
      FROM audience_snapshots s WHERE s.workspace_id = $1 AND s.snapshot_id = $4`,
    [ws, d.audience_id, d.destination_id, d.snapshot_id]));
    if (!state) throw new Error(`snapshot ${d.snapshot_id} no longer exists`);
    const base = num(state.base);
    const sendsDiff = !state.changes && base === num(state.previous);
    let added = Number(state.added_count);
    let removed = Number(state.removed_count);
    if (!sendsDiff) {
      await checkMembersKept(tx, ws, d.snapshot_id);
      if (base !== null) await checkMembersKept(tx, ws, base);
      const target = 'SELECT profile FROM audience_members WHERE workspace_id = $1 AND snapshot_id = $6';
      await tx.run(`INSERT INTO audience_delivery_items (workspace_id, delivery_id, seq, change, profile)
        SELECT $1, $5, row_number() OVER (ORDER BY change, profile) - 1, change, profile FROM (
          SELECT 'added' AS change, profile FROM (${target} EXCEPT (${ACKED}))
          UNION ALL SELECT 'removed' AS change, profile FROM ((${ACKED}) EXCEPT ${target}))`,
      [ws, d.audience_id, d.destination_id, base ?? -1, d.delivery_id, d.snapshot_id]);
      const counts = (await one(tx, `SELECT count(*) FILTER (WHERE change = 'added') AS added, count(*) FILTER (WHERE change = 'removed') AS removed
        FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id = $2`, [ws, d.delivery_id]))!;
      added = Number(counts.added);
      removed = Number(counts.removed);
    }
    const started: DeliveryRow = {
      ...d, base_snapshot_id: base, sends_diff: sendsDiff, page_size: pageSize, page_count: Math.ceil((added + removed) / pageSize),
      next_page: 0, skipped: 0, added_count: added, removed_count: removed,
    };
    await tx.run(`UPDATE audience_deliveries SET base_snapshot_id = $3, sends_diff = $4, page_size = $5, page_count = $6,
        added_count = $7, removed_count = $8, next_page = 0, skipped = 0
      WHERE workspace_id = $1 AND delivery_id = $2`,
    [ws, d.delivery_id, base, sendsDiff, pageSize, started.page_count, added, removed]);
    await tx.run(`UPDATE audience_deliveries SET status = 'canceled', last_error = $5, finished_at = $6
      WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3 AND status = 'pending' AND page_count IS NULL
        AND delivery_id <> $4 AND snapshot_id <= $7`,
    [ws, d.audience_id, d.destination_id, d.delivery_id, `superseded by delivery ${d.delivery_id}`, timestamp(at), d.snapshot_id]);
    return started;
  });
}

/**
 * The `change, profile` rows of page `page` of a started delivery's work list. `$1` is the
 * workspace; the other placeholders start at `$first`.
 */
function pageRows(d: DeliveryRow, page: number, first: number): { sql: string; params: Params } {
  const from = page * d.page_size!;
  const [a, b, c, e] = [first, first + 1, first + 2, first + 3].map((i) => `$${i}`);
  return d.sends_diff
    ? {
      sql: `SELECT change, profile FROM audience_diffs WHERE workspace_id = $1 AND audience_id = ${a} AND snapshot_id = ${b} AND seq >= ${c} AND seq < ${e}`,
      params: [d.audience_id, d.snapshot_id, from, from + d.page_size!],
    }
    : {
      sql: `SELECT change, profile FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id = ${a} AND seq >= ${b} AND seq < ${c}`,
      params: [d.delivery_id, from, from + d.page_size!],
    };
}

/** Page `page` of a started delivery, added first, by profile, with the members' details. */
export async function deliveryPage(store: Store, d: DeliveryRow, page: number): Promise<DiffMember[]> {
  const rows = pageRows(d, page, 2);
  const members = await store.query(`SELECT m.change, ${MEMBER_COLUMNS} FROM (${rows.sql}) m ${DETAILS} ORDER BY m.change, m.profile`,
    [d.workspace_id, ...rows.params]);
  return members.map((r) => ({ ...toMember(r), change: r.change as DiffMember['change'] }));
}

/**
 * Records page `page` as acknowledged: the destination now has each added profile and lacks each
 * removed one, kept as changes against its base where they differ from it. One transaction with
 * the delivery's progress, so a page is never half recorded.
 */
export async function acknowledgePage(store: Store, d: DeliveryRow, page: number, skipped: number): Promise<void> {
  const rows = pageRows(d, page, 4);
  const params = [d.workspace_id, d.audience_id, d.destination_id, ...rows.params];
  await store.transaction(async (tx) => {
    await tx.run(`DELETE FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3
      AND profile IN (SELECT profile FROM (${rows.sql}))`, params);
    await tx.run(`INSERT INTO audience_destination_changes (workspace_id, audience_id, destination_id, change, profile)
      SELECT $1, $2, $3, i.change, i.profile FROM (${rows.sql}) i WHERE (i.change = 'added') <> EXISTS (
        SELECT 1 FROM audience_members m WHERE m.workspace_id = $1 AND m.snapshot_id = $${params.length + 1} AND m.profile = i.profile)`,
    [...params, d.base_snapshot_id ?? -1]);
    await tx.run('UPDATE audience_deliveries SET next_page = $3, skipped = $4 WHERE workspace_id = $1 AND delivery_id = $2',
      [d.workspace_id, d.delivery_id, page + 1, skipped]);
  });
}

/** Ends a delivery (control/audiences.ts endDelivery), in a transaction of its own. */
export async function finishDelivery(store: Store, d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void> {
  await store.transaction(async (tx) => {
    await endDelivery(controlSql(tx), d, status, error, at);
    await tx.run('DELETE FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id = $2', [d.workspace_id, d.delivery_id]);
  });
}
