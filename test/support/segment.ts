// What a workspace holds, read without its generated ids, so that two workspaces fed the same
// activity through different doors (Segment's clients, or /v1/persons, /v1/events, /v1/pageviews)
// compare equal: persons by external id, visitors by their link, events and page views by whom they
// count for.

import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { controlRows, storedRows } from './stored.js';

const asJson = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);
const byText = (a: unknown, b: unknown) => JSON.stringify(a).localeCompare(JSON.stringify(b));

export interface WorkspaceState {
  persons: { external_id: unknown; email: unknown; name: unknown; traits: unknown }[];
  visitors: { visitor_id: unknown; person: unknown }[];
  events: { event_name: unknown; ts: unknown; person: unknown; visitor: unknown; properties: unknown }[];
  pageviews: { visitor: unknown; url: unknown; referrer: unknown; ts: unknown; channel: unknown; channel_category: unknown; source: unknown; medium: unknown; campaign: unknown }[];
}

export async function workspaceState(t: TestApp, ws: string): Promise<WorkspaceState> {
  const persons = await controlRows(t, 'SELECT person_key, external_id, email, name, CAST(traits AS VARCHAR) AS traits FROM persons WHERE workspace_id = $1', [ws]);
  const visitors = await controlRows(t, 'SELECT visitor_key, visitor_id, person_key FROM visitors WHERE workspace_id = $1', [ws]);
  const personOf = new Map(persons.map((p) => [Number(p.person_key), p.external_id ?? p.email]));
  const visitorOf = new Map(visitors.map((v) => [Number(v.visitor_key), v.visitor_id]));
  const who = (key: unknown, map: Map<number, unknown>) => (key === null || key === undefined ? null : map.get(Number(key)) ?? null);
  const events = await storedRows(t, 'events', ['event_name', 'ts', 'person_key', 'visitor_key', 'properties'], [], ws);
  const pageviews = await storedRows(t, 'pageviews', ['visitor_key', 'url', 'referrer', 'ts', 'channel', 'channel_category', 'source', 'medium', 'campaign'], [], ws);
  return {
    persons: persons.map((p) => ({ external_id: p.external_id, email: p.email, name: p.name, traits: asJson(p.traits) })).sort(byText),
    visitors: visitors.map((v) => ({ visitor_id: v.visitor_id, person: who(v.person_key, personOf) })).sort(byText),
    events: events.map((e) => ({
      event_name: e.event_name, ts: e.ts, person: who(e.person_key, personOf), visitor: who(e.visitor_key, visitorOf), properties: asJson(e.properties),
    })).sort(byText),
    pageviews: pageviews.map(({ visitor_key, ...p }) => ({ visitor: who(visitor_key, visitorOf), ...p }) as WorkspaceState['pageviews'][number]).sort(byText),
  };
}

/** Waits until the app's ingest log has nothing left to resolve. */
export const resolved = (t: TestApp) => t.app.segment.resolver.drained();

export const AT = '2026-06-10T09:00:00.000Z';
export const LATER = '2026-06-10T09:05:00.000Z';

/**
 * The activity the client tests send (a page from a newsletter, identify, a track, a group, an
 * alias) through our own API. `eventVisitor`: the client also sends the anonymous id on events
 * after identify (the browser library does), so the events carry that visitor too.
 */
async function throughOwnApi(t: TestApp, eventVisitor: string | undefined): Promise<void> {
  const post = async (url: string, body: unknown) => {
    const res = await t.post(url, body);
    expect(res.statusCode, res.body).toBe(200);
  };
  const visitor = eventVisitor === undefined ? {} : { visitor_id: eventVisitor };
  await post('/v1/pageviews', { visitor_id: 'anon-1', url: 'https://shop.example/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=june', referrer: 'https://mail.example/', timestamp: AT, title: 'Pricing' });
  await post('/v1/persons', { external_id: 'u-1', visitor_id: 'anon-1', email: 'ada@example.com', name: 'Ada', traits: { email: 'ada@example.com', name: 'Ada', plan: 'pro' } });
  await post('/v1/events', { event_name: 'Order Completed', external_id: 'u-1', ...visitor, properties: { total: 42, items: [{ sku: 'a' }] }, timestamp: LATER });
  await post('/v1/events', { event_name: 'group', external_id: 'u-1', ...visitor, properties: { name: 'Acme', group_id: 'g-1' }, timestamp: LATER });
  await post('/v1/persons', { external_id: 'u-1', visitor_id: 'anon-2' });
}

/**
 * Times to the minute: Segment corrects a message's time by receivedAt − sentAt, which also adds
 * the request's time in transit (as Segment's own API does).
 */
const toMinute = (state: WorkspaceState) => ({
  ...state,
  events: state.events.map((e) => ({ ...e, ts: (e.ts as Date).toISOString().slice(0, 16) })),
  pageviews: state.pageviews.map((p) => ({ ...p, ts: (p.ts as Date).toISOString().slice(0, 16) })),
});

/** What a client stored in `segmentWs` equals what our own API stores for the same activity (in a fresh workspace). */
export async function expectSameAsOwnApi(t: TestApp, segmentWs: string, eventVisitor?: string): Promise<void> {
  const viaSegment = await workspaceState(t, segmentWs);
  const own = await t.freshWorkspace();
  await throughOwnApi(t, eventVisitor);
  expect(toMinute(viaSegment)).toEqual(toMinute(await workspaceState(t, own.workspace_id)));
  expect(viaSegment.events).toHaveLength(2);
  expect(viaSegment.pageviews[0]).toMatchObject({ channel_category: 'Email', visitor: 'anon-1' });
}
