// Saved audiences and their deliveries: the definitions, which snapshot each points at, the
// deliveries queued for destinations with every attempt, and what each destination has
// acknowledged. The snapshots themselves (members, diffs) are analytical: store/analytics.ts.

import type { DeliveryRow, SnapshotResult } from '../types.js';
import { columnOf, type ControlRow as Row, type ControlSql, type ControlStore, type ControlValue } from './store.js';

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
  /** JSON text of the splits (audiences/splits.ts), `[]` without. */
  splits: string;
  /** Places the members in the splits; the audience's own, from its creation. */
  split_salt: string;
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
  'name' | 'criteria' | 'is_time_windowed' | 'refresh_every' | 'refresh_every_ms' | 'destinations' | 'splits' | 'status' | 'next_refresh_at' | 'last_error' | 'updated_at'>>;

const CHANGEABLE: readonly (keyof AudienceChanges)[] = [
  'name', 'criteria', 'is_time_windowed', 'refresh_every', 'refresh_every_ms', 'destinations', 'splits', 'status', 'next_refresh_at', 'last_error', 'updated_at',
];

const bound = (value: unknown) => value as ControlValue;
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

function toAudience(r: Row): AudienceRow {
  return {
    ...(r as unknown as AudienceRow),
    refresh_every_ms: Number(r.refresh_every_ms),
    snapshot_id: num(r.snapshot_id),
    member_count: num(r.member_count),
    criteria: String(r.criteria),
    destinations: String(r.destinations),
    splits: r.splits === null || r.splits === undefined ? '[]' : String(r.splits),
    split_salt: String(r.split_salt),
  };
}

export async function insertAudience(store: ControlStore, a: AudienceRow): Promise<void> {
  const columns = Object.keys(a) as (keyof AudienceRow)[];
  await store.transaction((tx) => tx.run(
    `INSERT INTO audiences (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
    columns.map((c) => bound(a[c]))));
}

export async function listAudiences(store: ControlStore, ws: string): Promise<AudienceRow[]> {
  const rows = await store.all('SELECT * FROM audiences WHERE workspace_id = $1 ORDER BY created_at, audience_id', [ws]);
  return rows.map(toAudience);
}

export async function getAudience(store: ControlSql, ws: string, id: string): Promise<AudienceRow | null> {
  const rows = await store.all('SELECT * FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, id]);
  return rows[0] ? toAudience(rows[0]) : null;
}

/** Applies `changes`; false when the audience does not exist. */
export async function updateAudience(store: ControlStore, ws: string, id: string, changes: AudienceChanges): Promise<boolean> {
  const columns = CHANGEABLE.filter((c) => changes[c] !== undefined);
  if (columns.length === 0) return (await getAudience(store, ws, id)) !== null;
  const sets = columns.map((c, i) => `${c} = $${i + 3}`).join(', ');
  return store.transaction(async (tx) => {
    const changed = await tx.run(`UPDATE audiences SET ${sets} WHERE workspace_id = $1 AND audience_id = $2`,
      [ws, id, ...columns.map((c) => bound(changes[c]))]);
    return changed > 0;
  });
}

/**
 * Deletes the audience with its deliveries, their attempts and what its destinations acknowledged;
 * false when there is none. Its snapshots go through the analytical store (dropSnapshots).
 */
export async function deleteAudience(tx: ControlSql, ws: string, id: string): Promise<boolean> {
  if ((await tx.run('DELETE FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, id])) === 0) return false;
  await tx.run(`DELETE FROM audience_delivery_attempts WHERE workspace_id = $1 AND delivery_id IN (
    SELECT delivery_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2)`, [ws, id]);
  for (const table of ['audience_deliveries', 'audience_destinations', 'audience_destination_changes', 'audience_consent_withheld']) {
    await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2`, [ws, id]);
  }
  return true;
}

export async function dueAudiences(store: ControlStore, now: Date): Promise<{ workspace_id: string; audience_id: string }[]> {
  const rows = await store.all('SELECT workspace_id, audience_id FROM audiences WHERE next_refresh_at <= $1 ORDER BY next_refresh_at', [now]);
  return rows as { workspace_id: string; audience_id: string }[];
}

/** The lease a refresh of `audienceId` is held under: its row names the holder (store/control/leases.ts). */
export const refreshLeaseName = (audienceId: string): string => `refresh:${audienceId}`;

/**
 * Audiences left `refreshing` by a holder that is gone (a process killed mid-refresh: its lease
 * expired, or was cleared at start): marked failed and due at `now`, so the next tick refreshes
 * them at once, a manual refresh of an audience not yet due included. The number reset.
 */
