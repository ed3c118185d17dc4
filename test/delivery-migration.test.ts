// Upgrading a database written before destinations' acknowledged state was kept: each destination
// starts at its audience's snapshot, less what its pending delivery had not sent yet (pages already
// acknowledged are sent), so the first delivery after the upgrade sends exactly the rest.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/store/duckdb/migrations.js';
import { startReceiver } from './support/receiver.js';
import { startTestApp } from './support/app.js';

/** The schema version before acknowledged state (migration 6). */
const BEFORE = 5;
const AT = '2026-06-15 12:00:00';

/**
 * Snapshot 1 = profiles 1…3, delivered to both destinations. Snapshot 2 = 2…1503: its diff (1 500
 * added, then 1 removed, in page order) is delivered to `dst_done`, and to `dst_hook` up to its
 * first page of 1 000 (profiles 4…1003) when the service stopped.
 */
async function oldDatabase(path: string, hookUrl: string): Promise<void> {
  const db = await DuckDBInstance.create(path);
  const c = await db.connect();
  try {
    await c.run('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)');
    for (let version = 1; version <= BEFORE; version++) {
      await c.run(MIGRATIONS[version - 1]!);
      await c.run('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
    }
    await c.run(`INSERT INTO persons SELECT 'ws_old', i, 'p' || i, NULL, NULL, NULL, NULL, TIMESTAMP '${AT}', TIMESTAMP '${AT}' FROM range(1, 1504) t(i)`);
    const destinations = JSON.stringify([
      { type: 'webhook', url: hookUrl, secret: 'shh', id: 'dst_hook' },
      { type: 'webhook', url: hookUrl, secret: 'other', id: 'dst_done' },
    ]);
    await c.run(`INSERT INTO audiences VALUES ('ws_old', 'aud_old', 'old', '{}', false, '1d', 86400000, $1, 'ready', 2, 1502,
      TIMESTAMP '${AT}', TIMESTAMP '2030-01-01', NULL, TIMESTAMP '${AT}', TIMESTAMP '${AT}')`, [destinations]);
    await c.run(`INSERT INTO audience_snapshots VALUES ('ws_old', 'aud_old', 1, NULL, TIMESTAMP '${AT}', 3, 3, 0),
      ('ws_old', 'aud_old', 2, 1, TIMESTAMP '${AT}', 1502, 1500, 1)`);
    await c.run(`INSERT INTO audience_members SELECT 'ws_old', 1, i FROM range(1, 4) t(i)`);
    await c.run(`INSERT INTO audience_members SELECT 'ws_old', 2, i FROM range(2, 1504) t(i)`);
    await c.run(`INSERT INTO audience_diffs SELECT 'ws_old', 'aud_old', 2, 'added', i FROM range(4, 1504) t(i)`);
    await c.run(`INSERT INTO audience_diffs VALUES ('ws_old', 'aud_old', 2, 'removed', 1)`);
    await c.run(`INSERT INTO audience_deliveries (workspace_id, delivery_id, audience_id, destination_id, snapshot_id, status, next_page, created_at) VALUES
      ('ws_old', 1, 'aud_old', 'dst_hook', 1, 'delivered', 1, TIMESTAMP '${AT}'),
      ('ws_old', 2, 'aud_old', 'dst_done', 1, 'delivered', 1, TIMESTAMP '${AT}'),
      ('ws_old', 3, 'aud_old', 'dst_hook', 2, 'pending', 1, TIMESTAMP '${AT}'),
      ('ws_old', 4, 'aud_old', 'dst_done', 2, 'delivered', 2, TIMESTAMP '${AT}')`);
    await c.run("SELECT nextval('audience_snapshot_ids'), nextval('audience_snapshot_ids'), nextval('audience_delivery_ids') FROM range(4)");
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

describe('upgrade to acknowledged state', () => {
  let dir: string;
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'delivery-migration-')); });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('starts destinations at the current snapshot less the unsent part of a pending delivery, which the next delivery sends', async () => {
    const hook = await startReceiver('answer');
    const path = join(dir, 'old.duckdb');
    await oldDatabase(path, hook.url);
    const t = await startTestApp({ path, at: new Date('2026-06-15T13:00:00Z') });
    try {
      const state = await t.store.query('SELECT destination_id, acked_snapshot_id FROM audience_destinations ORDER BY 1');
      expect(state.map((r) => [r.destination_id, Number(r.acked_snapshot_id)])).toEqual([['dst_done', 2], ['dst_hook', 2]]);
      const changes = await t.store.query(`SELECT destination_id, change, count(*) AS n, min(profile) AS low, max(profile) AS high
        FROM audience_destination_changes GROUP BY ALL ORDER BY ALL`);
      // dst_hook has profile 1 (its removal was not sent) and lacks 1004…1503 (not sent).
      expect(changes.map((r) => [r.destination_id, r.change, Number(r.n), Number(r.low), Number(r.high)]))
        .toEqual([['dst_hook', 'added', 1, 1, 1], ['dst_hook', 'removed', 500, 1004, 1503]]);

      await t.app.audiences.deliverer.deliver('ws_old', 'aud_old');
      await t.app.audiences.deliverer.idle();
      expect(hook.accepted).toHaveLength(1);
      const [page] = hook.accepted;
      expect(page!.snapshot_id).toBe(2);
      expect(page!.removed.map((m) => m.person_id)).toEqual(['p1']);
      expect(page!.added.map((m) => m.person_id)).toEqual(Array.from({ length: 500 }, (_, i) => `p${1004 + i}`));
      const delivery = await t.store.query("SELECT status, page_count, added_count, removed_count FROM audience_deliveries WHERE delivery_id = 3");
      expect(delivery.map((r) => [r.status, Number(r.page_count), Number(r.added_count), Number(r.removed_count)])).toEqual([['delivered', 1, 500, 1]]);
      expect(await t.store.query('SELECT * FROM audience_destination_changes')).toEqual([]);
    } finally {
      hook.close();
      await t.close();
    }
  });
});
