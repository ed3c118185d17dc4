// Segment's and RudderStack's real node clients pointed at the service (analytics-node's `host`,
// rudder-sdk-node's `dataPlaneUrl`), version as installed (package.json): what they send is what
// /v1/persons, /v1/events and /v1/pageviews would have stored for the same calls.

import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { AT, expectSameAsOwnApi, LATER, resolved } from './support/segment.js';

let t: TestApp;
let origin: string;

/** The calls both node clients take in the same shape. */
interface NodeClient {
  page(message: object): unknown;
  identify(message: object): unknown;
  track(message: object): unknown;
  group(message: object): unknown;
  alias(message: object): unknown;
}

/** The activity expectSameAsOwnApi compares: a page from a newsletter, identify, a track, a group, an alias. */
function sendActivity(analytics: NodeClient): void {
  analytics.page({ anonymousId: 'anon-1', name: 'Pricing', timestamp: new Date(AT),
    properties: { url: 'https://shop.example/pricing', referrer: 'https://mail.example/', title: 'Pricing' }, context: { campaign: { name: 'june', source: 'newsletter', medium: 'email' } } });
  analytics.identify({ userId: 'u-1', anonymousId: 'anon-1', traits: { email: 'ada@example.com', name: 'Ada', plan: 'pro' }, timestamp: new Date(AT) });
  analytics.track({ userId: 'u-1', event: 'Order Completed', properties: { total: 42, items: [{ sku: 'a' }] }, timestamp: new Date(LATER) });
  analytics.group({ userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme' }, timestamp: new Date(LATER) });
  analytics.alias({ userId: 'u-1', previousId: 'anon-2' });
}

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
    sendActivity(analytics);
    await analytics.closeAndFlush();
    expect(failures).toEqual([]);
    await resolved(t);
    await expectSameAsOwnApi(t, ws.workspace_id);
  });

  it('@rudderstack/rudder-sdk-node (gzip bodies, sentAt on each message): the same calls are stored the same way', async () => {
    const ws = await t.freshWorkspace();
    const errors: unknown[] = [];
    const analytics = new RudderAnalytics(ws.secret_key, { dataPlaneUrl: origin, flushAt: 20, flushInterval: 50, retryCount: 0, errorHandler: (err: unknown) => errors.push(err) });
    sendActivity(analytics);
    await analytics.flush();
    expect(errors).toEqual([]);
    await resolved(t);
    await expectSameAsOwnApi(t, ws.workspace_id);
  });
});
