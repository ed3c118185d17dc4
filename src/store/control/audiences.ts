// Saved audiences, their membership snapshots and diffs, and what each destination has
// acknowledged. A snapshot is a set of profiles written with INSERT … SELECT from the compiled
// criteria; diffs are EXCEPTs between two sets. Member lists never leave the database except page by page.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { CompiledQuery } from '../../criteria/index.js';
import type { DiffMember, MemberRow } from '../analytics.js';
import type { Params, Row, Store } from '../duckdb/db.js';
import { timestamp } from '../duckdb/time.js';

export type AudienceStatus = 'pending' | 'refreshing' | 'ready' | 'failed';

export interface AudienceRow {
  workspace_id: string;
  audience_id: string;
  name: string;
  /** JSON text of the criteria envelope. */
  criteria: string;
  is_time_windowed: boolean;
  refresh_every: string;
  refresh_every_ms: number;
  /** JSON text of the destinations, secrets included. */
  destinations: string;
  status: AudienceStatus;
  snapshot_id: number | null;
  member_count: number | null;
  last_refreshed_at: Date | null;
  next_refresh_at: Date;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Columns a caller may change; the rest are kept by the refresh. */
export type AudienceChanges = Partial<Pick<AudienceRow,
  'name' | 'criteria' | 'is_time_windowed' | 'refresh_every' | 'refresh_every_ms' | 'destinations' | 'status' | 'next_refresh_at' | 'last_error' | 'updated_at'>>;

const CHANGEABLE: readonly (keyof AudienceChanges)[] = [
  'name', 'criteria', 'is_time_windowed', 'refresh_every', 'refresh_every_ms', 'destinations', 'status', 'next_refresh_at', 'last_error', 'updated_at',
];

const bound = (value: unknown) => (value instanceof Date ? timestamp(value) : value) as Params[number];
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

function toAudience(r: Row): AudienceRow {
  return {
    ...(r as unknown as AudienceRow),
    refresh_every_ms: Number(r.refresh_every_ms),
    snapshot_id: num(r.snapshot_id),
    member_count: num(r.member_count),
    criteria: String(r.criteria),
    destinations: String(r.destinations),
  };
}

export async function insertAudience(store: Store, a: AudienceRow): Promise<void> {
  const columns = Object.keys(a) as (keyof AudienceRow)[];
  await store.transaction((tx) => tx.run(
    `INSERT INTO audiences (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
    columns.map((c) => bound(a[c]))));
}

export async function listAudiences(store: Store, ws: string): Promise<AudienceRow[]> {
  const rows = await store.query('SELECT * FROM audiences WHERE workspace_id = $1 ORDER BY created_at, audience_id', [ws]);
  return rows.map(toAudience);
}

export async function getAudience(store: Store, ws: string, id: string): Promise<AudienceRow | null> {
  const rows = await store.query('SELECT * FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, id]);
  return rows[0] ? toAudience(rows[0]) : null;
}

/** Applies `changes`; false when the audience does not exist. */
export async function updateAudience(store: Store, ws: string, id: string, changes: AudienceChanges): Promise<boolean> {
  const columns = CHANGEABLE.filter((c) => changes[c] !== undefined);
  if (columns.length === 0) return (await getAudience(store, ws, id)) !== null;
  const sets = columns.map((c, i) => `${c} = $${i + 3}`).join(', ');
  return store.transaction(async (tx) => {
    const result = await tx.run(`UPDATE audiences SET ${sets} WHERE workspace_id = $1 AND audience_id = $2`,
      [ws, id, ...columns.map((c) => bound(changes[c]))]);
    return result.rowsChanged > 0;
  });
}

/** Deletes the audience with its snapshots, diffs and delivery log. */
export async function deleteAudience(store: Store, ws: string, id: string): Promise<boolean> {
  return store.transaction(async (tx) => {
    const result = await tx.run('DELETE FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, id]);
    if (result.rowsChanged === 0) return false;
    await dropSnapshots(tx, ws, id);
    for (const table of ['audience_delivery_attempts', 'audience_delivery_items']) {
      await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND delivery_id IN (
        SELECT delivery_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2)`, [ws, id]);
    }
    for (const table of ['audience_deliveries', 'audience_destinations', 'audience_destination_changes']) {
      await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2`, [ws, id]);
    }
    return true;
  });
}

/** Deletes an audience's snapshots with their members and diffs. */
export async function dropSnapshots(tx: DuckDBConnection, ws: string, id: string): Promise<void> {
  await tx.run(`DELETE FROM audience_members WHERE workspace_id = $1 AND snapshot_id IN (
    SELECT snapshot_id FROM audience_snapshots WHERE workspace_id = $1 AND audience_id = $2)`, [ws, id]);
  for (const table of ['audience_snapshots', 'audience_diffs']) {
    await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2`, [ws, id]);
  }
}

