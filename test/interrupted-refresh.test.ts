// A refresh whose process was killed leaves the audience `refreshing` and its lease held: the lease
// names the holder, and once the holder is gone (its lease expired, or cleared when the only
// process of a DuckDB file starts) the audience is due at once and the next tick refreshes it, a
// manual refresh of an audience not due for a day included.

import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshLeaseName, updateAudience } from '../src/store/control/audiences.js';
import { takeLease } from '../src/store/control/leases.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';

const criteria = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };
/** The killed holder's lease: short, so that it runs out by the real clock within the test. */
const GONE_TTL_MS = 1_500;

describe.each(ENGINES_WITH_POSTGRES)('%s: interrupted refreshes', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engine });
  });
  afterAll(() => t.close());

  /** An audience refreshed once, not due for a day, then left as a killed refresh leaves it. */
  async function killedMidRefresh(): Promise<string> {
    await t.freshWorkspace();
    await t.post('/v1/events', { batch: [{ event_name: 'signup', user_id: 'u_1', message_id: 'm_1' }] });
    const created = await t.post('/v1/audiences', { name: 'signed up', criteria_json: criteria, refresh_every: '1d' });
    const id = created.json().id as string;
    expect((await t.post(`/v1/audiences/${id}/refresh`, {})).json()).toMatchObject({ status: 'ready' });
    await updateAudience(t.stores.control, t.ws.workspace_id, id, { status: 'refreshing' });
    expect(await takeLease(t.stores.control, refreshLeaseName(id), 'refresher:gone', GONE_TTL_MS)).toBe(true);
    return id;
  }

  const status = async (id: string) => (await t.app.inject({ method: 'GET', url: `/v1/audiences/${id}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } })).json();

  it('answers 409 while the holder\'s lease lasts, then resets and refreshes the audience at the next tick', async () => {
    const id = await killedMidRefresh();
    expect((await t.post(`/v1/audiences/${id}/refresh`, {})).statusCode).toBe(409);
    await t.app.audiences.scheduler.tick(new Date());
    expect(await status(id)).toMatchObject({ status: 'refreshing' });
    await sleep(GONE_TTL_MS + 100);
    await t.app.audiences.scheduler.tick(new Date());
    expect(await status(id)).toMatchObject({ status: 'ready', last_error: null, member_count: 1 });
  });

  it('clears the refresh leases of an earlier run when the only process of a DuckDB file starts', async () => {
    const id = await killedMidRefresh();
    // On PostgreSQL another node may hold the lease: only its expiry frees it.
    const expected = t.stores.control.shared ? 'refreshing' : 'ready';
    t.app.audiences.scheduler.start();
    for (let tries = 0; tries < 100 && (await status(id)).status !== expected; tries++) await sleep(100);
    await t.app.audiences.scheduler.stop();
    expect(await status(id)).toMatchObject({ status: expected });
  });
});
