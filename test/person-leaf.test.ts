// The person leaf through the public API, on every engine: traits sent to POST /v1/persons and
// POST /v1/events, then criteria over them compiled (docs/criteria.md, "Leaves").

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { planCriteria, validateCriteria } from '../src/criteria/index.js';
import { Store } from '../src/store/duckdb/db.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { MIGRATIONS } from '../src/store/duckdb/migrations.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';

const AT = new Date('2026-06-15T12:00:00Z');
const ever = { kind: 'ever' };

let t: TestApp;

const post = async (url: string, body: unknown) => {
  const res = await t.post(url, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const person = (filter?: Record<string, unknown>) => ({ source: 'person', ...(filter ? { filter } : {}) });
const envelope = (root: unknown) => ({ version: 1, root });

/** The estimated count of a valid criteria tree. */
async function count(root: unknown): Promise<number> {
  const body = (await t.compile(envelope(root))).json();
  expect(body, JSON.stringify(body.errors)).toMatchObject({ valid: true, estimated_count: { is_estimate: false } });
  return body.estimated_count.count;
}

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => {
    t = await startTestApp({ engine, at: AT });
  });
  beforeEach(() => t.freshWorkspace());
  afterAll(() => t.close());

  it('counts the persons whose current traits match every predicate, from POST /v1/persons and POST /v1/events, as a leaf without a window', async () => {
    await post('/v1/persons', { external_id: 'ada', traits: { plan: 'pro', seats: 5 } });
    await post('/v1/persons', { external_id: 'bo', traits: { plan: 'free', seats: 5 } });
    await post('/v1/events', { event_name: 'upgrade', user_id: 'cy', traits: { plan: 'pro', seats: 1 } });
    const res = await t.compile(envelope(person({ 'traits.plan': { op: '=', value: 'pro' } })));
    expect(res.json()).toEqual({ valid: true, is_time_windowed: false, estimated_count: { count: 2, is_estimate: false, hit_limit: false } });
    expect(await count(person({ 'traits.plan': { op: '=', value: 'pro' }, 'traits.seats': { op: '>=', value: 5 } }))).toBe(1);
    expect(await count(person({ 'traits.plan': { op: 'in', value: ['PRO', 'free'] }, 'traits.seats': { op: '<', value: 10 } }))).toBe(1);
    expect(await count(person({ 'traits.plan': { op: 'starts_with', value: 'PR' } }))).toBe(2);
  });

  it('answers unknown_field at its path for a trait path never seen, until a person carries it', async () => {
    await post('/v1/persons', { external_id: 'ada', traits: { plan: 'pro' } });
    const res = (await t.compile(envelope({ op: 'and', children: [person({ 'traits.plan': { op: 'is_set' } }), person({ 'traits.seats': { op: '>', value: 1 } })] }))).json();
    expect(res).toMatchObject({ valid: false, code: 'unknown_field', path: '/root/children/1/filter/traits.seats' });
    expect(res.errors).toHaveLength(1);
    // Traits of an unlinked visitor are dropped: not a definition either.
    expect(await post('/v1/persons', { visitor_id: 'v_anon', traits: { seats: 3 } })).toEqual({ person_id: null });
    expect((await t.compile(envelope(person({ 'traits.seats': { op: 'is_set' } })))).json()).toMatchObject({ valid: false, code: 'unknown_field' });
    await post('/v1/events', { event_name: 'seat_added', email: 'bo@example.com', traits: { seats: 3 } });
    expect(await count(person({ 'traits.seats': { op: '>', value: 1 } }))).toBe(1);
  });

  it('addresses nested objects by dotted keys, and an object-valued key is set', async () => {
    await post('/v1/persons', { external_id: 'ada', traits: { company: { name: 'Acme', size: 40, hq: { country: 'FR' } } } });
    await post('/v1/persons', { external_id: 'bo', traits: { company: { name: 'Zeta', size: 4 } } });
    await post('/v1/persons', { external_id: 'cy', traits: { company: 'Acme' } });
    expect(await count(person({ 'traits.company.size': { op: '>', value: 10 } }))).toBe(1);
    expect(await count(person({ 'traits.company.hq.country': { op: '=', value: 'FR' } }))).toBe(1);
    expect(await count(person({ 'traits.company.name': { op: 'contains', value: 'ACME' } }))).toBe(1);
    expect(await count(person({ 'traits.company': { op: 'is_set' } }))).toBe(3);
    expect(await count(person({ 'traits.company.name': { op: 'is_not_set' } }))).toBe(1);
  });

  it('types values strictly: a number never equals a string, a boolean never equals its text, null and absent are absent', async () => {
    await post('/v1/persons', { external_id: 'number', traits: { seats: 10, beta: true } });
    await post('/v1/persons', { external_id: 'text', traits: { seats: '10', beta: 'true' } });
    await post('/v1/persons', { external_id: 'null', traits: { seats: null, beta: null } });
    await post('/v1/persons', { external_id: 'absent', traits: { plan: 'pro' } });
    expect(await count(person({ 'traits.seats': { op: '=', value: 10 } }))).toBe(1);
    expect(await count(person({ 'traits.seats': { op: '=', value: '10' } }))).toBe(1);
    expect(await count(person({ 'traits.seats': { op: '>', value: 9 } }))).toBe(1);
    expect(await count(person({ 'traits.seats': { op: 'in', value: [10, '10'] } }))).toBe(2);
    expect(await count(person({ 'traits.seats': { op: 'contains', value: '1' } }))).toBe(1);
    expect(await count(person({ 'traits.beta': { op: '=', value: true } }))).toBe(1);
    expect(await count(person({ 'traits.seats': { op: 'is_set' } }))).toBe(2);
    expect(await count(person({ 'traits.seats': { op: 'is_not_set' } }))).toBe(2);
    expect(await count(person({ 'traits.seats': { op: '!=', value: 10 } }))).toBe(3);
  });

  it('reads current traits: a later update replaces a top-level key and keeps the others, an identifier change keeps them', async () => {
    await post('/v1/persons', { external_id: 'ada', traits: { plan: 'free', seats: 2 } });
    expect(await count(person({ 'traits.plan': { op: '=', value: 'pro' } }))).toBe(0);
    await post('/v1/events', { event_name: 'upgrade', user_id: 'ada', traits: { plan: 'pro' } });
    expect(await count(person({ 'traits.plan': { op: '=', value: 'pro' }, 'traits.seats': { op: '=', value: 2 } }))).toBe(1);
    expect(await count(person({ 'traits.plan': { op: '=', value: 'free' } }))).toBe(0);
    // An email recorded on the person (no traits sent) leaves its traits as they were.
    await post('/v1/persons', { external_id: 'ada', email: 'ada@example.com' });
    expect(await count(person({ 'traits.plan': { op: '=', value: 'pro' } }))).toBe(1);
    await post('/v1/persons', { external_id: 'ada', traits: { plan: null } });
    expect(await count(person({ 'traits.plan': { op: 'is_not_set' }, 'traits.seats': { op: 'is_set' } }))).toBe(1);
  });

  it('counts every person for an empty filter, and never an anonymous profile, whatever the ops', async () => {
    await post('/v1/persons', { external_id: 'ada', traits: { plan: 'pro' } });
    await post('/v1/persons', { email: 'bo@example.com' });
    await post('/v1/events', { event_name: 'signup', visitor_id: 'v_anon' });
    const signup = { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: ever } };
    expect(await count(person())).toBe(2);
    expect(await count(person({}))).toBe(2);
    expect(await count(person({ 'traits.plan': { op: 'is_not_set' } }))).toBe(1);
    expect(await count(person({ 'traits.plan': { op: '!=', value: 'pro' } }))).toBe(1);
    expect(await count({ op: 'or', children: [signup, person()] })).toBe(3);
    expect(await count({ op: 'and', children: [signup, person({ 'traits.plan': { op: 'is_not_set' } })] })).toBe(0);
  });

  it('composes with and, or, an anchored not and a did_not sibling, and lists the members', async () => {
    await post('/v1/persons', { external_id: 'ada', traits: { plan: 'pro', beta: true } });
    await post('/v1/persons', { external_id: 'bo', traits: { plan: 'pro', beta: false } });
    await post('/v1/persons', { external_id: 'cy', traits: { plan: 'free' } });
    await post('/v1/events', { event_name: 'churn_survey', user_id: 'bo', timestamp: '2026-06-10T00:00:00Z' });
    const pro = person({ 'traits.plan': { op: '=', value: 'pro' } });
    const beta = person({ 'traits.beta': { op: '=', value: true } });
    const surveyed = { source: 'product_event', name: 'churn_survey', occurrence: { op: 'did_not', count: null, window: { kind: 'last_n_days', n: 30 } } };
    expect(await count({ op: 'and', children: [pro, { op: 'not', child: beta }] })).toBe(1);
    expect(await count({ op: 'and', children: [person(), { op: 'not', child: pro }] })).toBe(1);
    expect(await count({ op: 'or', children: [beta, person({ 'traits.plan': { op: '=', value: 'free' } })] })).toBe(2);
    const res = await t.compile(envelope({ op: 'and', children: [pro, surveyed] }));
    // The did_not leaf's window makes the tree time-windowed; the person leaf does not.
    expect(res.json()).toMatchObject({ valid: true, is_time_windowed: true, estimated_count: { count: 1 } });
    expect((await t.compile(envelope({ op: 'not', child: pro }))).json()).toMatchObject({ valid: false, code: 'unanchored_negation', path: '/root' });

    const validated = validateCriteria(envelope({ op: 'and', children: [pro, { op: 'not', child: beta }] }), await t.stores.analytics.propertyCatalog(t.ws.workspace_id));
    if (!validated.ok) throw new Error(JSON.stringify(validated.errors));
    expect(await t.stores.analytics.listMembers(planCriteria(validated.criteria, AT), t.ws.workspace_id)).toEqual([
      { person_id: expect.stringMatching(/^per_/), visitor_id: null, external_id: 'bo', email: null },
    ]);
  });
});

