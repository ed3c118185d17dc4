// Where a payment-processor backfill stopped, per workspace and object type: the id of the last
// object applied (the list's `starting_after` on resume), and whether the type was read to its end.

import type { ControlSql } from './store.js';

export interface BackfillCursor {
  objectType: string;
  /** The `--since` day the listing was started with (null: all history). */
  since: string | null;
  lastId: string | null;
  done: boolean;
}

export async function readCursors(sql: ControlSql, ws: string): Promise<Map<string, BackfillCursor>> {
  const rows = await sql.all('SELECT object_type, since, last_id, done FROM stripe_backfill_cursors WHERE workspace_id = $1', [ws]);
  return new Map(rows.map((r) => [r.object_type as string, {
    objectType: r.object_type as string, since: (r.since as string | null) ?? null, lastId: (r.last_id as string | null) ?? null, done: r.done === true,
  }]));
}

export async function saveCursor(sql: ControlSql, ws: string, c: BackfillCursor, at: Date): Promise<void> {
  await sql.run(`INSERT INTO stripe_backfill_cursors (workspace_id, object_type, since, last_id, done, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (workspace_id, object_type) DO UPDATE SET since = excluded.since, last_id = excluded.last_id, done = excluded.done, updated_at = excluded.updated_at`,
  [ws, c.objectType, c.since, c.lastId, c.done, at]);
}

/** Forgets the workspace's cursors: the backfill finished, and a later one starts from the newest objects again. */
export async function clearCursors(sql: ControlSql, ws: string): Promise<void> {
  await sql.run('DELETE FROM stripe_backfill_cursors WHERE workspace_id = $1', [ws]);
}
