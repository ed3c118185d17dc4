// GET /v1/definitions: the names a criteria tree may use, as ingest recorded them.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';

describe('GET /v1/definitions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('lists event names with their payload paths, and trait paths, sorted', async () => {
    await t.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: 'u1', properties: { source: 'ads', plan: { name: 'pro' } }, traits: { plan: 'pro' } },
      { event_name: 'checkout', user_id: 'u1', properties: { total: 10 } },
    ] });
    await t.post('/v1/persons', { user_id: 'u2', traits: { company: { size: 10 } } });
    const res = await t.app.inject({ method: 'GET', url: '/v1/definitions', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      events: [{ name: 'checkout', paths: ['total'] }, { name: 'signup', paths: ['plan', 'plan.name', 'source'] }],
      traits: ['company', 'company.size', 'plan'],
    });
  });

  it('needs the secret key', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/definitions', headers: { authorization: `Bearer ${t.ws.publishable_key}` } });
    expect(res.statusCode).toBe(403);
  });
});
