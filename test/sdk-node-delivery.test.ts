// The server SDK (sdk/node) against the real service, on every store: what identify, track, page
// and alias send through the Segment-compatible POST /v1/batch is stored as /v1/events,
// /v1/persons and the tracker would have stored it; bodies stay under 500 KB; a refused batch is
// not retried; a service that is not up yet gets the batch once it is; a script that just ends
// sends what it queued (beforeExit).

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Analytics, type AnalyticsOptions, type DeliveryError, MAX_BATCH_BYTES, type RetryNotice, stripeMetadata } from '../sdk/node/src/index.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { eventually } from './support/faults.js';
import { resolved as drained } from './support/segment.js';
import { freePort } from './support/ports.js';
import { controlRows, eventsByName, storedCount, storedRows } from './support/stored.js';
import { checkoutSession, customerRow, deliver, notification } from './support/stripe.js';

const ROOT = join(import.meta.dirname, '..');

/**
 * A client of the service at `host` that records what it reports. Its interval never comes (the
 * longest a timer takes): every send here is one that flushAt, flush() or close() asked for.
 */
function client(host: string, writeKey: string, options: Partial<AnalyticsOptions> = {}) {
  const failures: DeliveryError[] = [];
  const retries: RetryNotice[] = [];
  const deliveries: { messages: number; bytes: number; attempts: number }[] = [];
  const analytics = new Analytics({
    writeKey, host, flushOnExit: false, flushIntervalMs: 2 ** 31 - 1, retry: { minDelayMs: 20, maxDelayMs: 200 },
    onError: (e) => failures.push(e), onRetry: (n) => retries.push(n), onDelivery: (d) => deliveries.push(d), ...options,
  });
  return { analytics, failures, retries, deliveries };
}

/** Who each visitor of the workspace belongs to, as `visitor → external_id (email)`. */
async function visitorsOf(t: TestApp): Promise<Record<string, string | null>> {
  const rows = await controlRows(t, `SELECT v.visitor_id, p.external_id, p.email FROM visitors v
    LEFT JOIN persons p ON p.workspace_id = v.workspace_id AND p.person_key = v.person_key WHERE v.workspace_id = $1`, [t.ws.workspace_id]);
  return Object.fromEntries(rows.map((r) => [r.visitor_id, r.external_id === null ? null : `${r.external_id as string} (${r.email as string | null})`]));
}


