// Rate limits: per key, a budget each for ingest, compile and the rest; payment notifications a
// budget of their own per workspace; 429 rate_limited with Retry-After past it; /health never limited.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { checkoutSession, deliver, notification } from './support/stripe.js';

const event = (n: number) => ({ event_name: 'signup', external_id: `u_${n}` });
const criteria = { version: 1, root: { source: 'payments', event: 'refund_issued', occurrence: { window: { kind: 'ever' } } } };

describe('rate limits', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await startTestApp({ rateLimits: { ingestPerMinute: 3, notificationsPerMinute: 3, perMinute: 2 } });
  });
  afterEach(() => t.close());

  const get = (url: string, key = t.ws.secret_key) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });

  it('answers 429 rate_limited with Retry-After past the ingest budget, and stores nothing of the limited request', async () => {
    for (let n = 0; n < 3; n++) expect((await t.post('/v1/events', event(n))).statusCode).toBe(200);
    const limited = await t.post('/v1/events', event(3));
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ error: 'rate_limited', message: expect.stringContaining('ingest') });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    const rows = await t.store.query('SELECT count(*)::INTEGER AS n FROM events');
    expect(rows[0]!.n).toBe(3);
    // persons and page views share the ingest budget
    expect((await t.post('/v1/persons', { external_id: 'u_9' })).statusCode).toBe(429);
    expect((await t.post('/v1/pageviews', { visitor_id: 'v1', url: 'https://example.com/' }, t.ws.publishable_key)).statusCode).toBe(200);
  });

  it('keeps separate budgets for ingest, compile and the other calls', async () => {
    for (let n = 0; n < 3; n++) await t.post('/v1/events', event(n));
    expect((await t.post('/v1/events', event(3))).statusCode).toBe(429);
    expect((await t.compile(criteria)).statusCode).toBe(200);
    expect((await t.compile(criteria)).statusCode).toBe(200);
    expect((await t.compile(criteria)).json()).toMatchObject({ error: 'rate_limited' });
    expect((await get('/v1/workspace')).statusCode).toBe(200);
    expect((await get('/v1/audiences')).statusCode).toBe(200);
    expect((await get('/v1/workspace')).statusCode).toBe(429);
  });

  it('counts each key apart: another workspace is not held back', async () => {
    for (let n = 0; n < 3; n++) await t.post('/v1/events', event(n));
    expect((await t.post('/v1/events', event(3))).statusCode).toBe(429);
    const other = await t.workspaces.create('other');
    expect((await t.post('/v1/events', event(4), other.secret_key)).statusCode).toBe(200);
  });

  const notify = (n: number, workspace?: { workspace_id: string; stripe_webhook_secret: string }) => deliver(t,
    notification('checkout.session.completed', checkoutSession(`cus_rate${n}`, { tr_user_id: `u_rate${n}` })),
    workspace && { workspaceId: workspace.workspace_id, secret: workspace.stripe_webhook_secret });

  it('ingest past its budget does not hold back payment notifications', async () => {
    for (let n = 0; n < 3; n++) expect((await t.post('/v1/events', event(n))).statusCode).toBe(200);
    expect((await t.post('/v1/events', event(3))).statusCode).toBe(429);
    for (let n = 0; n < 3; n++) expect((await notify(n)).statusCode).toBe(200);
    const limited = await notify(3);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ error: 'rate_limited', message: expect.stringContaining('notifications') });
    expect((await t.post('/v1/persons', { external_id: 'u_9' })).statusCode).toBe(429);
  });

  it('payment notifications past their budget do not hold back ingest, nor another workspace\'s notifications', async () => {
    for (let n = 0; n < 3; n++) expect((await notify(n)).statusCode).toBe(200);
    expect((await notify(3)).statusCode).toBe(429);
    for (let n = 0; n < 3; n++) expect((await t.post('/v1/events', event(n))).statusCode).toBe(200);
    const other = await t.workspaces.create('other');
    expect((await notify(4, other)).statusCode).toBe(200);
    const rows = await t.store.query('SELECT count(*)::INTEGER AS n FROM processed_notifications');
    expect(rows[0]!.n).toBe(4);
  });

  it('never limits /health', async () => {
    for (let n = 0; n < 10; n++) expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});
