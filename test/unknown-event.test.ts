// A product_event leaf naming an event the workspace has never received is valid (it may come
// later), and the compile answer warns of it, so a typo does not silently count no one.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';

const leaf = (name: string) => ({ source: 'product_event', name, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } });

describe.each(ENGINES_WITH_POSTGRES)('%s: unknown_event', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engine });
  });
  afterAll(() => t.close());

  const compile = async (root: unknown) => {
    const res = await t.post('/v1/audiences/compile', { criteria_json: { version: 1, root } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { valid: boolean; estimated_count: { count: number }; warnings?: { code: string; path: string; message: string }[] };
  };

  it('warns at the leaf\'s name until an event of that name arrives, with or without properties, and lists it in the definitions', async () => {
    const before = await compile({ op: 'and', children: [leaf('login'), leaf('sigup')] });
    expect(before.valid).toBe(true);
    expect(before.estimated_count.count).toBe(0);
    expect(before.warnings).toEqual([
      { code: 'unknown_event', path: '/root/children/0/name', message: expect.stringContaining('"login"') },
      { code: 'unknown_event', path: '/root/children/1/name', message: expect.stringContaining('"sigup"') },
    ]);
    const ingested = await t.post('/v1/events', { batch: [{ event_name: 'login', user_id: 'u1' }, { event_name: 'signup', user_id: 'u1', properties: { plan: 'pro' } }] });
    expect(ingested.statusCode, ingested.body).toBe(200);
    const after = await compile({ op: 'or', children: [leaf('login'), leaf('signup'), leaf('sigup')] });
    expect(after.warnings).toEqual([{ code: 'unknown_event', path: '/root/children/2/name', message: expect.stringContaining('"sigup"') }]);
    expect(after.estimated_count.count).toBe(1);
    expect((await compile(leaf('login'))).warnings).toBeUndefined();
    const defs = await t.app.inject({ method: 'GET', url: '/v1/definitions', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    expect((defs.json() as { events: unknown[] }).events).toEqual([{ name: 'login', paths: [] }, { name: 'signup', paths: ['plan'] }]);
  });
});