export async function dueAudiences(store: Store, now: Date): Promise<{ workspace_id: string; audience_id: string }[]> {
  const rows = await store.query('SELECT workspace_id, audience_id FROM audiences WHERE next_refresh_at <= $1 ORDER BY next_refresh_at', [timestamp(now)]);
  return rows as { workspace_id: string; audience_id: string }[];
}

export interface SnapshotInput {
  ws: string;
  audienceId: string;
  at: Date;
  nextRefreshAt: Date;
  /** `SELECT profile …` of the criteria (criteria/sql.ts printProfiles). */
  profiles: CompiledQuery;
  /** Destinations that receive this snapshot's diff. */
  destinationIds: string[];
  limitMs: number;
  /** Aborted when the service stops: the refresh is interrupted and rolled back. */
  signal?: AbortSignal;
}

export interface SnapshotResult {
  snapshot_id: number;
  member_count: number;
  added: number;
  removed: number;
}

/**
 * One transaction: the new snapshot's members, its diff to the current snapshot, a pending delivery
 * per destination that has something to receive, then the audience points at it. A crash before
 * COMMIT leaves the previous snapshot in place. Members are kept for the last two snapshots and for
 * every snapshot a destination's acknowledged state or a pending delivery refers to; diffs while a
 * pending delivery targets their snapshot.
 */
