// Person merges (decisions §12) on every engine layout: what moves, what `from`'s identifiers name
// afterwards on every ingest path, force, the merge record, audiences and their destinations, and
// the revenue of a person merged after paying.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beginMerge } from '../src/people/merge.js';
import { leaseOf } from '../src/store/control/leases.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { startReceiver } from './support/receiver.js';
import { controlRows, storedRows } from './support/stored.js';
import { checkoutSession, deliver, invoice, notification, nowS } from './support/stripe.js';

let t: TestApp;
const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
const did = (name: string) => ({ version: 1, root: { source: 'product_event', name, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } });
const count = async (criteria: unknown) => (await t.compile(criteria)).json().estimated_count.count as number;
const merge = (body: unknown) => t.post('/v1/persons/merge', body);
const person = async (externalId: string) => (await t.post('/v1/persons', { external_id: externalId })).json().person_id as string;

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => { t = await startTestApp({ engine }); });
  afterAll(async () => { await t.close(); });

  it('moves visitors, events and traits to into, and from\'s identifiers name into on every path afterwards', async () => {
    await t.freshWorkspace();
    await t.post('/v1/pageviews', { visitor_id: 'v-guest', url: 'https://shop.example/' });
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', email: 'guest@example.com', visitor_id: 'v-guest', traits: { plan: 'free', color: 'red' } },
      { event_name: 'signup', user_id: 'u-1', traits: { plan: 'pro' } },
    ] });
    expect(await count(did('signup'))).toBe(2);
    const res = await merge({ from: { email: 'guest@example.com' }, into: { external_id: 'u-1' } });
    expect(res.statusCode, res.body).toBe(200);
    const into = res.json().person_id;
    expect(res.json()).toMatchObject({ moved: { visitors: 1, customers: 0 } });
    expect(await count(did('signup'))).toBe(1);
    const people = (await get('/people?q=u-1')).json().data;
    expect(people).toEqual([expect.objectContaining({ person_id: into, external_id: 'u-1', email: 'guest@example.com' })]);
    const plan = (value: string) => ({ version: 1, root: { source: 'person', filter: { [`traits.${value.split('=')[0]}`]: { op: '=', value: value.split('=')[1] } } } });
    expect(await count(plan('plan=pro'))).toBe(1);
    expect(await count(plan('color=red'))).toBe(1);
    // The visitor, the email and the person_id of from all reach into now; nothing creates from again.
    const later = await t.post('/v1/events', { batch: [
      { event_name: 'visit', visitor_id: 'v-guest' }, { event_name: 'visit', email: 'guest@example.com' },
    ] });
    expect(later.json().results.map((r: { person_id: string }) => r.person_id)).toEqual([into, into]);
    expect((await t.post('/v1/persons', { email: 'GUEST@example.com', traits: { color: 'blue' } })).json().person_id).toBe(into);
    expect(await count(did('visit'))).toBe(1);
    expect(await count(plan('color=blue'))).toBe(1);
    const merges = (await get(`/v1/persons/${into}/merges`)).json();
    expect(merges).toMatchObject({ person_id: into, data: [{ into_person_id: into, forced: false, visitors: 1 }] });
    expect((await get(`/v1/persons/${merges.data[0].from_person_id}/merges`)).json().person_id).toBe(into);
  });

  it('needs force when both have an external_id; a forced merge keeps into\'s and from\'s external_id names into', async () => {
    await t.freshWorkspace();
    const [a, b] = [await person('ext-a'), await person('ext-b')];
    const refused = await merge({ from: { external_id: 'ext-a' }, into: { person_id: b } });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toBe('merge_conflict');
    expect((await merge({ from: { external_id: 'ext-a' }, into: { person_id: b }, force: true })).json().person_id).toBe(b);
    expect((await t.post('/v1/events', { event_name: 'signup', user_id: 'ext-a' })).json().person_id).toBe(b);
    // The people lookup finds b by a's identifiers, exactly.
    for (const q of ['ext-a', a]) expect((await get(`/people?q=${q}`)).json().data, q).toEqual([expect.objectContaining({ person_id: b, external_id: 'ext-b' })]);
    expect((await get('/people?q=xt-a')).json().data).toEqual([]);
    // Asked again (a retry): already one person, nothing recorded twice.
    const again = await merge({ from: { person_id: a }, into: { external_id: 'ext-b' }, force: true });
    expect(again.json()).toMatchObject({ person_id: b, merge_id: null });
    expect((await get(`/v1/persons/${b}/merges`)).json().data).toHaveLength(1);
    expect((await merge({ from: { external_id: 'nobody' }, into: { person_id: b } })).statusCode).toBe(404);
    expect((await merge({ from: { external_id: 'ext-b' }, into: { phone: '1' } })).statusCode).toBe(400);
  });

  it('a merge left pending after its first step (its process stopped) is finished by the finisher', async () => {
    await t.freshWorkspace();
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', email: 'left@example.com', visitor_id: 'v-left' }, { event_name: 'paid', email: 'left@example.com' },
      { event_name: 'signup', user_id: 'stays' },
    ] });
    // The first step only, under a lease already expired: as a process killed right after it leaves it.
    const begun = await beginMerge(t.stores, t.ws.workspace_id, { from: { email: 'left@example.com' }, into: { external_id: 'stays' } },
      new Date(), 'a-stopped-process', leaseOf(1));
    expect(begun.merge).not.toBeNull();
    const into = begun.person_id;
    expect((await get(`/v1/persons/${into}/merges`)).json().data).toEqual([expect.objectContaining({ state: 'pending', visitors: 1 })]);
    await t.app.privacy.merges.tick();
    expect((await get(`/v1/persons/${into}/merges`)).json().data).toEqual([expect.objectContaining({ state: 'done', visitors: 1 })]);
    expect(await count(did('signup'))).toBe(1);
    expect(await count(did('paid'))).toBe(1);
    const intoKey = (await controlRows(t, 'SELECT person_key FROM persons WHERE person_id = $1', [into]))[0]!.person_key;
    expect((await storedRows(t, 'events', ['event_name', 'person_key'], ['event_name'])).filter((e) => e.person_key !== null))
      .toEqual(['paid', 'signup', 'signup'].map((event_name) => ({ event_name, person_key: intoKey })));
  });

  it('a privacy delete of into erases the events a merge still pending has not moved', async () => {
    await t.freshWorkspace();
    await t.post('/v1/events', { batch: [{ event_name: 'paid', email: 'moving@example.com' }, { event_name: 'signup', user_id: 'erased' }] });
    await beginMerge(t.stores, t.ws.workspace_id, { from: { email: 'moving@example.com' }, into: { external_id: 'erased' } }, new Date(), 'a-live-process', leaseOf(600_000));
    expect((await t.post('/v1/privacy/requests', { type: 'delete', identifiers: [{ external_id: 'erased' }] })).statusCode).toBe(202);
    await t.app.privacy.worker.tick();
    expect(await storedRows(t, 'events', ['event_name'])).toEqual([]);
    expect(await controlRows(t, 'SELECT merge_id FROM person_merges WHERE workspace_id = $1', [t.ws.workspace_id])).toEqual([]);
  });

  it('an audience counts one person at its next refresh and its destination receives from as removed', async () => {
    await t.freshWorkspace();
    const receiver = await startReceiver();
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: 'keep', email: 'keep@example.com' },
      { event_name: 'signup', email: 'dup@example.com', visitor_id: 'v-dup' },
    ] });
    const audience = await t.post('/v1/audiences', {
      name: 'signed up', criteria_json: did('signup'), destinations: [{ type: 'webhook', url: receiver.url, secret: 'whsec_test_0123456789' }],
    });
    expect(audience.statusCode, audience.body).toBe(201);
    const refresh = async () => {
      await t.app.audiences.scheduler.tick(new Date());
      await t.app.audiences.deliverer.idle();
    };
    await refresh();
    expect(receiver.members()).toHaveLength(2);
    const from = receiver.accepted.flatMap((p) => p.added).find((m) => m.email === 'dup@example.com')!;
    expect((await merge({ from: { email: 'dup@example.com' }, into: { external_id: 'keep' } })).statusCode).toBe(200);
    await refresh();
    expect(receiver.accepted.flatMap((p) => p.removed)).toEqual([expect.objectContaining({ person_id: from.person_id, email: 'dup@example.com' })]);
    expect(receiver.members()).toHaveLength(1);
    expect((await get(`/v1/audiences/${audience.json().id}`)).json().member_count).toBe(1);
    receiver.close();
  });

  it('a person merged after paying moves its revenue to into\'s first touch', async () => {
    await t.freshWorkspace();
    const at = (day: number) => new Date(Date.UTC(2026, 0, day)).toISOString();
    // into came first, from a newsletter; from came later through a search engine, and paid.
    await t.post('/v1/pageviews', { visitor_id: 'v-into', url: 'https://shop.example/?utm_medium=email&utm_source=news', timestamp: at(2) });
    await t.post('/v1/pageviews', { visitor_id: 'v-from', url: 'https://shop.example/', referrer: 'https://www.google.com/', timestamp: at(5) });
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: 'payer', visitor_id: 'v-from', timestamp: at(5) },
      { event_name: 'signup', email: 'into@example.com', visitor_id: 'v-into', timestamp: at(2) },
    ] });
    const T = nowS();
    expect((await deliver(t, notification('checkout.session.completed', checkoutSession('cus_payer', { tr_user_id: 'payer' }, 'payer@example.com'), T))).statusCode).toBe(200);
    expect((await deliver(t, notification('invoice.paid', invoice('cus_payer'), T))).statusCode).toBe(200);
    const revenue = async () => {
      const report = (await t.post('/v1/reports/revenue', { from: '2020-01-01', to: '2030-01-01', interval: 'month', group_by: 'channel_category' })).json();
      const byGroup: Record<string, number> = {};
      for (const r of report.rows as { group: string; revenue: Record<string, number> }[]) byGroup[r.group] = (byGroup[r.group] ?? 0) + (r.revenue.usd ?? 0);
      return byGroup;
    };
    const before = await revenue();
    expect(Object.keys(before)).toEqual(['Organic Search']);
    expect(before['Organic Search']).toBeGreaterThan(0);
    const res = await merge({ from: { external_id: 'payer' }, into: { email: 'into@example.com' } });
    expect(res.json()).toMatchObject({ moved: { visitors: 1, customers: 1 } });
    expect(await revenue()).toEqual({ Email: before['Organic Search'] });
    const found = (await get('/people?q=cus_payer')).json().data;
    expect(found).toEqual([expect.objectContaining({ person_id: res.json().person_id, external_id: 'payer', first_touch_channel: 'Email' })]);
    // A payment notified later with from's user id reaches into.
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_payer_2', { tr_user_id: 'payer' }), nowS()));
    expect((await get('/people?q=cus_payer_2')).json().data).toEqual([expect.objectContaining({ person_id: res.json().person_id })]);
  });
});
