// One destination can only delay itself: deliveries run apart from refreshes and from each other,
// in request slots bounded overall and per workspace, so destinations that accept and never answer
// in one workspace hold neither the scheduler nor another workspace's deliveries.

import { describe, expect, it } from 'vitest';
import { AUDIENCE_DEFAULTS } from '../src/audiences/service.js';
import { Slots } from '../src/audiences/slots.js';
import { importDataset } from '../src/store/duckdb/import.js';
import type { CreatedWorkspace } from '../src/store/control/workspaces.js';
import { startReceiver } from './support/receiver.js';
import { startTestApp, type TestApp } from './support/app.js';

const AT = new Date('2026-06-15T12:00:00Z');
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

async function signUps(t: TestApp, ws: CreatedWorkspace, ids: string[]) {
  await importDataset(t.store, ws.workspace_id, {
    persons: ids.map((id) => ({ person_id: id, external_id: null, email: null, name: null, traits: null, created_at: AT })),
    events: ids.map((id) => ({ event_id: `e_${id}`, event_name: 'signup', ts: AT, person_id: id, visitor_id: null, properties: '{}' })),
  });
}

async function createAudience(t: TestApp, ws: CreatedWorkspace, urls: string[]) {
  const res = await t.post('/v1/audiences', {
    name: 'signups', criteria_json: signedUp, destinations: urls.map((url) => ({ type: 'webhook', url, secret: 'shh' })),
  }, ws.secret_key);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string };
}

const get = async (t: TestApp, ws: CreatedWorkspace, url: string) =>
  (await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${ws.secret_key}` } })).json();

/** Polls until `ready` holds (the delivery log is written just after the receiver answers). */
async function until(ready: () => Promise<boolean>) {
  while (!(await ready())) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('delivery isolation', () => {
  it("refreshes and delivers another workspace's new audience at the next tick while three receivers of one workspace hang, and never opens more than its share for them", async () => {
    const t = await startTestApp({
      at: AT,
      audiences: {
        delivery: {
          ...AUDIENCE_DEFAULTS.delivery,
          // No time limit comes into play: the hung requests are released by the test.
          requestTimeoutMs: 3_600_000, maxConcurrentRequests: 3, maxConcurrentRequestsPerWorkspace: 2,
        },
      },
    });
    const hung = await Promise.all([1, 2, 3].map(() => startReceiver('hang')));
    const healthy = await startReceiver('answer');
    try {
      const a = t.ws;
      const b = await t.workspaces.create('other');
      await signUps(t, a, ['a1', 'a2']);
      await signUps(t, b, ['b1']);
      const hanging = await createAudience(t, a, hung.map((r) => r.url));
      await t.app.audiences.scheduler.tick(AT);
      const held = () => hung.reduce((n, r) => n + r.held.length, 0);
      await Promise.race(hung.map((r) => r.when(() => held() === 2)));

      const fresh = await createAudience(t, b, [healthy.url]);
      await t.app.audiences.scheduler.tick(AT);
      expect(await get(t, b, `/v1/audiences/${fresh.id}`)).toMatchObject({ status: 'ready', member_count: 1 });
      await healthy.when(() => healthy.accepted.length === 1);
      expect(healthy.members()).toEqual(['b1']);
      await until(async () => (await get(t, b, `/v1/audiences/${fresh.id}/deliveries`)).data[0]?.status === 'delivered');

      // Workspace A's third destination still waits for one of its two slots.
      expect(held()).toBe(2);
      expect(hung.map((r) => r.requests).sort()).toEqual([0, 1, 1]);
      expect((await get(t, a, `/v1/audiences/${hanging.id}/deliveries`)).data.map((d: { status: string }) => d.status))
        .toEqual(['pending', 'pending', 'pending']);

      for (const r of hung) {
        r.mode = 'answer';
        r.release();
      }
      await t.app.audiences.deliverer.idle();
      for (const r of hung) {
        expect(r.members()).toEqual(['a1', 'a2']);
        expect(r.maxOpen).toBe(1);
      }
      expect((await get(t, a, `/v1/audiences/${hanging.id}/deliveries`)).data.map((d: { status: string }) => d.status))
        .toEqual(['delivered', 'delivered', 'delivered']);
    } finally {
      for (const r of [...hung, healthy]) r.close();
      await t.close();
    }
  }, 20_000);
});

describe('request slots', () => {
  const never = new AbortController().signal;
  const gate = () => {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => { open = resolve; });
    return { promise, open };
  };

  it('holds at most the overall bound and the per-workspace share, serving waiters in order among those their share allows', async () => {
    const slots = new Slots(3, 2);
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const run = (ws: string, name: string) => {
      const g = gate();
      gates.set(name, g);
      return slots.run(ws, never, async () => {
        started.push(name);
        await g.promise;
      });
    };
    const runs = [run('a', 'a1'), run('a', 'a2'), run('a', 'a3'), run('b', 'b1'), run('b', 'b2'), run('c', 'c1')];
    await new Promise((resolve) => setImmediate(resolve));
    // a3 waits for A's share; b1 fills the third slot; b2 and c1 wait for a slot.
    expect(started).toEqual(['a1', 'a2', 'b1']);
    gates.get('a1')!.open();
    await new Promise((resolve) => setImmediate(resolve));
    // The freed slot goes to the first waiter its workspace's share allows: a3 arrived first.
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    gates.get('b1')!.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'b2']);
    for (const g of gates.values()) g.open();
    await Promise.all(runs);
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'b2', 'c1']);
  });

  it('rejects a waiter whose signal aborts, and lets the next one in', async () => {
    const slots = new Slots(1, 1);
    const g = gate();
    const first = slots.run('a', never, () => g.promise);
    const stopping = new AbortController();
    const waiting = slots.run('a', stopping.signal, async () => 'ran');
    stopping.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    const next = slots.run('a', never, async () => 'next');
    g.open();
    await first;
    await expect(next).resolves.toBe('next');
  });
});