export async function writeSnapshot(store: Store, input: SnapshotInput): Promise<SnapshotResult> {
  const { ws, audienceId: id } = input;
  return store.transactionWithin(input.limitMs, async (tx) => {
    const current = await one(tx, 'SELECT snapshot_id FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, id]);
    if (!current) throw new Error('the audience was deleted during its refresh');
    const previous = num(current.snapshot_id);
    const snapshot = Number((await one(tx, "SELECT nextval('audience_snapshot_ids') AS id", []))!.id);
    const n = input.profiles.params.length;
    await tx.run(`INSERT INTO audience_members (workspace_id, snapshot_id, profile)
      SELECT $${n + 1}, $${n + 2}, profile FROM (${input.profiles.sql}) AS members`,
      [...input.profiles.params, ws, snapshot]);
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
    for (const destination of input.destinationIds) {
      await queueForDestination(tx, { ws, audienceId: id, destination, snapshot, previous, changed: result.added + result.removed > 0, at: input.at });
    }
    await tx.run(`UPDATE audiences SET snapshot_id = $3, member_count = $4, status = 'ready', last_error = NULL,
        last_refreshed_at = $5, next_refresh_at = $6, updated_at = $5
      WHERE workspace_id = $1 AND audience_id = $2`, [ws, id, snapshot, result.member_count, timestamp(input.at), timestamp(input.nextRefreshAt)]);
    // Destinations taken off the audience, once no delivery of theirs is pending (their runs only
    // write while one is): their acknowledged state no longer holds a snapshot back.
    const listed = JSON.stringify(input.destinationIds);
    for (const table of ['audience_destination_changes', 'audience_destinations']) {
      await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2
        AND NOT list_contains(from_json($3, '["VARCHAR"]'), destination_id)
        AND destination_id NOT IN (SELECT destination_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND status = 'pending')`,
      [ws, id, listed]);
    }
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

/**
 * Whether a destination gets a delivery of the new snapshot: when the snapshot changed, or when the
 * destination has not acknowledged the previous one and no delivery of its is pending (one that
 * failed, a destination never delivered to). A destination that had acknowledged the previous
 * snapshot, with an unchanged snapshot, has acknowledged the new one: its base moves on, so an
 * unchanged refresh sends nothing and keeps no snapshot alive. (Its base is written by delivery
 * runs only while one of its deliveries is pending, so this write never meets a run's.)
 */
async function queueForDestination(tx: DuckDBConnection, q: {
  ws: string; audienceId: string; destination: string; snapshot: number; previous: number | null; changed: boolean; at: Date;
}): Promise<void> {
  const key = [q.ws, q.audienceId, q.destination];
  const state = (await one(tx, `SELECT
      (SELECT max(acked_snapshot_id) FROM audience_destinations WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3) AS acked,
      EXISTS (SELECT 1 FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3) AS changes,
      EXISTS (SELECT 1 FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3 AND status = 'pending') AS pending`, key))!;
  const caughtUp = q.previous !== null && num(state.acked) === q.previous && !state.changes && !state.pending;
  if (caughtUp && !q.changed) {
    await tx.run(`UPDATE audience_destinations SET acked_snapshot_id = $4 WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3`, [...key, q.snapshot]);
  } else if (q.changed || !state.pending) {
    await insertDelivery(tx, q.ws, q.audienceId, q.destination, q.snapshot, q.at);
  }
}

const insertDelivery = (tx: DuckDBConnection, ws: string, audienceId: string, destination: string, snapshot: number, at: Date) =>
  tx.run(`INSERT INTO audience_deliveries (workspace_id, delivery_id, audience_id, destination_id, snapshot_id, status, created_at)
    VALUES ($1, nextval('audience_delivery_ids'), $2, $3, $4, 'pending', $5)`, [ws, audienceId, destination, snapshot, timestamp(at)]);

/**
 * A pending delivery of the audience's current snapshot to each of `destinationIds` (destinations
 * just added): a new destination receives every member without waiting for the next refresh.
 * Nothing when the audience has no snapshot yet (its first refresh queues them).
 */
export async function queueDeliveries(store: Store, ws: string, audienceId: string, destinationIds: string[], at: Date): Promise<void> {
  if (destinationIds.length === 0) return;
  await store.transaction(async (tx) => {
    const row = await one(tx, 'SELECT snapshot_id FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, audienceId]);
    const snapshot = num(row?.snapshot_id);
    if (snapshot === null) return;
    for (const destination of destinationIds) await insertDelivery(tx, ws, audienceId, destination, snapshot, at);
  });
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

/** A snapshot's members as DuckDB result chunks. */
export function streamMembers(store: Store, ws: string, snapshotId: number): AsyncGenerator<Row[]> {
  const { sql, params } = exportQuery(ws, snapshotId);
  return store.streamRows(sql, params);
}

// Deliveries

export interface DeliveryRow {
  workspace_id: string;
  delivery_id: number;
  audience_id: string;
  destination_id: string;
  /** The snapshot the destination is brought to. */
  snapshot_id: number;
  status: 'pending' | 'delivered' | 'failed' | 'canceled';
  next_page: number;
  skipped: number;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
  /** The snapshot the destination had acknowledged when the delivery started (null: none). */
  base_snapshot_id: number | null;
  /** Whether the work list is the snapshot's own diff (else the delivery's items); null until started. */
  sends_diff: boolean | null;
  page_size: number | null;
  /** Pages of the work list; null until the delivery starts. */
  page_count: number | null;
  added_count: number | null;
  removed_count: number | null;
}

const toDelivery = (r: Row): DeliveryRow => ({
  ...(r as unknown as DeliveryRow),
  delivery_id: Number(r.delivery_id), snapshot_id: Number(r.snapshot_id), next_page: Number(r.next_page), skipped: Number(r.skipped),
  base_snapshot_id: num(r.base_snapshot_id), sends_diff: (r.sends_diff as boolean | null) ?? null, page_size: num(r.page_size),
  page_count: num(r.page_count), added_count: num(r.added_count), removed_count: num(r.removed_count),
});

/** Pending deliveries of an audience, oldest first per destination. */
export async function pendingDeliveries(store: Store, ws: string, audienceId: string): Promise<DeliveryRow[]> {
  const rows = await store.query(`SELECT * FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND status = 'pending'
    ORDER BY destination_id, delivery_id`, [ws, audienceId]);
  return rows.map(toDelivery);
}

export async function audiencesWithPendingDeliveries(store: Store): Promise<{ workspace_id: string; audience_id: string }[]> {
  const rows = await store.query(`SELECT DISTINCT a.workspace_id, a.audience_id FROM audience_deliveries d
    JOIN audiences a ON a.workspace_id = d.workspace_id AND a.audience_id = d.audience_id WHERE d.status = 'pending'`);
  return rows as { workspace_id: string; audience_id: string }[];
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

/**
 * Ends a delivery. Delivered: every page is acknowledged, so the destination has exactly its
 * snapshot, which becomes its base. Failed or canceled: what it acknowledged stays recorded and the
 * next delivery carries the rest.
 */
export async function finishDelivery(store: Store, d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void> {
  const key = [d.workspace_id, d.audience_id, d.destination_id];
  await store.transaction(async (tx) => {
    if (status === 'delivered') {
      for (const table of ['audience_destinations', 'audience_destination_changes']) {
        await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3`, key);
      }
      await tx.run(`INSERT INTO audience_destinations SELECT $1, $2, $3, $4
        WHERE EXISTS (SELECT 1 FROM audiences WHERE workspace_id = $1 AND audience_id = $2)`, [...key, d.snapshot_id]);
    }
    await tx.run('DELETE FROM audience_delivery_items WHERE workspace_id = $1 AND delivery_id = $2', [d.workspace_id, d.delivery_id]);
    await tx.run('UPDATE audience_deliveries SET status = $3, last_error = $4, finished_at = $5 WHERE workspace_id = $1 AND delivery_id = $2',
      [d.workspace_id, d.delivery_id, status, error, timestamp(at)]);
  });
}