describe('trait definitions', () => {
  const definitions = async (store: Store, ws: string) =>
    (await store.query('SELECT path FROM trait_definitions WHERE workspace_id = $1 ORDER BY path', [ws])).map((r) => r.path);

  it('are filled from the traits stored before them by the migration that adds them', async () => {
    const store = await Store.open(':memory:');
    try {
      await store.transaction(async (tx) => {
        await tx.run(`INSERT INTO persons (workspace_id, person_key, person_id, traits, created_at, updated_at) VALUES
          ('w1', 1, 'p1', '{"plan":"pro","company":{"size":4,"hq":{"city":"Paris"}},"tags":[{"x":1}],"gone":null}', now(), now()),
          ('w1', 2, 'p2', '{"plan":{"tier":1}}', now(), now()), ('w1', 3, 'p3', NULL, now(), now()), ('w2', 4, 'p4', '"pro"', now(), now())`);
        await tx.run('DROP TABLE trait_definitions');
        await tx.run(MIGRATIONS.find((m) => m.includes('CREATE TABLE trait_definitions'))!);
      });
      expect(await definitions(store, 'w1')).toEqual(['company', 'company.hq', 'company.hq.city', 'company.size', 'gone', 'plan', 'plan.tier', 'tags']);
      expect(await definitions(store, 'w2')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('are recorded by an import of persons', async () => {
    const store = await Store.open(':memory:');
    try {
      await importDataset(store, 'w1', { persons: [
        { person_id: 'p1', external_id: null, email: null, name: null, traits: '{"plan":"pro","company":{"size":4}}', created_at: AT },
        { person_id: 'p2', external_id: null, email: null, name: null, traits: null, created_at: AT },
      ] });
      expect(await definitions(store, 'w1')).toEqual(['company', 'company.size', 'plan']);
    } finally {
      await store.close();
    }
  });
});
