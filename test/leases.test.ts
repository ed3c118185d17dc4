// Work done by one process at a time across the processes sharing a control store: the lease
// primitive, and two nodes (two apps on one control store) ticking and delivering at once.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUDIENCE_DEFAULTS, createAudienceService } from '../src/audiences/service.js';
import { releaseLease, renewLease, takeLease, withLease } from '../src/store/control/leases.js';
import { startReceiver } from './support/receiver.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { importRows } from './support/stored.js';

const AT = new Date('2026-06-15T12:00:00Z');
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };
const delivery = { ...AUDIENCE_DEFAULTS.delivery, allowPrivateDestinations: true, webhookPageSize: 1, backoffBaseMs: 10, backoffMaxMs: 20 };

describe.each(ENGINES_WITH_POSTGRES)('%s: leases', (engine) => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp({ engine, at: AT, audiences: { delivery } });
  });
  afterEach(() => t.close());

  it('gives a lease to one holder at a time, to its holder again, and to another once released or expired', async () => {
    const control = t.stores.control;
    expect(await takeLease(control, 'job', 'a', 60_000)).toBe(true);
    expect(await takeLease(control, 'job', 'b', 60_000)).toBe(false);
    expect(await takeLease(control, 'job', 'a', 60_000)).toBe(true);
    expect(await renewLease(control, 'job', 'b', 60_000)).toBe(false);
    await releaseLease(control, 'job', 'b');
    expect(await takeLease(control, 'job', 'b', 60_000)).toBe(false);
    await releaseLease(control, 'job', 'a');
    expect(await takeLease(control, 'job', 'b', 1)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 5));
    // Expired: a holder killed mid-work holds nothing past its lease, and once taken it is lost to it.
    expect(await takeLease(control, 'job', 'a', 60_000)).toBe(true);
    expect(await renewLease(control, 'job', 'b', 60_000)).toBe(false);
    expect(await withLease(control, 'job', 'b', { ttlMs: 60_000, renewEveryMs: 1_000 }, async () => 'ran')).toBeNull();
    expect(await withLease(control, 'other', 'b', { ttlMs: 60_000, renewEveryMs: 1_000 }, async () => 'ran')).toEqual({ value: 'ran' });
    expect(await takeLease(control, 'other', 'a', 60_000)).toBe(true);
  });

  it('two nodes ticking at once refresh each due audience once and deliver its pages once, in order', async () => {
    const persons = ['p1', 'p2', 'p3', 'p4'];
    await importRows(t, {
      persons: persons.map((person_id) => ({ person_id, external_id: person_id, email: null, name: null, traits: null, created_at: AT })),
      events: persons.map((person_id, i) => ({ event_id: `e${i}`, event_name: 'signup', ts: AT, person_id, visitor_id: null, properties: '{}' })),
    });
    const hook = await startReceiver('answer');
    try {
      const ids: string[] = [];
      for (const name of ['a', 'b', 'c']) {
        const res = await t.post('/v1/audiences', { name, criteria_json: signedUp, destinations: [{ type: 'webhook', url: hook.url, secret: 'shh' }] });
        expect(res.statusCode, res.body).toBe(201);
        ids.push(res.json().id as string);
      }
      // A second node: its own refresher, deliverer and scheduler on the same stores.
      const other = createAudienceService(t.stores, () => AT, () => undefined, { delivery });
      const first = t.app.audiences;
      const due = new Date(AT.getTime() + 2 * 3_600_000);
      await Promise.all([first.scheduler.tick(due), other.scheduler.tick(due), first.scheduler.tick(due), other.scheduler.tick(due)]);
      await Promise.all([first.deliverer.idle(), other.deliverer.idle()]);
      // Deliveries left to the other node's lease are picked up at a later tick.
      const later = new Date(due.getTime() + 1000);
      await Promise.all([first.scheduler.tick(later), other.scheduler.tick(later)]);
      await Promise.all([first.deliverer.idle(), other.deliverer.idle()]);

      for (const id of ids) {
        const snapshots = await t.stores.control.all('SELECT snapshot_id FROM audience_snapshots WHERE audience_id = $1', [id]);
        expect(snapshots, id).toHaveLength(1);
        const deliveries = await t.stores.control.all('SELECT status FROM audience_deliveries WHERE audience_id = $1', [id]);
        expect(deliveries.map((d) => d.status), id).toEqual(['delivered']);
        // One page per member (page size 1), each accepted once, in page order.
        const pages = hook.accepted.filter((p) => p.audience_id === id);
        expect(pages.map((p) => p.page)).toEqual([0, 1, 2, 3]);
      }
      await other.scheduler.stop();
    } finally {
      hook.close();
    }
  });
});