export async function resetInterruptedRefreshes(store: ControlStore, now: Date): Promise<number> {
  return store.run(`UPDATE audiences SET status = 'failed', last_error = $1, next_refresh_at = $2
    WHERE status = 'refreshing'
      AND NOT EXISTS (SELECT 1 FROM leases WHERE leases.name = 'refresh:' || audiences.audience_id AND leases.expires_at > $2)`,
  ['the refresh was interrupted (the process running it stopped); it runs again', now]);
}

/**
 * At the start of the only process of a database file (the DuckDB control store is one process's),
 * every refresh lease is a dead process's: they go, so nothing waits out their time.
 */
export async function clearRefreshLeases(store: ControlStore): Promise<void> {
  if (store.shared) return;
  await store.run("DELETE FROM leases WHERE name LIKE 'refresh:%'");
}

/** Whether the audience is still due at `now` (another node may have refreshed it since the list was read). */
export async function isDue(store: ControlSql, ws: string, id: string, now: Date): Promise<boolean> {
  return (await store.all('SELECT 1 FROM audiences WHERE workspace_id = $1 AND audience_id = $2 AND next_refresh_at <= $3', [ws, id, now])).length === 1;
}

/** The audience's current snapshot (null: none yet); fails when the audience was deleted meanwhile. */
export async function currentSnapshot(tx: ControlSql, ws: string, id: string): Promise<number | null> {
  const current = await one(tx, 'SELECT snapshot_id FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, id]);
  if (!current) throw new Error('the audience was deleted during its refresh');
  return num(current.snapshot_id);
}

/**
 * The control side of a refresh, in its unit of work: a pending delivery of the new snapshot per
 * destination that has something to receive, then the audience points at it; destinations taken
 * off the audience forget their acknowledged state.
 */
export async function adoptSnapshot(tx: ControlSql, a: {
  ws: string; audienceId: string; snapshot: SnapshotResult; previous: number | null; destinationIds: string[]; at: Date; nextRefreshAt: Date;
}): Promise<void> {
  const { ws, audienceId: id, previous, at } = a;
  const snapshot = a.snapshot.snapshot_id;
  const changed = a.snapshot.added + a.snapshot.removed > 0;
  for (const destination of a.destinationIds) await queueForDestination(tx, { ws, audienceId: id, destination, snapshot, previous, changed, at });
  await tx.run(`UPDATE audiences SET snapshot_id = $3, member_count = $4, status = 'ready', last_error = NULL,
      last_refreshed_at = $5, next_refresh_at = $6, updated_at = $5
    WHERE workspace_id = $1 AND audience_id = $2`, [ws, id, snapshot, a.snapshot.member_count, at, a.nextRefreshAt]);
  // Destinations taken off the audience, once no delivery of theirs is pending (their runs only
  // write while one is): their acknowledged state no longer holds a snapshot back.
  const listed = columnOf(a.destinationIds);
  for (const table of ['audience_destination_changes', 'audience_destinations', 'audience_consent_withheld']) {
    await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2
      AND destination_id NOT IN (SELECT ${tx.dialect.texts('$3')})
      AND destination_id NOT IN (SELECT destination_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND status = 'pending')`,
    [ws, id, listed]);
  }
}

/**
 * Whether a destination gets a delivery of the new snapshot: when the snapshot changed, or when the
 * destination has not acknowledged the previous one and no delivery of its is pending (one that
 * failed, a destination never delivered to). A destination that had acknowledged the previous
 * snapshot, with an unchanged snapshot, has acknowledged the new one: its base moves on, so an
 * unchanged refresh sends nothing and keeps no snapshot alive. (Its base is written by delivery
 * runs only while one of its deliveries is pending, so this write never meets a run's.)
 */
async function queueForDestination(tx: ControlSql, q: {
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

const insertDelivery = (tx: ControlSql, ws: string, audienceId: string, destination: string, snapshot: number, at: Date) =>
  tx.run(`INSERT INTO audience_deliveries (workspace_id, delivery_id, audience_id, destination_id, snapshot_id, status, created_at)
    VALUES ($1, nextval('audience_delivery_ids'), $2, $3, $4, 'pending', $5)`, [ws, audienceId, destination, snapshot, at]);

/**
 * A pending delivery of the audience's current snapshot to each of `destinationIds` (destinations
 * just added): a new destination receives every member without waiting for the next refresh.
 * Nothing when the audience has no snapshot yet (its first refresh queues them).
 */
export async function queueDeliveries(store: ControlStore, ws: string, audienceId: string, destinationIds: string[], at: Date): Promise<void> {
  if (destinationIds.length === 0) return;
  await store.transaction(async (tx) => {
    const row = await one(tx, 'SELECT snapshot_id FROM audiences WHERE workspace_id = $1 AND audience_id = $2', [ws, audienceId]);
    const snapshot = num(row?.snapshot_id);
    if (snapshot === null) return;
    for (const destination of destinationIds) await insertDelivery(tx, ws, audienceId, destination, snapshot, at);
  });
}

async function one(tx: ControlSql, sql: string, params: ControlValue[]): Promise<Row | undefined> {
  return (await tx.all(sql, params))[0];
}

// Deliveries

const toDelivery = (r: Row): DeliveryRow => ({
  ...(r as unknown as DeliveryRow),
  delivery_id: Number(r.delivery_id), snapshot_id: Number(r.snapshot_id), next_page: Number(r.next_page), skipped: Number(r.skipped),
  base_snapshot_id: num(r.base_snapshot_id), sends_diff: (r.sends_diff as boolean | null) ?? null, page_size: num(r.page_size),
  page_count: num(r.page_count), added_count: num(r.added_count), removed_count: num(r.removed_count),
});

/** Pending deliveries of an audience, oldest first per destination. */
export async function pendingDeliveries(store: ControlSql, ws: string, audienceId: string): Promise<DeliveryRow[]> {
  const rows = await store.all(`SELECT * FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND status = 'pending'
    ORDER BY destination_id, delivery_id`, [ws, audienceId]);
  return rows.map(toDelivery);
}

export async function audiencesWithPendingDeliveries(store: ControlSql): Promise<{ workspace_id: string; audience_id: string }[]> {
  const rows = await store.all(`SELECT DISTINCT a.workspace_id, a.audience_id FROM audience_deliveries d
    JOIN audiences a ON a.workspace_id = d.workspace_id AND a.audience_id = d.audience_id WHERE d.status = 'pending'`);
  return rows as { workspace_id: string; audience_id: string }[];
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

export async function recordAttempt(store: ControlStore, ws: string, a: AttemptRecord): Promise<void> {
  await store.run(`INSERT INTO audience_delivery_attempts (workspace_id, delivery_id, page, request, attempt, ok, http_status, error, attempted_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [ws, a.delivery_id, a.page, a.request, a.attempt, a.ok, a.http_status, a.error, a.attempted_at]);
}

export interface DeliveryLog extends DeliveryRow {
  attempts: Omit<AttemptRecord, 'delivery_id'>[];
}

/** The latest deliveries of an audience with their attempts, newest first. */
export async function deliveryLog(store: ControlSql, ws: string, audienceId: string, limit: number): Promise<DeliveryLog[]> {
  const deliveries = (await store.all(`SELECT * FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2
    ORDER BY delivery_id DESC LIMIT $3`, [ws, audienceId, limit])).map(toDelivery);
  if (deliveries.length === 0) return [];
  const attempts = await store.all(`SELECT * FROM audience_delivery_attempts WHERE workspace_id = $1 AND delivery_id IN (
      SELECT delivery_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 ORDER BY delivery_id DESC LIMIT $3)
    ORDER BY attempted_at, page, attempt`, [ws, audienceId, limit]);
  return deliveries.map((d) => ({
    ...d,
    attempts: attempts.filter((a) => Number(a.delivery_id) === d.delivery_id).map((a) => ({
      page: Number(a.page), request: a.request as string, attempt: Number(a.attempt), ok: a.ok as boolean,
      http_status: num(a.http_status), error: (a.error as string | null) ?? null, attempted_at: a.attempted_at as Date,
    })),
  }));
}

// The control rows of snapshots and deliveries, for every analytical store: written in the
// transaction of its members, diffs and work lists where they share the database (DuckDB), around
// them otherwise (ClickHouse). Every function works on the control store alone; the engine orders
// them with its analytical writes.

/** A new snapshot id, taken before the snapshot's members are written. */
export async function nextSnapshotId(tx: ControlSql): Promise<number> {
  return Number((await one(tx, "SELECT nextval('audience_snapshot_ids') AS id", []))!.id);
}

/** Records a snapshot and its counts; in its refresh's control transaction, with adoptSnapshot. */
export async function recordSnapshot(tx: ControlSql, s: { ws: string; audienceId: string; snapshot: SnapshotResult; previous: number | null; at: Date }): Promise<void> {
  await tx.run(`INSERT INTO audience_snapshots (workspace_id, audience_id, snapshot_id, previous_snapshot_id, taken_at, member_count, added_count, removed_count)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  [s.ws, s.audienceId, s.snapshot.snapshot_id, s.previous, s.at, s.snapshot.member_count, s.snapshot.added, s.snapshot.removed]);
}

/**
 * What an audience's snapshots still need: members for the current snapshot and the one before
 * it, and for every snapshot a destination's acknowledged state or a pending delivery refers to;
 * diffs for the current snapshot and pending deliveries' ones. `released`: the others' ids.
 */
export async function releasedSnapshots(tx: ControlSql, ws: string, id: string): Promise<{ released: number[]; diffsKept: number[] }> {
  const pending = `SELECT snapshot_id FROM audience_deliveries WHERE workspace_id = $1 AND audience_id = $2 AND status = 'pending'`;
  const released = await tx.all(`SELECT s.snapshot_id FROM audience_snapshots s
      JOIN audiences a ON a.workspace_id = s.workspace_id AND a.audience_id = s.audience_id
    WHERE s.workspace_id = $1 AND s.audience_id = $2 AND s.snapshot_id <> a.snapshot_id
      AND s.snapshot_id IS DISTINCT FROM (SELECT c.previous_snapshot_id FROM audience_snapshots c WHERE c.workspace_id = $1 AND c.snapshot_id = a.snapshot_id)
      AND s.snapshot_id NOT IN (SELECT acked_snapshot_id FROM audience_destinations WHERE workspace_id = $1 AND audience_id = $2)
      AND s.snapshot_id NOT IN (${pending})
    ORDER BY s.snapshot_id`, [ws, id]);
  const kept = await tx.all(`SELECT snapshot_id FROM audiences WHERE workspace_id = $1 AND audience_id = $2 AND snapshot_id IS NOT NULL
    UNION ${pending}`, [ws, id]);
  return { released: released.map((r) => Number(r.snapshot_id)), diffsKept: kept.map((r) => Number(r.snapshot_id)) };
}

/** Every snapshot id of an audience, its members dropped or not. */
export async function audienceSnapshotIds(store: ControlSql, ws: string, id: string): Promise<number[]> {
  const rows = await store.all('SELECT snapshot_id FROM audience_snapshots WHERE workspace_id = $1 AND audience_id = $2 ORDER BY snapshot_id', [ws, id]);
  return rows.map((r) => Number(r.snapshot_id));
}

/** Forgets an audience's snapshots (once their members and diffs are gone). */
export async function forgetSnapshots(store: ControlSql, ws: string, id: string): Promise<void> {
  await store.run('DELETE FROM audience_snapshots WHERE workspace_id = $1 AND audience_id = $2', [ws, id]);
}

/** What a delivery starts from: what its destination has acknowledged, and its snapshot's counts. */
export interface DeliveryBasis {
  /** The snapshot the destination has acknowledged (null: none). */
  base: number | null;
  /** Profiles the destination acknowledged differently from its base since. */
  changes: number;
  previous: number | null;
  added: number;
  removed: number;
  members: number;
  /** Members of the base snapshot (null: no base). */
  baseMembers: number | null;
}

/** The basis of a delivery; null when its snapshot no longer exists. */
export async function deliveryBasis(tx: ControlSql, d: DeliveryRow): Promise<DeliveryBasis | null> {
  const acked = 'SELECT max(acked_snapshot_id) FROM audience_destinations WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3';
  const row = await one(tx, `SELECT (${acked}) AS base,
      (SELECT count(*) FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3) AS changes,
      (SELECT b.member_count FROM audience_snapshots b WHERE b.workspace_id = $1 AND b.snapshot_id = (${acked})) AS base_members,
      s.previous_snapshot_id AS previous, s.added_count, s.removed_count, s.member_count
    FROM audience_snapshots s WHERE s.workspace_id = $1 AND s.snapshot_id = $4`, [d.workspace_id, d.audience_id, d.destination_id, d.snapshot_id]);
  if (!row) return null;
  return {
    base: num(row.base), changes: Number(row.changes), previous: num(row.previous), added: Number(row.added_count),
    removed: Number(row.removed_count), members: Number(row.member_count), baseMembers: num(row.base_members),
  };
}

/** Whether a delivery sends its snapshot's own diff: its destination acknowledged exactly the previous snapshot, nothing since. */
export const sendsOwnDiff = (basis: DeliveryBasis): boolean => basis.changes === 0 && basis.base === basis.previous;

/**
 * A delivery started on `basis` with a work list of `list`'s counts, in pages of `pageSize`, at page
 * 0; `sent` the counts it logs, those of the members routed to its destination (all by default).
 */
export function startedDelivery(d: DeliveryRow, basis: DeliveryBasis, pageSize: number, list: { added: number; removed: number }, sent = list): DeliveryRow {
  return {
    ...d, base_snapshot_id: basis.base, sends_diff: sendsOwnDiff(basis), page_size: pageSize,
    page_count: Math.ceil((list.added + list.removed) / pageSize), next_page: 0, skipped: 0, added_count: sent.added, removed_count: sent.removed,
  };
}

/** The profiles a destination acknowledged differently from its base. */
export async function destinationChanges(store: ControlSql, d: DeliveryRow): Promise<Row[]> {
  return store.all(`SELECT change, profile FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3`,
    [d.workspace_id, d.audience_id, d.destination_id]);
}

/**
 * Records a delivery's start (its work list's shape, progress at page 0), and supersedes the
 * destination's pending deliveries that never started, of this snapshot or older ones: this one
 * carries their changes.
 */
export async function recordDeliveryStart(tx: ControlSql, started: DeliveryRow, at: Date): Promise<void> {
  const ws = started.workspace_id;
  await tx.run(`UPDATE audience_deliveries SET base_snapshot_id = $3, sends_diff = $4, page_size = $5, page_count = $6,
      added_count = $7, removed_count = $8, next_page = 0, skipped = 0
    WHERE workspace_id = $1 AND delivery_id = $2`,
  [ws, started.delivery_id, started.base_snapshot_id, started.sends_diff, started.page_size, started.page_count, started.added_count, started.removed_count]);
  await tx.run(`UPDATE audience_deliveries SET status = 'canceled', last_error = $5, finished_at = $6
    WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3 AND status = 'pending' AND page_count IS NULL
      AND delivery_id <> $4 AND snapshot_id <= $7`,
  [ws, started.audience_id, started.destination_id, started.delivery_id, `superseded by delivery ${started.delivery_id}`, at, started.snapshot_id]);
}

/** A row of an acknowledged page, with whether its profile is a member of the delivery's base snapshot. */
export interface AcknowledgedRow {
  change: 'added' | 'removed';
  profile: number;
  in_base: boolean;
}

/**
 * Records a page as acknowledged: the destination now has each added profile and lacks each
 * removed one, kept as changes against its base where they differ from it. In one transaction
 * with the delivery's progress, so a page is never half recorded.
 */
export async function recordAcknowledgedPage(tx: ControlSql, d: DeliveryRow, page: number, rows: AcknowledgedRow[], skipped: number): Promise<void> {
  const key = [d.workspace_id, d.audience_id, d.destination_id];
  const listed = JSON.stringify(rows);
  const { jsonRows } = tx.dialect;
  await tx.run(`DELETE FROM audience_destination_changes WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3
    AND profile IN (SELECT r.profile FROM ${jsonRows('$4', 'r', { profile: 'bigint' })})`, [...key, listed]);
  await tx.run(`INSERT INTO audience_destination_changes (workspace_id, audience_id, destination_id, change, profile)
    SELECT $1, $2, $3, r.change, r.profile
    FROM ${jsonRows('$4', 'r', { change: 'text', profile: 'bigint', in_base: 'boolean' })}
    WHERE (r.change = 'added') <> r.in_base`, [...key, listed]);
  await tx.run('UPDATE audience_deliveries SET next_page = $3, skipped = $4 WHERE workspace_id = $1 AND delivery_id = $2',
    [d.workspace_id, d.delivery_id, page + 1, skipped]);
}

/**
 * Ends a delivery. Delivered: every page is acknowledged, so the destination has exactly its
 * snapshot, which becomes its base. Failed or canceled: what it acknowledged stays recorded and the
 * next delivery carries the rest.
 */
export async function endDelivery(tx: ControlSql, d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void> {
  const key = [d.workspace_id, d.audience_id, d.destination_id];
  if (status === 'delivered') {
    for (const table of ['audience_destinations', 'audience_destination_changes']) {
      await tx.run(`DELETE FROM ${table} WHERE workspace_id = $1 AND audience_id = $2 AND destination_id = $3`, key);
    }
    await tx.run(`INSERT INTO audience_destinations (workspace_id, audience_id, destination_id, acked_snapshot_id) SELECT $1, $2, $3, $4
      WHERE EXISTS (SELECT 1 FROM audiences WHERE workspace_id = $1 AND audience_id = $2)`, [...key, d.snapshot_id]);
  }
  await tx.run('UPDATE audience_deliveries SET status = $3, last_error = $4, finished_at = $5 WHERE workspace_id = $1 AND delivery_id = $2',
    [d.workspace_id, d.delivery_id, status, error, at]);
}
