// Shutdown does not wait for deliveries: closing the app aborts a request in flight and a backoff
// sleep at once; the delivery stays pending with its page unacknowledged, and the next start on the
// same database delivers it.

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUDIENCE_DEFAULTS } from '../src/audiences/service.js';
import { connectClickHouse } from '../src/store/clickhouse/client.js';
import type { CreatedWorkspace } from '../src/store/control/workspaces.js';
import { startReceiver } from './support/receiver.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { importRows } from './support/stored.js';

const AT = new Date('2026-06-15T12:00:00Z');
const HOUR = 3_600_000;
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

describe.each(ENGINES)('%s: shutdown with a delivery under way', (engine) => {
  let dir: string;
  let path: string;
  let database: string;
  // chDB's in-memory data is dropped when its last connection closes: one is held across the restart.
  let holder: ClickHouseClient | null;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'delivery-shutdown-'));
    path = join(dir, 'service.duckdb');
    database = `test_${randomUUID().replaceAll('-', '')}`;
    holder = engine === 'clickhouse' ? await connectClickHouse({ path: ':memory:', database }) : null;
  });
  afterEach(async () => {
    await holder?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** An app on the database file (and ClickHouse database) whose requests and backoff sleeps would each last an hour. */
  const start = () => startTestApp({
    engine, path, clickhouseDatabase: database, at: AT,
    audiences: { delivery: { ...AUDIENCE_DEFAULTS.delivery, requestTimeoutMs: HOUR, backoffBaseMs: HOUR, backoffMaxMs: HOUR } },
  });

  async function audienceWithHook(t: TestApp, url: string) {
    await importRows(t, {
      persons: [{ person_id: 'p1', external_id: 'u_1', email: null, name: null, traits: null, created_at: AT }],
      events: [{ event_id: 'e1', event_name: 'signup', ts: AT, person_id: 'p1', visitor_id: null, properties: '{}' }],
    });
    const res = await t.post('/v1/audiences', { name: 'signups', criteria_json: signedUp, destinations: [{ type: 'webhook', url, secret: 'shh' }] });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  }

  const pending = async (t: TestApp, id: string) => (await t.store.query(
    'SELECT status, next_page FROM audience_deliveries WHERE audience_id = $1', [id])).map((r) => [r.status, Number(r.next_page)]);

  /** A new app on the same file delivers what the first left pending. */
  async function restartDelivers(first: CreatedWorkspace, id: string, hook: Awaited<ReturnType<typeof startReceiver>>) {
    hook.mode = 'answer';
    const t = await start();
    try {
      await t.app.audiences.scheduler.tick(AT);
      await t.app.audiences.deliverer.idle();
      expect(hook.members()).toEqual(['p1']);
      const log = (await t.app.inject({ method: 'GET', url: `/v1/audiences/${id}/deliveries`, headers: { authorization: `Bearer ${first.secret_key}` } })).json();
      expect(log.data).toMatchObject([{ status: 'delivered', pages_delivered: 1 }]);
      return log.data[0].attempts as { ok: boolean; http_status: number | null }[];
    } finally {
      await t.close();
    }
  }

  it('aborts a request the receiver holds open, keeps the delivery pending, and delivers it after a restart', async () => {
    const hook = await startReceiver('hang');
    try {
      const t = await start();
      const id = await audienceWithHook(t, hook.url);
      await t.app.audiences.scheduler.tick(AT);
      await hook.when(() => hook.held.length === 1);
      const response = hook.held[0]!.res;

      await t.app.close();
      // The receiver never answered: the close did not wait for it (nor for the hour's time limit).
      expect(response.writableEnded).toBe(false);
      expect(hook.accepted).toEqual([]);
      expect(await pending(t, id)).toEqual([['pending', 0]]);
      await t.stores.close();

      const attempts = await restartDelivers(t.ws, id, hook);
      // The aborted attempt was not the receiver's failure: only the delivering one is logged.
      expect(attempts).toMatchObject([{ ok: true, http_status: 200 }]);
    } finally {
      hook.close();
    }
  }, 20_000);

  it('interrupts a backoff sleep, keeps the delivery pending, and delivers it after a restart', async () => {
    const hook = await startReceiver('fail');
    try {
      const t = await start();
      const id = await audienceWithHook(t, hook.url);
      await t.app.audiences.scheduler.tick(AT);
      await hook.when(() => hook.requests === 1);
      // The failed attempt is logged before the hour-long backoff sleep starts.
      while ((await t.store.query('SELECT count(*) AS n FROM audience_delivery_attempts'))[0]!.n === 0n) await new Promise((r) => setTimeout(r, 10));

      await t.app.close();
      expect(hook.requests).toBe(1);
      expect(await pending(t, id)).toEqual([['pending', 0]]);
      await t.stores.close();

      const attempts = await restartDelivers(t.ws, id, hook);
      expect(attempts).toMatchObject([{ ok: false, http_status: 503 }, { ok: true, http_status: 200 }]);
    } finally {
      hook.close();
    }
  }, 20_000);
});
