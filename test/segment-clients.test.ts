// Segment's and RudderStack's real node clients pointed at the service (analytics-node's `host`,
// rudder-sdk-node's `dataPlaneUrl`), version as installed (package.json): what they send is what
// /v1/persons, /v1/events and /v1/pageviews would have stored for the same calls.

import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { resolved, type WorkspaceState, workspaceState } from './support/segment.js';

let t: TestApp;
let origin: string;

const AT = '2026-06-10T09:00:00.000Z';
const LATER = '2026-06-10T09:05:00.000Z';

/** The same activity through our own API: what the Segment calls below must come to. */
async function throughOwnApi(): Promise<void> {
  const post = async (url: string, body: unknown, key = t.ws.secret_key) => {
    const res = await t.post(url, body, key);
    expect(res.statusCode, res.body).toBe(200);
  };
  await post('/v1/pageviews', { visitor_id: 'anon-1', url: 'https://shop.example/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=june', referrer: 'https://mail.example/', timestamp: AT, title: 'Pricing' });
  await post('/v1/persons', { external_id: 'u-1', visitor_id: 'anon-1', email: 'ada@example.com', name: 'Ada', traits: { email: 'ada@example.com', name: 'Ada', plan: 'pro' } });
  await post('/v1/events', { event_name: 'Order Completed', external_id: 'u-1', properties: { total: 42, items: [{ sku: 'a' }] }, timestamp: LATER });
  await post('/v1/events', { event_name: 'group', external_id: 'u-1', properties: { name: 'Acme', group_id: 'g-1' }, timestamp: LATER });
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

const expectSameAsOwnApi = async (segmentWs: string) => {
  const viaSegment = await workspaceState(t, segmentWs);
  const own = await t.freshWorkspace();
  await throughOwnApi();
  expect(toMinute(viaSegment)).toEqual(toMinute(await workspaceState(t, own.workspace_id)));
  expect(viaSegment.events).toHaveLength(2);
  expect(viaSegment.pageviews[0]).toMatchObject({ channel_category: 'Email', visitor: 'anon-1' });
};

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => {
    t = await startTestApp({ engine });
    origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => t.close());

  it('@segment/analytics-node: identify, track, page, group and alias are stored as our API stores them', async () => {
    const ws = await t.freshWorkspace();
    const analytics = new SegmentAnalytics({ writeKey: ws.secret_key, host: origin, flushAt: 20, maxRetries: 1 });
    const failures: unknown[] = [];
    analytics.on('error', (err) => failures.push(err));
    analytics.page({ anonymousId: 'anon-1', name: 'Pricing', timestamp: new Date(AT),
      properties: { url: 'https://shop.example/pricing', referrer: 'https://mail.example/' }, context: { campaign: { name: 'june', source: 'newsletter', medium: 'email' } } });
    analytics.identify({ userId: 'u-1', anonymousId: 'anon-1', traits: { email: 'ada@example.com', name: 'Ada', plan: 'pro' }, timestamp: new Date(AT) });
    analytics.track({ userId: 'u-1', event: 'Order Completed', properties: { total: 42, items: [{ sku: 'a' }] }, timestamp: new Date(LATER) });
    analytics.group({ userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme' }, timestamp: new Date(LATER) });
    analytics.alias({ userId: 'u-1', previousId: 'anon-2' });
    await analytics.closeAndFlush();
    expect(failures).toEqual([]);
    await resolved(t);
    await expectSameAsOwnApi(ws.workspace_id);
  });

  it('@rudderstack/rudder-sdk-node (gzip bodies, sentAt on each message): the same calls are stored the same way', async () => {
    const ws = await t.freshWorkspace();
    const errors: unknown[] = [];
    const analytics = new RudderAnalytics(ws.secret_key, { dataPlaneUrl: origin, flushAt: 20, flushInterval: 50, retryCount: 0, errorHandler: (err: unknown) => errors.push(err) });
    analytics.page({ anonymousId: 'anon-1', name: 'Pricing', timestamp: new Date(AT),
      properties: { url: 'https://shop.example/pricing', referrer: 'https://mail.example/', title: 'Pricing' }, context: { campaign: { name: 'june', source: 'newsletter', medium: 'email' } } });
    analytics.identify({ userId: 'u-1', anonymousId: 'anon-1', traits: { email: 'ada@example.com', name: 'Ada', plan: 'pro' }, timestamp: new Date(AT) });
    analytics.track({ userId: 'u-1', event: 'Order Completed', properties: { total: 42, items: [{ sku: 'a' }] }, timestamp: new Date(LATER) });
    analytics.group({ userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme' }, timestamp: new Date(LATER) });
    analytics.alias({ userId: 'u-1', previousId: 'anon-2' });
    await analytics.flush();
    expect(errors).toEqual([]);
    await resolved(t);
    await expectSameAsOwnApi(ws.workspace_id);
  });
});
