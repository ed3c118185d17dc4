// Identifiers proven new skip the lookup (src/store/duckdb/known-ids.ts): the filter never says a stored
// id is absent, whatever was cached, evicted or rolled back.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GrowingBloom } from '../src/store/bloom.js';
import { ControlCaches } from '../src/store/control/caches.js';
import { DuckDBKnownIds } from '../src/store/duckdb/known-ids.js';
import { startTestApp, type TestApp } from './support/app.js';

describe('growing Bloom filter', () => {
  it('holds every id added, across several layers, and rarely claims one never added', () => {
    const filter = new GrowingBloom();
    for (let i = 0; i < 300_000; i++) filter.add(`v_${i}_${i % 7}`);
    for (let i = 0; i < 300_000; i++) expect(filter.mightHold(`v_${i}_${i % 7}`)).toBe(true);
    let falsePositives = 0;
    for (let i = 0; i < 100_000; i++) if (filter.mightHold(`new_${i}`)) falsePositives++;
    expect(falsePositives).toBeLessThan(50);
  });
});

describe('known ids in ingest', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp({ at: new Date('2026-06-15T12:00:00Z') });
  });
  afterEach(() => t.close());

  const event = async (body: Record<string, unknown>) => {
    const res = await t.post('/v1/events', body);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { person_id: string | null };
  };
  const rows = async (sql: string, params: unknown[] = []) => t.store.query(sql, params as never[]);
  const ready = async () => {
    const known = t.stores.control.caches.knownIds!;
    await event({ event_name: 'warm', visitor_id: 'v_warm' });
    await expect.poll(() => known.isReady(t.ws.workspace_id)).toBe(true);
  };

  it('finds ids stored before the filter was filled, once the cache has forgotten them', async () => {
    const first = await event({ event_name: 'e', external_id: 'u1', email: 'u1@example.com', visitor_id: 'v1' });
    await ready();
    t.stores.control.caches.identities.resize(0);
    expect((await event({ event_name: 'e', visitor_id: 'v1' })).person_id).toBe(first.person_id);
    expect((await event({ event_name: 'e', email: 'U1@example.com' })).person_id).toBe(first.person_id);
    expect((await event({ event_name: 'e', external_id: 'u1' })).person_id).toBe(first.person_id);
    expect(Number((await rows('SELECT count(*) AS n FROM visitors WHERE visitor_id = $1', ['v1']))[0]!.n)).toBe(1);
    expect(Number((await rows('SELECT count(*) AS n FROM persons'))[0]!.n)).toBe(1);
  });

  it('finds ids written after the filter was filled, once the cache has forgotten them', async () => {
    await ready();
    await event({ batch: [
      { event_name: 'e', external_id: 'u2', visitor_id: 'v2' },
      { event_name: 'e', external_id: 'u2', email: 'u2@example.com' },
    ] });
    t.stores.control.caches.identities.resize(0);
    const [linked, byEmail] = [await event({ event_name: 'e', visitor_id: 'v2' }), await event({ event_name: 'e', email: 'u2@example.com' })];
    expect(linked.person_id).toMatch(/^per_/);
    expect(byEmail.person_id).toBe(linked.person_id);
    expect(Number((await rows('SELECT count(*) AS n FROM visitors WHERE visitor_id = $1', ['v2']))[0]!.n)).toBe(1);
  });

  it('creates the visitor of a rolled-back batch when it comes again', async () => {
    await ready();
    const { Ingest } = await import('../src/ingest/ingest.js');
    const failing = new Ingest(t.stores);
    failing.onVisitorLinked(async () => { throw new Error('listener failed'); });
    await expect(failing.events(t.ws.workspace_id, [{ event_name: 'e', external_id: 'rb', visitor_id: 'rbv' }])).rejects.toThrow('listener failed');
    expect(await rows('SELECT * FROM visitors WHERE visitor_id = $1', ['rbv'])).toHaveLength(0);

    const { person_id } = await event({ event_name: 'e', external_id: 'rb', visitor_id: 'rbv' });
    expect(await rows('SELECT p.person_id FROM visitors v JOIN persons p USING (person_key) WHERE v.visitor_id = $1', ['rbv']))
      .toEqual([{ person_id }]);
  });

  it('stores each new visitor once while the filter is being filled', async () => {
    const batches = Array.from({ length: 8 }, (_, b) => ({ batch: Array.from({ length: 50 }, (_, i) => ({
      event_name: 'e', visitor_id: `c_${(b * 50 + i) % 120}`,
    })) }));
    await Promise.all(batches.map(async (body) => expect((await t.post('/v1/events', body)).statusCode).toBe(200)));
    await ready();
    t.stores.control.caches.identities.resize(0);
    await event({ batch: Array.from({ length: 120 }, (_, i) => ({ event_name: 'e', visitor_id: `c_${i}` })) });
    expect(Number((await rows("SELECT count(DISTINCT visitor_id) AS d FROM visitors WHERE visitor_id LIKE 'c\\_%' ESCAPE '\\'"))[0]!.d)).toBe(120);
    expect(Number((await rows("SELECT count(*) AS n FROM visitors WHERE visitor_id LIKE 'c\\_%' ESCAPE '\\'"))[0]!.n)).toBe(120);
  });

  it('keeps no filter on a control store shared with other nodes', () => {
    expect(t.stores.control.caches.knownIds).not.toBeNull();
    expect(new ControlCaches(true, () => new DuckDBKnownIds(t.stores.control)).knownIds).toBeNull();
  });
});
