// Cookieless page views (decisions §12) on every engine and both control stores: the visitor is
// derived from the address and user agent under the day's salt, one visitor per browser and day, a
// new one the next day (the derivation on a clock of its own: the app's receipt time is the real
// one); the salt is shared through the control store (a second API node derives the same visitor)
// and the earlier day's is deleted; the page views are counted and classified.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES, POSTGRES } from './support/engines.js';
import type { TrustProxy } from '../src/config.js';
import { CookielessVisitors } from '../src/ingest/cookieless.js';

const DAY_1 = new Date('2026-06-15T23:50:00Z');
const DAY_2 = new Date('2026-06-16T00:10:00Z');
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Firefox/133.0';
const fromEmail = { version: 1, root: { source: 'pageview', filter: { channel_category: { op: '=', value: 'Email' } }, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

describe.each(ENGINES_WITH_POSTGRES)('%s: cookieless visitors', (engine) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ engine });
  });
  afterAll(() => t?.close());

  const view = (app: TestApp, body: unknown, userAgent: string, address = '127.0.0.2') => app.app.inject({
    method: 'POST', url: '/v1/pageviews', remoteAddress: address, payload: JSON.stringify(body),
    headers: { authorization: `Bearer ${app.ws.publishable_key}`, 'content-type': 'application/json', 'user-agent': userAgent },
  });
  const visitors = async () => (await t.stores.control.all('SELECT visitor_id FROM visitors WHERE workspace_id = $1 ORDER BY visitor_id', [t.ws.workspace_id]))
    .map((r) => r.visitor_id as string);

  it('refuses a page view with neither a visitor_id nor cookieless, or with both, naming the field', async () => {
    const neither = await view(t, { url: 'https://shop.example/' }, CHROME);
    expect(neither.statusCode).toBe(400);
    expect(neither.body).toContain('visitor_id');
    const both = await view(t, { url: 'https://shop.example/', visitor_id: 'v1', cookieless: true }, CHROME);
    expect(both.statusCode).toBe(400);
    expect(both.body).toContain('cookieless');
  });

  it('derives one visitor per browser and day, a new one the next day, and keeps only the latest day\'s salt', async () => {
    let now = DAY_1;
    const derive = new CookielessVisitors(t.stores.control, () => now);
    const chrome = { address: '127.0.0.2', userAgent: CHROME };
    const first = await derive.visitorId(t.ws.workspace_id, chrome);
    expect(await derive.visitorId(t.ws.workspace_id, chrome)).toBe(first);
    expect(await derive.visitorId(t.ws.workspace_id, { ...chrome, userAgent: FIREFOX })).not.toBe(first);
    expect(await derive.visitorId(t.ws.workspace_id, { ...chrome, address: '127.0.0.3' })).not.toBe(first);
    expect(await new CookielessVisitors(t.stores.control, () => now).visitorId(t.ws.workspace_id, chrome)).toBe(first);
    now = DAY_2;
    const next = await derive.visitorId(t.ws.workspace_id, chrome);
    expect(next).not.toBe(first);
    expect(next).toMatch(/^cl_[\w-]{32}$/);
    const days = (await t.stores.control.all('SELECT day FROM visitor_salts')).map((r) => r.day);
    expect(days).toEqual(['2026-06-16']);
  });

  it('counts and classifies cookieless page views, one visitor per browser, the same on every API node', async () => {
    await t.freshWorkspace();
    const landing = { cookieless: true, url: 'https://shop.example/?utm_source=newsletter&utm_medium=email', referrer: null };
    expect((await view(t, landing, CHROME)).json()).toEqual({ accepted: 1 });
    expect((await view(t, { batch: [{ cookieless: true, url: 'https://shop.example/pricing', referrer: landing.url }] }, CHROME)).statusCode).toBe(200);
    expect((await view(t, landing, FIREFOX)).statusCode).toBe(200);
    const found = await visitors();
    expect(found).toHaveLength(2);
    for (const id of found) expect(id).toMatch(/^cl_[\w-]{32}$/);
    // The earlier day's salt went when today's was made.
    expect((await t.stores.control.all('SELECT day FROM visitor_salts')).map((r) => r.day)).toEqual([new Date().toISOString().slice(0, 10)]);

    if (engine === POSTGRES) {
      const other = await startTestApp({ nodeOf: t });
      try {
        expect((await view(other, { ...landing, url: 'https://shop.example/docs' }, FIREFOX)).statusCode).toBe(200);
      } finally {
        await other.close();
      }
      expect(await visitors()).toEqual(found);
    }
    // Both came from the newsletter; the in-app navigation carried the landing's channel.
    expect((await t.compile(fromEmail)).json().estimated_count.count).toBe(2);
  });
});

describe('cookieless visitors behind a proxy (TRUST_PROXY)', () => {
  const apps: TestApp[] = [];
  afterAll(() => Promise.all(apps.map((app) => app.close())));
  const start = async (trustProxy?: TrustProxy) => {
    const app = await startTestApp({ trustProxy });
    apps.push(app);
    return app;
  };
  /** Two browsers alike behind one proxy (or claiming to be), told apart by X-Forwarded-For only; the visitors made. */
  const twoClients = async (app: TestApp, peer: string) => {
    await app.freshWorkspace();
    for (const client of ['198.51.100.7', '203.0.113.9']) {
      const res = await app.app.inject({
        method: 'POST', url: '/v1/pageviews', remoteAddress: peer, payload: JSON.stringify({ cookieless: true, url: 'https://shop.example/' }),
        headers: { authorization: `Bearer ${app.ws.publishable_key}`, 'content-type': 'application/json', 'user-agent': CHROME, 'x-forwarded-for': client },
      });
      expect(res.statusCode, res.body).toBe(200);
    }
    return (await app.stores.control.all('SELECT visitor_id FROM visitors WHERE workspace_id = $1', [app.ws.workspace_id])).length;
  };

  it('reads X-Forwarded-For from a trusted proxy only: one visitor per client behind it, one per address otherwise', async () => {
    const trusting = await start(['127.0.0.0/30']);
    expect(await twoClients(trusting, '127.0.0.2')).toBe(2);
    // A peer outside the trusted range cannot choose its visitor by the header.
    expect(await twoClients(trusting, '127.0.0.9')).toBe(1);
    expect(await twoClients(await start(), '127.0.0.2')).toBe(1);
    // A hop count trusts the nearest hops, whatever their address.
    expect(await twoClients(await start(1), '127.0.0.9')).toBe(2);
  });
});