describe.each(ENGINES_WITH_POSTGRES)('%s: the SDK against the service', (engine) => {
  let t: TestApp;
  let host: string;
  beforeAll(async () => {
    t = await startTestApp({ engine });
    host = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  beforeEach(() => t.freshWorkspace());
  afterAll(() => t?.close());

  it('identify, track, page and alias are stored as persons, events, page views and a merge', async () => {
    const { analytics, failures } = client(host, t.ws.secret_key);
    analytics.identify({ userId: 'u_ada', anonymousId: 'v_ada', traits: { email: 'ada@example.com', plan: 'pro' } });
    analytics.track({ userId: 'u_ada', event: 'signup', properties: { source: 'pricing' } });
    analytics.page({ anonymousId: 'v_phone', name: 'Pricing', properties: { url: 'https://shop.example/pricing', referrer: 'https://chatgpt.com/' } });
    analytics.alias({ previousId: 'v_phone', userId: 'u_ada' });
    await analytics.close();
    expect(failures).toEqual([]);

    await drained(t);
    expect(await visitorsOf(t)).toEqual({ v_ada: 'u_ada (ada@example.com)', v_phone: 'u_ada (ada@example.com)' });
    expect(await storedRows(t, 'pageviews', ['url', 'channel_category'])).toEqual([{ url: 'https://shop.example/pricing', channel_category: 'AI' }]);
    const [person] = await controlRows(t, 'SELECT traits FROM persons WHERE workspace_id = $1', [t.ws.workspace_id]);
    expect(JSON.parse(person!.traits as string)).toMatchObject({ plan: 'pro' });
  });

  it('cuts many large messages into bodies of at most 500 KB, each stored once; a message above 32 KB is reported, not sent', async () => {
    const { analytics, failures, deliveries } = client(host, t.ws.secret_key, { flushAt: 100 });
    const pad = 'x'.repeat(20_000);
    for (let i = 0; i < 60; i++) analytics.track({ userId: `u_${i % 5}`, event: 'exported', properties: { i, pad } });
    analytics.track({ userId: 'u_0', event: 'too_big', properties: { pad: pad + pad } });
    await analytics.flush();
    expect(failures.map((f) => [f.reason, f.messages.length])).toEqual([['too_large', 1]]);
    expect(deliveries.length).toBeGreaterThanOrEqual(3);
    expect(deliveries.every((d) => d.bytes < MAX_BATCH_BYTES && d.attempts === 1)).toBe(true);
    expect(deliveries.reduce((n, d) => n + d.messages, 0)).toBe(60);
    await drained(t);
    expect((await eventsByName(t)).get('exported')).toBe(60);
    expect((await eventsByName(t)).get('too_big')).toBeUndefined();
    await analytics.close();
  });

  it('does not retry a refused batch (an unknown write key) and reports it with the status', async () => {
    const { analytics, failures, retries } = client(host, 'sk_not_a_key');
    analytics.track({ userId: 'u_1', event: 'signup', messageId: 'm-refused' });
    await analytics.close();
    expect(retries).toEqual([]);
    expect(failures.map((f) => [f.reason, f.status, f.messages.map((m) => m.messageId)])).toEqual([['rejected', 401, ['m-refused']]]);
    expect(await storedCount(t, 'events')).toBe(0);
  });

  it('links a guest\'s payment once identify joins its visitor to the user who signs up', async () => {
    const metadata = stripeMetadata('tr_v=v_guest', null);
    expect((await deliver(t, notification('checkout.session.completed', checkoutSession('cus_guest', metadata)))).statusCode).toBe(200);
    expect(await customerRow(t, 'cus_guest')).toMatchObject({ link_state: 'deferred', visitor_id: 'v_guest' });

    const { analytics, failures } = client(host, t.ws.secret_key);
    analytics.identify({ userId: 'u_guest', anonymousId: metadata.tr_visitor_id, traits: { email: 'guest@example.com' } });
    await analytics.close();
    expect(failures).toEqual([]);
    await drained(t);
    expect(await customerRow(t, 'cus_guest')).toMatchObject({ link_state: 'linked', visitor_person: 'u_guest' });
  });
});

describe('the SDK when the service is not up yet, and at exit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t?.close());

  it('retries while nothing listens, and delivers once the service is up', async () => {
    const port = await freePort();
    const { analytics, failures, retries } = client(`http://127.0.0.1:${port}`, t.ws.secret_key, { retry: { minDelayMs: 50, maxDelayMs: 200, maxRetries: 50 } });
    analytics.identify({ userId: 'u_late', anonymousId: 'v_late' });
    analytics.track({ anonymousId: 'v_late', event: 'signup' });
    const flushed = analytics.flush();
    expect(await eventually(async () => retries.length >= 2)).toBe(true);
    expect(retries.every((r) => r.status === undefined && r.error !== undefined)).toBe(true);
    await t.app.listen({ port, host: '127.0.0.1' });
    await flushed;
    expect(failures).toEqual([]);
    await drained(t);
    expect((await eventsByName(t)).get('signup')).toBe(1);
    expect(await visitorsOf(t)).toEqual({ v_late: 'u_late (null)' });
    await analytics.close();
  });

  it('a script that ends without flushing sends what it queued (beforeExit)', async () => {
    const script = `import { Analytics } from ${JSON.stringify(join(ROOT, 'sdk', 'node', 'src', 'index.ts'))};
      new Analytics({ writeKey: process.env.KEY, host: process.env.HOST }).track({ userId: 'u_script', event: 'script_ended' });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT, env: { ...process.env, KEY: t.ws.secret_key, HOST: t.app.server.listening ? `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}` : await t.app.listen({ port: 0, host: '127.0.0.1' }) }, stdio: 'inherit',
    });
    expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
    await drained(t);
    expect((await eventsByName(t)).get('script_ended')).toBe(1);
  });
});

describe('the SDK when the service is behind (its ingest backlog past the bound)', () => {
  let t: TestApp;
  let host: string;
  beforeAll(async () => {
    // A bound of one message: a batch of two is refused with 503 and Retry-After however fast the log resolves.
    t = await startTestApp({ ingestLog: { maxBacklogEvents: 1 } });
    host = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => t?.close());

  it('waits the Retry-After of a 503 (capped by maxRetryAfterMs) before each retry, then reports the batch with the status', async () => {
    const { analytics, failures, retries } = client(host, t.ws.secret_key, { retry: { minDelayMs: 20, maxDelayMs: 50, maxRetries: 2, maxRetryAfterMs: 300 } });
    analytics.track({ userId: 'u_1', event: 'a' });
    analytics.track({ userId: 'u_1', event: 'b' });
    await analytics.flush();
    expect(retries.map((r) => [r.retry, r.status, r.delayMs])).toEqual([[1, 503, 300], [2, 503, 300]]);
    expect(failures.map((f) => [f.reason, f.status, f.messages.length])).toEqual([['retries_exhausted', 503, 2]]);
    analytics.track({ userId: 'u_1', event: 'c' });
    await analytics.close();
    expect(failures).toHaveLength(1);
    await drained(t);
    expect([...(await eventsByName(t)).keys()]).toEqual(['c']);
  });
});

describe('the SDK past the rate limit', () => {
  let t: TestApp;
  let host: string;
  beforeAll(async () => {
    t = await startTestApp({ rateLimits: { ingestPerMinute: 1, perMinute: 100 } });
    host = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => t?.close());

  it('retries a 429 after its Retry-After (capped by maxRetryAfterMs), keeping what was taken before', async () => {
    const { analytics, failures, retries } = client(host, t.ws.secret_key, { flushAt: 1, retry: { minDelayMs: 20, maxDelayMs: 50, maxRetries: 1, maxRetryAfterMs: 250 } });
    analytics.track({ userId: 'u_1', event: 'taken' });
    analytics.track({ userId: 'u_1', event: 'limited' });
    await analytics.close();
    expect(retries.map((r) => [r.status, r.delayMs])).toEqual([[429, 250]]);
    expect(failures.map((f) => [f.reason, f.status, f.messages.map((m) => m.event)])).toEqual([['retries_exhausted', 429, ['limited']]]);
    await drained(t);
    expect([...(await eventsByName(t)).keys()]).toEqual(['taken']);
  });
});
