// The identity cache (src/store/control/identity-cache.ts): keys only, bounded, and never the only
// source of truth (an evicted identifier is looked up in the store).

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { INGEST_LIMITS } from '../src/ingest/limits.js';
import { IdentityCache } from '../src/store/control/identity-cache.js';
import { startTestApp, type TestApp } from './support/app.js';

let t: TestApp;
const AT = new Date('2026-06-15T12:00:00Z');

const ok = async (url: string, body: unknown) => {
  const res = await t.post(url, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const traitsOf = async (personId: string) => JSON.parse((await t.store.query(
  'SELECT CAST(traits AS VARCHAR) AS traits FROM persons WHERE person_id = $1', [personId]))[0]!.traits as string);
const nameOf = async (personId: string) => (await t.store.query('SELECT name FROM persons WHERE person_id = $1', [personId]))[0]!.name;

/** Persons p<from>..p<to-1>, each with an email and a visitor, in batches of 50 events. */
async function persons(from: number, to: number): Promise<void> {
  for (let start = from; start < to; start += 50) {
    const batch = Array.from({ length: Math.min(50, to - start) }, (_, i) => {
      const n = start + i;
      return { event_name: 'seen', external_id: `p${n}`, email: `p${n}@example.com`, visitor_id: `v${n}` };
    });
    await ok('/v1/events', { batch });
  }
}

// The cache is one per store, across workspaces, and these tests resize it: an app each.
describe('identity cache', () => {
  beforeEach(async () => { t = await startTestApp({ at: AT }); });
  afterEach(() => t.close());

  it('stays at its bound of entries after many distinct persons', async () => {
    const cache = t.stores.control.caches.identities;
    cache.resize(100);
    await persons(0, 400);
    // Each person is 3 keys (external id, email, person key) and 1 visitor: 1,600 seen, 100 kept.
    expect(cache.size).toBe(100);
  });

  it('resolves identifiers it has evicted to the same person, from the store', async () => {
    const cache = t.stores.control.caches.identities;
    cache.resize(40);
    const first = await ok('/v1/persons', { external_id: 'early', email: 'early@example.com', visitor_id: 'v_early', name: 'Ada' });
    await persons(0, 100);
    const held = [...cache.records()];
    expect(held).toHaveLength(40);
    expect(held.some((r) => 'person_id' in r && r.person_id === first.person_id)).toBe(false);
    expect(held.some((r) => 'visitor_id' in r && r.visitor_id === 'v_early')).toBe(false);

    expect((await ok('/v1/events', { event_name: 'back', external_id: 'early' })).person_id).toBe(first.person_id);
    expect((await ok('/v1/events', { event_name: 'back', email: 'Early@Example.com' })).person_id).toBe(first.person_id);
    expect((await ok('/v1/events', { event_name: 'back', visitor_id: 'v_early' })).person_id).toBe(first.person_id);
    expect(Number((await t.store.query('SELECT count(*) AS n FROM persons WHERE external_id = $1 OR email = $2', ['early', 'early@example.com']))[0]!.n)).toBe(1);
  });

  it('keeps its records frozen, and a batch that changes one stores a copy and leaves the kept one as it was', async () => {
    const cache = t.stores.control.caches.identities;
    await ok('/v1/events', { event_name: 'seen', visitor_id: 'v_anon' });
    const anonymous = [...cache.records()].find((r) => 'visitor_id' in r && r.visitor_id === 'v_anon')!;
    expect(anonymous).toMatchObject({ person_key: null, anonymous_events: true });
    expect(Object.isFrozen(anonymous)).toBe(true);
    const { person_id } = await ok('/v1/events', { event_name: 'signed_up', external_id: 'frozen', visitor_id: 'v_anon' });
    // The batch linked the visitor on a copy: the record it read from the cache is unchanged.
    expect(anonymous).toMatchObject({ person_key: null, anonymous_events: true });
    const linked = [...cache.records()].find((r) => 'visitor_id' in r && r.visitor_id === 'v_anon')!;
    expect(linked).not.toBe(anonymous);
    expect(Object.isFrozen(linked)).toBe(true);
    expect((await ok('/v1/events', { event_name: 'back', visitor_id: 'v_anon' })).person_id).toBe(person_id);
    for (const record of cache.records()) expect(Object.isFrozen(record)).toBe(true);
  });

  it('holds keys, never traits or names, after trait-heavy updates', async () => {
    const cache = t.stores.control.caches.identities;
    const heavy = (n: number) => ({ [`t${n}`]: 'x'.repeat(INGEST_LIMITS.traitsBytes - 100) });
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) {
      ids.push((await ok('/v1/persons', { external_id: `h${n}`, email: `h${n}@example.com`, visitor_id: `hv${n}`, name: `Name ${n}`, traits: heavy(n) })).person_id);
      await ok('/v1/events', { event_name: 'e', external_id: `h${n}`, traits: { plan: 'pro' } });
    }
    const held = [...cache.records()];
    expect(held.length).toBeGreaterThanOrEqual(80);
    for (const record of held) {
      expect(Object.keys(record).sort()).toSatisfy((keys: string[]) =>
        ['email,external_id,person_id,person_key', 'anonymous_events,person_key,visitor_id,visitor_key'].includes(keys.join(',')));
      expect(JSON.stringify(record).length).toBeLessThan(200);
    }
    // The traits and names are in the store, merged.
    expect(await traitsOf(ids[7]!)).toEqual({ ...heavy(7), plan: 'pro' });
    expect(await nameOf(ids[7]!)).toBe('Name 7');
  });
});

describe('the identity cache\'s eviction', () => {
  const person = (n: number) => ({ person_key: n, person_id: `per_${n}`, external_id: `e${n}`, email: null });

  it('keeps an identifier used at least once every half of its bound, however many others pass, and evicts the unused', () => {
    const cache = new IdentityCache(8);
    cache.remember('ws', [person(0)], []);
    for (let n = 1; n <= 100; n++) {
      cache.remember('ws', [person(n)], []);
      expect(cache.person('ws', 'external_id', 'e0')?.person_id).toBe('per_0');
      expect(cache.size).toBeLessThanOrEqual(8);
    }
    expect(cache.person('ws', 'external_id', 'e1')).toBeUndefined();
    expect(cache.person('ws', 'person_key', 0)).toBeUndefined();
    expect(cache.person('ws', 'external_id', 'e100')?.person_key).toBe(100);
  });
});

describe('the DuckDB identifier lookups', () => {
  it('scan the table whatever two-column index exists, so none is kept for them', async () => {
    const app = await startTestApp({ engine: 'duckdb', at: AT });
    try {
      const indexes = await app.store.query(`SELECT index_name FROM duckdb_indexes() WHERE table_name IN ('persons', 'visitors') ORDER BY index_name`);
      expect(indexes.map((i) => i.index_name)).toEqual(['persons_by_key', 'visitors_by_key', 'visitors_by_person']);
      // Were DuckDB to read such an index (a later version), the lookup's plan would show it.
      for (const n of [1, 2, 3]) await app.post('/v1/persons', { external_id: `i${n}`, email: `i${n}@example.com` });
      await app.store.query('CREATE INDEX probe_by_email ON persons (workspace_id, email)');
      const [plan] = await app.store.query(`EXPLAIN SELECT person_key FROM persons WHERE workspace_id = $1 AND email IN (SELECT unnest(CAST(CAST($2 AS JSON) AS VARCHAR[])))`,
        [app.ws.workspace_id, JSON.stringify(['i2@example.com'])]);
      expect(String(plan!.explain_value)).toContain('Sequential Scan');
      expect(String(plan!.explain_value)).not.toContain('Index Scan');
    } finally {
      await app.close();
    }
  });
});

describe('traits merged by the store', () => {
  beforeAll(async () => { t = await startTestApp({ at: AT }); });
  beforeEach(() => t.freshWorkspace());
  afterAll(() => t.close());

  it('merges the traits of several events of one batch, in order, onto the stored ones', async () => {
    const { person_id } = await ok('/v1/persons', { external_id: 'm', traits: { a: 0, c: { deep: 1 }, keep: true } });
    await ok('/v1/events', { batch: [
      { event_name: 'e', external_id: 'm', traits: { a: 1, c: { other: 2 } } },
      { event_name: 'e', external_id: 'm', traits: { a: 2, b: null } },
      { event_name: 'e', external_id: 'm' },
    ] });
    expect(await traitsOf(person_id)).toEqual({ a: 2, c: { other: 2 }, keep: true, b: null });
  });

  it('keeps a person\'s name and email when a later update sends neither', async () => {
    const { person_id } = await ok('/v1/persons', { external_id: 'n', email: 'n@example.com', name: 'Grace' });
    await ok('/v1/persons', { external_id: 'n', traits: { plan: 'pro' } });
    const row = (await t.store.query('SELECT name, email FROM persons WHERE person_id = $1', [person_id]))[0];
    expect(row).toEqual({ name: 'Grace', email: 'n@example.com' });
    await ok('/v1/persons', { external_id: 'n', name: 'Grace Hopper' });
    expect(await nameOf(person_id)).toBe('Grace Hopper');
  });

  it('replaces stored traits that are not an object (an import may bring any JSON)', async () => {
    const { person_id } = await ok('/v1/persons', { external_id: 'imp' });
    await t.store.query(`UPDATE persons SET traits = CAST('[1, 2]' AS JSON) WHERE person_id = $1`, [person_id]);
    await ok('/v1/persons', { external_id: 'imp', traits: { plan: 'pro' } });
    expect(await traitsOf(person_id)).toEqual({ plan: 'pro' });
  });
});
