import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { planCriteria, validateCriteria } from '../src/criteria/index.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { controlRows, eventsByName, storedCount, storedRows } from './support/stored.js';

let t: TestApp;

const person = async (body: unknown) => {
  const res = await t.post('/v1/persons', body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().person_id as string | null;
};
const event = async (body: unknown) => {
  const res = await t.post('/v1/events', body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const personRow = async (personId: string) => {
  const rows = await controlRows(t, 'SELECT external_id, email, name, CAST(traits AS VARCHAR) AS traits FROM persons WHERE person_id = $1', [personId]);
  return rows[0] ? { ...rows[0], traits: JSON.parse(rows[0].traits as string) } : undefined;
};
const linkOf = async (visitorId: string) => {
  const rows = await controlRows(t, `SELECT p.person_id FROM visitors v LEFT JOIN persons p ON p.person_key = v.person_key
    WHERE v.workspace_id = $1 AND v.visitor_id = $2`, [t.ws.workspace_id, visitorId]);
  return rows[0]?.person_id ?? null;
};
const count = async (table: 'persons' | 'events' | 'event_messages') => (table === 'events' ? storedCount(t, 'events')
  : Number((await controlRows(t, `SELECT count(*) AS n FROM ${table} WHERE workspace_id = $1`, [t.ws.workspace_id]))[0]!.n));

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => {
    t = await startTestApp({ engine, at: new Date('2026-06-15T12:00:00Z') });
  });
  beforeEach(() => t.freshWorkspace());
  afterAll(() => t.close());

  describe('identity resolution (the spec\'s identifier table)', () => {
    it('finds or creates a person by external_id, and finds the same one again', async () => {
      const first = await person({ external_id: 'u1' });
      expect(first).toMatch(/^per_/);
      expect(await person({ user_id: 'u1' })).toBe(first);
      expect(await count('persons')).toBe(1);
    });

    it('stores an integer external_id as its decimal string', async () => {
      const id = await person({ external_id: 12345 });
      expect(await personRow(id!)).toMatchObject({ external_id: '12345' });
      expect(await person({ user_id: '12345' })).toBe(id);
    });

    it('finds or creates by email when external_id is absent, trimming and lowercasing it', async () => {
      const id = await person({ email: '  Ada@Example.COM ' });
      expect(await person({ email: 'ada@example.com' })).toBe(id);
      expect(await personRow(id!)).toMatchObject({ email: 'ada@example.com', external_id: null });
    });

    it('lets external_id win over email, and records a free email on that person', async () => {
      const byEmail = await person({ email: 'taken@example.com' });
      const byId = await person({ external_id: 'u2', email: 'taken@example.com' });
      expect(byId).not.toBe(byEmail);
      expect(await personRow(byId!)).toMatchObject({ email: null });
      const withFree = await person({ external_id: 'u3', email: 'free@example.com' });
      expect(await personRow(withFree!)).toMatchObject({ email: 'free@example.com' });
    });

    it('resolves a visitor alone to no person and drops its traits when it is unlinked', async () => {
      expect(await person({ visitor_id: 'v_anon', traits: { plan: 'pro' } })).toBeNull();
      expect(await count('persons')).toBe(0);
    });

    it('links a visitor sent with a winning identifier, then resolves the visitor alone to that person', async () => {
      const id = await person({ external_id: 'u4', visitor_id: 'v4' });
      expect(await linkOf('v4')).toBe(id);
      expect(await person({ tr_visitor_id: 'v4', traits: { seats: 3 } })).toBe(id);
      expect((await personRow(id!))?.traits).toEqual({ seats: 3 });
    });

    it('moves a visitor to the latest person it is sent with', async () => {
      const a = await person({ external_id: 'a', visitor_id: 'shared' });
      const b = await person({ email: 'b@example.com', visitor_id: 'shared' });
      expect(a).not.toBe(b);
      expect(await linkOf('shared')).toBe(b);
    });

    it('rejects conflicting aliases and a body without identifiers with 400 naming the field', async () => {
      for (const [body, field] of [
        [{ external_id: 'x', user_id: 'y' }, '/user_id'],
        [{ visitor_id: 'x', tr_visitor_id: 'y' }, '/tr_visitor_id'],
        [{ traits: { a: 1 } }, '/external_id'],
        [{ external_id: 'x', traits: 'not an object' }, '/traits'],
        [{ external_id: '' }, '/external_id'],
        [{ external_id: 'x'.repeat(257) }, '/external_id'],
      ] as const) {
        const res = await t.post('/v1/persons', body);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ error: 'invalid_request', errors: expect.arrayContaining([expect.objectContaining({ field })]) });
      }
      expect(await count('persons')).toBe(0);
    });

    it('accepts aliases that agree', async () => {
      expect(await person({ external_id: 'same', user_id: 'same' })).toMatch(/^per_/);
    });
  });

  describe('traits', () => {
    it('merges shallowly: keys sent are upserted, keys not sent are kept, null is stored as null', async () => {
      const id = await person({ external_id: 'u', traits: { plan: 'free', company: { size: 10 }, seats: 1 } });
      await person({ external_id: 'u', traits: { plan: 'pro', company: { name: 'Acme' }, seats: null } });
      expect((await personRow(id!))?.traits).toEqual({ plan: 'pro', company: { name: 'Acme' }, seats: null });
    });

    it('takes traits from events, never properties', async () => {
      const res = await event({ event_name: 'upgrade', external_id: 'u', traits: { plan: 'team' }, properties: { amount: 10 } });
      expect((await personRow(res.person_id))?.traits).toEqual({ plan: 'team' });
    });
  });

  describe('events', () => {
    it('answers a single event with its id and person', async () => {
      const res = await event({ event_name: 'signup', email: 'e@example.com' });
      expect(res).toEqual({ event_id: expect.stringMatching(/^evt_/), person_id: expect.stringMatching(/^per_/), duplicate: false });
    });

    it('stores an unlinked visitor\'s event with person_id null, and counts it for the person once linked', async () => {
      const anon = await event({ event_name: 'view_item', visitor_id: 'v_later', properties: { item: { category: 'books' } } });
      expect(anon.person_id).toBeNull();
      const criteria = { version: 1, root: { source: 'product_event', name: 'view_item', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };
      const before = await t.compile(criteria);
      expect(before.json().estimated_count.count).toBe(1);
      const id = await person({ external_id: 'later', visitor_id: 'v_later' });
      await event({ event_name: 'view_item', external_id: 'later' });
      // Two events, one profile: the visitor's event moved to the person with the link.
      expect(await count('events')).toBe(2);
      expect((await t.compile(criteria)).json().estimated_count.count).toBe(1);
      expect(id).toMatch(/^per_/);
    });

    it('moves a relinked visitor\'s events and page views to its latest person, in counts and member lists', async () => {
      await event({ event_name: 'view_item', visitor_id: 'rv' });
      expect((await t.post('/v1/pageviews', { visitor_id: 'rv', url: 'https://shop.example/', referrer: 'https://chatgpt.com/' }, t.ws.publishable_key)).statusCode).toBe(200);
      await person({ external_id: 'first', visitor_id: 'rv' });
      const latest = await person({ external_id: 'latest', email: 'Latest@example.com', visitor_id: 'rv' });
      const ever = { op: 'did', count: null, window: { kind: 'ever' } };
      for (const root of [{ source: 'product_event', name: 'view_item', occurrence: ever }, { source: 'pageview', occurrence: ever }]) {
        const validated = validateCriteria({ version: 1, root }, await t.stores.analytics.propertyCatalog(t.ws.workspace_id));
        if (!validated.ok) throw new Error(JSON.stringify(validated.errors));
        const plan = planCriteria(validated.criteria, new Date('2026-06-15T12:00:00Z'));
        expect(await t.stores.analytics.countWithin(plan, t.ws.workspace_id, 5000), root.source).toBe(1);
        expect(await t.stores.analytics.listMembers(plan, t.ws.workspace_id), root.source).toEqual([
          { person_id: latest, visitor_id: null, external_id: 'latest', email: 'latest@example.com' },
        ]);
      }
    });

    it('counts for its person the events a visitor sends alone after it was stored another way, in counts and member lists', async () => {
      // Each visitor is stored before its first event alone: by a page view (linked later), by a
      // person's link, by an identified event; its events alone then follow the link.
      expect((await t.post('/v1/pageviews', { visitor_id: 'v_seen', url: 'https://shop.example/' }, t.ws.publishable_key)).statusCode).toBe(200);
      await event({ event_name: 'feature_used', visitor_id: 'v_seen' });
      const seen = await person({ external_id: 'seen', visitor_id: 'v_seen' });
      const linked = await person({ external_id: 'linked', visitor_id: 'v_linked' });
      await event({ event_name: 'feature_used', visitor_id: 'v_linked' });
      await event({ event_name: 'signup', external_id: 'identified', visitor_id: 'v_identified' });
      await event({ batch: [{ event_name: 'feature_used', visitor_id: 'v_identified' }, { event_name: 'feature_used', visitor_id: 'v_linked' }] });
      await event({ event_name: 'feature_used', visitor_id: 'v_identified' });
      const validated = validateCriteria({ version: 1, root: { source: 'product_event', name: 'feature_used', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
        await t.stores.analytics.propertyCatalog(t.ws.workspace_id));
      if (!validated.ok) throw new Error(JSON.stringify(validated.errors));
      const plan = planCriteria(validated.criteria, new Date('2026-06-15T12:00:00Z'));
      expect(await t.stores.analytics.countWithin(plan, t.ws.workspace_id, 5000)).toBe(3);
      const members = await t.stores.analytics.listMembers(plan, t.ws.workspace_id);
      expect(members.map((m) => [m.person_id, m.visitor_id]).sort()).toEqual(
        [[seen, null], [linked, null], [(await event({ event_name: 'signup', external_id: 'identified' })).person_id, null]].sort());
    });

    it('stores a batch whole, answering each result in order', async () => {
      const res = await event({ batch: [
        { event_name: 'a', external_id: 'b1' },
        { event_name: 'b', external_id: 'b1', timestamp: '2026-06-01T10:00:00+02:00' },
        { event_name: 'c', visitor_id: 'bv' },
      ] });
      expect(res.accepted).toBe(3);
      expect(res.results.map((r: { person_id: string | null }) => r.person_id)).toEqual([res.results[0].person_id, res.results[0].person_id, null]);
      const stored = await storedRows(t, 'events', ['event_name', 'ts'], ['ts']);
      expect(stored.find((e) => e.event_name === 'b')?.ts).toEqual(new Date('2026-06-01T08:00:00Z'));
    });

    it('resolves later events of a batch through links made earlier in it', async () => {
      const res = await event({ batch: [{ event_name: 'login', external_id: 'x1', visitor_id: 'xv' }, { event_name: 'click', visitor_id: 'xv' }] });
      expect(res.results[1].person_id).toBe(res.results[0].person_id);
    });

    it('rejects a batch with one bad event whole, naming the index and reason of every bad one', async () => {
      const res = await t.post('/v1/events', { batch: [
        { event_name: 'ok', external_id: 'u' },
        { event_name: '', external_id: 'u' },
        { event_name: 'ok', external_id: 'u', timestamp: 'yesterday' },
        { event_name: 'ok' },
      ] });
      expect(res.statusCode).toBe(400);
      const errors = res.json().errors as { index: number; field: string }[];
      expect(errors.map((e) => [e.index, e.field])).toEqual([[1, '/batch/1/event_name'], [2, '/batch/2/timestamp'], [3, '/batch/3/external_id']]);
      expect(await count('events')).toBe(0);
      expect(await count('persons')).toBe(0);
    });

    it('rejects a batch over 500 events', async () => {
      const batch = Array.from({ length: 501 }, () => ({ event_name: 'e', external_id: 'u' }));
      expect((await t.post('/v1/events', { batch })).statusCode).toBe(400);
    });

    it('stores a repeated message_id once, within a batch and across requests', async () => {
      const first = await event({ batch: [
        { event_name: 'pay', external_id: 'u', message_id: 'm1' },
        { event_name: 'pay', external_id: 'u', message_id: 'm1' },
      ] });
      expect(first.accepted).toBe(1);
      const again = await event({ event_name: 'pay', external_id: 'u', message_id: 'm1' });
      expect(again.duplicate).toBe(true);
      expect(await count('events')).toBe(1);
    });

    it('stores the rest of a group once when one of its message ids was seen before, and nothing of its first attempt', async () => {
      await event({ event_name: 'pay', external_id: 'u', message_id: 'seen' });
      const [mixed, fresh] = await Promise.all([
        event({ batch: [{ event_name: 'pay', external_id: 'u2', message_id: 'new1' }, { event_name: 'pay', external_id: 'u3', message_id: 'seen' }] }),
        event({ batch: [{ event_name: 'pay', external_id: 'u4', message_id: 'new2' }] }),
      ]);
      expect(mixed.results.map((r: { duplicate: boolean }) => r.duplicate)).toEqual([false, true]);
      expect(mixed.accepted).toBe(1);
      expect(fresh.results[0].duplicate).toBe(false);
      expect(await count('events')).toBe(3);
      expect(await count('event_messages')).toBe(3);
      // u3's event was a duplicate: no person made for it.
      expect(await count('persons')).toBe(3);
    });

    it('keeps property definitions current, nested paths included, per event name', async () => {
      await event({ event_name: 'purchase', external_id: 'u', properties: { amount: 5, item: { category: 'books' } } });
      const ok = await t.compile({ version: 1, root: { source: 'product_event', name: 'purchase',
        filter: { 'payload.item.category': { op: '=', value: 'books' }, 'payload.amount': { op: '>=', value: 5 } },
        occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } });
      expect(ok.json()).toMatchObject({ valid: true, estimated_count: { count: 1 } });
      const other = await t.compile({ version: 1, root: { source: 'product_event', name: 'signup',
        filter: { 'payload.amount': { op: 'is_set' } }, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } });
      expect(other.json()).toMatchObject({ valid: false, code: 'unknown_field' });
    });
  });

  describe('strings with a lone surrogate (reachable through a \\ud800 escape)', () => {
    it('stores them with U+FFFD in its place, readable to JSON filters and identity lookups', async () => {
      const res = await event({ batch: [
        { event_name: 'sur', user_id: 'u\ud800', properties: { k: 'x\udc00y', ['n\ud800']: 1 } },
        { event_name: 'sur', user_id: 'u\ufffd', visitor_id: 'v\udbff' },
      ] });
      expect(res.results[1].person_id).toBe(res.results[0].person_id);
      expect(await person({ external_id: 'u\ud800', visitor_id: 'v\udbff', traits: { ['t\udc00']: 'a\ud800' } })).toBe(res.results[0].person_id);
      const count = async (filter: Record<string, unknown>) => (await t.compile({ version: 1, root: { source: 'product_event', name: 'sur', filter,
        occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } })).json();
      expect(await count({ 'payload.k': { op: '=', value: 'x\ufffdy' } })).toMatchObject({ valid: true, estimated_count: { count: 1 } });
      expect(await count({ 'payload.n\ufffd': { op: 'is_set' } })).toMatchObject({ valid: true, estimated_count: { count: 1 } });
    });
  });

  describe('concurrent batches (group commit)', () => {
    it('answers each of many concurrent batches with its own results, in order, storing each message once', async () => {
      const requests = Array.from({ length: 8 }, (_, r) => ({ batch: Array.from({ length: 50 }, (_, i) => ({
        event_name: `r${r}`, external_id: `u${i % 5}`, visitor_id: `cv${r}_${i % 3}`, message_id: `m${(r * 50 + i) % 300}`,
      })) }));
      const answers = await Promise.all(requests.map((body) => t.post('/v1/events', body)));
      const results = answers.map((res) => {
        expect(res.statusCode).toBe(200);
        return res.json().results as { event_id: string | null; duplicate: boolean }[];
      });
      results.forEach((list) => expect(list).toHaveLength(50));
      // 400 events over message ids m0..m299: each id stored exactly once, whichever request won it.
      const winners = new Map<string, number>();
      results.forEach((list, r) => list.forEach((res, i) => {
        if (!res.duplicate) {
          const id = requests[r]!.batch[i]!.message_id;
          expect(winners.has(id), id).toBe(false);
          winners.set(id, r);
        }
      }));
      expect(winners.size).toBe(300);
      // Each request's answers match what was stored under its event name.
      const stored = await eventsByName(t);
      results.forEach((list, r) => expect(stored.get(`r${r}`) ?? 0).toBe(list.filter((x) => !x.duplicate).length));
      expect(await count('persons')).toBe(5);
    });

    it('rejects an invalid batch without touching the concurrent valid ones', async () => {
      const [bad, good] = await Promise.all([
        t.post('/v1/events', { batch: [{ event_name: 'x', external_id: 'a' }, { event_name: '' }] }),
        t.post('/v1/events', { batch: [{ event_name: 'y', external_id: 'b' }] }),
      ]);
      expect(bad.statusCode).toBe(400);
      expect(good.statusCode).toBe(200);
      expect(await count('events')).toBe(1);
    });
  });

  describe('visitor link hook', () => {
    it('reports each new or moved visitor link once, inside the transaction that makes it', async () => {
      const seen: string[] = [];
      const { Ingest } = await import('../src/ingest/ingest.js');
      const ingest = new Ingest(t.stores);
      ingest.onVisitorLinked(async (_tx, links) => { seen.push(...links.map((l) => l.visitorId)); });
      await ingest.person(t.ws.workspace_id, { external_id: 'h', visitor_id: 'hv' });
      await ingest.person(t.ws.workspace_id, { external_id: 'h', visitor_id: 'hv' });
      await ingest.events(t.ws.workspace_id, [{ event_name: 'e', email: 'other@example.com', visitor_id: 'hv' }]);
      expect(seen).toEqual(['hv', 'hv']);
    });
  });

  describe('identity cache (known people resolve without a lookup)', () => {
    it('forgets what a rolled-back batch resolved, so the next batch creates the person for real', async () => {
      const { Ingest } = await import('../src/ingest/ingest.js');
      const failing = new Ingest(t.stores);
      failing.onVisitorLinked(async () => { throw new Error('listener failed'); });
      await expect(failing.events(t.ws.workspace_id, [{ event_name: 'e', external_id: 'rb', visitor_id: 'rbv' }])).rejects.toThrow('listener failed');
      expect(await count('persons')).toBe(0);
      expect(await count('events')).toBe(0);

      const { person_id } = await event({ event_name: 'e', external_id: 'rb', visitor_id: 'rbv' });
      expect(await personRow(person_id)).toMatchObject({ external_id: 'rb' });
      expect(await linkOf('rbv')).toBe(person_id);
      expect(await count('persons')).toBe(1);
    });

    it('sees a visitor linked by the payment webhook after the visitor was cached as anonymous', async () => {
      const { deliver, checkoutSession, notification } = await import('./support/stripe.js');
      expect((await event({ event_name: 'e', visitor_id: 'wv' })).person_id).toBeNull();
      const paid = await deliver(t, notification('checkout.session.completed', checkoutSession('cus_w', { tr_user_id: 'wu', tr_visitor_id: 'wv' })));
      expect(paid.statusCode, paid.body).toBe(200);
      const payer = await linkOf('wv');
      expect(payer).toMatch(/^per_/);
      expect((await event({ event_name: 'e', visitor_id: 'wv' })).person_id).toBe(payer);
      expect(await person({ external_id: 'wu' })).toBe(payer);
    });

    it('keeps traits merged across batches served from the cache', async () => {
      const id = await person({ external_id: 'tc', traits: { a: 1 } });
      await event({ event_name: 'e', external_id: 'tc', traits: { b: 2 } });
      await person({ external_id: 'tc', traits: { a: null } });
      expect((await personRow(id!))?.traits).toEqual({ a: null, b: 2 });
    });
  });
});