export interface AttemptRecord {
  delivery_id: number;
  page: number;
  request: string;
  attempt: number;
  ok: boolean;
  http_status: number | null;
  error: string | null;
  attempted_at: Date;
}

export async function recordAttempt(store: Store, ws: string, a: AttemptRecord): Promise<void> {
  await store.transaction((tx) => tx.run('INSERT INTO audience_delivery_attempts VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
    [ws, a.delivery_id, a.page, a.request, a.attempt, a.ok, a.http_status, a.error, timestamp(a.attempted_at)]));
}

export interface DeliveryLog extends DeliveryRow {
  attempts: Omit<AttemptRecord, 'delivery_id'>[];
}

/** The latest deliveries of an audience with their attempts, newest first. */
export async function deliveryLog(store: Store, ws: string, audienceId: string, limit: number): Promise<DeliveryLog[]> {
  const deliveries = (await store.query(`SELECT * FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2
    ORDER BY delivery_id DESC LIMIT $3`, [ws, audienceId, limit])).map(toDelivery);
  if (deliveries.length === 0) return [];
  const attempts = await store.query(`SELECT * FROM audience_delivery_attempts WHERE workspace_id = $1 AND delivery_id IN (
      SELECT delivery_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 ORDER BY delivery_id DESC LIMIT $3)
    ORDER BY rowid`, [ws, audienceId, limit]);
  return deliveries.map((d) => ({
    ...d,
    attempts: attempts.filter((a) => Number(a.delivery_id) === d.delivery_id).map((a) => ({
      page: Number(a.page), request: a.request as string, attempt: Number(a.attempt), ok: a.ok as boolean,
      http_status: num(a.http_status), error: (a.error as string | null) ?? null, attempted_at: a.attempted_at as Date,
    })),
  }));
}
