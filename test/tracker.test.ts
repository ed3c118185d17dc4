// The browser tracker end to end: a real Chromium loads a customer's page (its own origin) that
// embeds GET /tracker.js from the real app, and the page views land in the store.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { launchChromium } from './support/browser.js';

const COOKIE_MAX_AGE_S = 400 * 24 * 3600;

let t: TestApp;
let apiOrigin: string;
let site: Server;
let siteOrigin: string;
let closedPort: number;
let browser: Browser;
let context: BrowserContext;
let page: Page;

/** The customer's page. `api` overrides where page views go; `before` runs ahead of the tracker; `attributes` go on its tag. */
function html({ api, before = '', attributes = '' }: { api?: string; before?: string; attributes?: string } = {}): string {
  return `<!doctype html><html><head><title>Shop</title>
<script>${before}</script>
<script src="${apiOrigin}/tracker.js" data-key="${t.ws.publishable_key}"${api ? ` data-api="${api}"` : ''} ${attributes}></script>
</head><body><button id="to-pricing" onclick="history.pushState({}, '', '/pricing')">Pricing</button></body></html>`;
}

const listen = async (server: Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

beforeAll(async () => {
  site = createServer((req, res) => {
    const path = new URL(req.url ?? '/', siteOrigin).pathname;
    const body = path === '/unreachable' ? html({ api: `http://127.0.0.1:${closedPort}` })
      // The API unreachable and sendBeacon refusing: the fetch fallback fails too.
      : path === '/unreachable-fetch' ? html({ api: `http://127.0.0.1:${closedPort}`, before: 'Navigator.prototype.sendBeacon = () => false;' })
      : path === '/no-beacon' ? html({ before: 'delete Navigator.prototype.sendBeacon;' })
      : path === '/globals' ? html({ before: 'window.__before = Object.getOwnPropertyNames(window);' })
      : path.startsWith('/consent/') ? html({ attributes: 'data-consent="required"' })
      : path.startsWith('/cookieless/') ? html({ attributes: 'data-cookieless' })
      : html();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
  });
  siteOrigin = `http://127.0.0.1:${await listen(site)}`;

  const probe = createServer();
  closedPort = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));

  browser = await launchChromium(); // a failure, never a skip, when there is none
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
});

beforeEach(async () => {
  t = await startTestApp();
  apiOrigin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  context = await browser.newContext();
  page = await context.newPage();
});

afterEach(async () => {
  await context?.close();
  await t.close();
});

interface PageviewRow { visitor_id: string; path: string; url: string; referrer: string | null; title: string | null; channel_category: string; channel: string | null }

async function pageviews(): Promise<PageviewRow[]> {
  return await t.store.query(`SELECT v.visitor_id, pv.path, pv.url, pv.referrer, pv.title, pv.channel_category, pv.channel
    FROM pageviews pv JOIN visitors v ON v.visitor_key = pv.visitor_key
    WHERE pv.workspace_id = $1 ORDER BY pv.ts, pv.pageview_id`, [t.ws.workspace_id]) as unknown as PageviewRow[];
}

/** Polls the store until `n` page views are there: beacons arrive on their own time. */
async function waitForPageviews(n: number, timeoutMs = 10_000): Promise<PageviewRow[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await pageviews();
    if (rows.length >= n) return rows;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${n} page views, got ${rows.length}: ${JSON.stringify(rows)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function visitorCookie() {
  const cookies = await context.cookies(siteOrigin);
  return cookies.find((c) => c.name === 'tr_v');
}

describe('the browser tracker', () => {
  it('sets a 400-day first-party cookie and records the landing, in-app navigations and a reload as one visitor', async () => {
    const landing = `${siteOrigin}/landing?utm_source=newsletter&utm_medium=email`;
    await page.goto(landing);
    await waitForPageviews(1);

    const cookie = await visitorCookie();
    expect(cookie, 'tr_v cookie on the site').toBeDefined();
    expect(cookie!.value).toMatch(/^[0-9a-f-]{32,36}$/);
    expect(cookie!.path).toBe('/');
    expect(cookie!.sameSite).toBe('Lax');
    expect(cookie!.secure).toBe(false);
    expect(Math.abs(cookie!.expires - (Date.now() / 1000 + COOKIE_MAX_AGE_S))).toBeLessThan(120);

    // In-app navigation; then the same URL pushed and replaced again, and a first back() that
    // lands on that same URL: none of these sends anything more. The second back() does.
    await page.click('#to-pricing');
    await waitForPageviews(2);
    await page.evaluate(() => {
      history.pushState({}, '', '/pricing');
      history.replaceState({ step: 2 }, '', '/pricing');
    });
    const back = () => page.evaluate(() => new Promise<string>((resolve) => {
      addEventListener('popstate', () => resolve(location.pathname), { once: true });
      history.back();
    }));
    expect(await back()).toBe('/pricing');
    expect(await back()).toBe('/landing');
    await waitForPageviews(3);

    const rows = await pageviews();
    expect(rows.map((r) => r.path)).toEqual(['/landing', '/pricing', '/landing']);
    expect(rows.every((r) => r.visitor_id === cookie!.value)).toBe(true);
    expect(rows[0]).toMatchObject({ url: landing, referrer: null, title: 'Shop', channel_category: 'Email', channel: 'newsletter' });
    // The previous URL is the referrer, so the server sees internal navigations and carries the landing's channel.
    expect(rows[1]).toMatchObject({ url: `${siteOrigin}/pricing`, referrer: landing, channel_category: 'Email', channel: 'newsletter' });
    expect(rows[2]).toMatchObject({ url: landing, referrer: `${siteOrigin}/pricing`, channel_category: 'Email' });

    await page.reload();
    const after = await waitForPageviews(4);
    expect(after).toHaveLength(4);
    expect(after[3]).toMatchObject({ path: '/landing', visitor_id: cookie!.value });
    expect((await visitorCookie())?.value).toBe(cookie!.value);
    const visitors = await t.store.query('SELECT visitor_id FROM visitors WHERE workspace_id = $1', [t.ws.workspace_id]);
    expect(visitors).toEqual([{ visitor_id: cookie!.value }]);
  });

  it('is served minified under 3 KB with a short cache', async () => {
    const res = await fetch(`${apiOrigin}/tracker.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    const code = await res.text();
    expect(Buffer.byteLength(code)).toBeLessThan(3 * 1024);
    expect(code).toContain('/v1/pageviews');
    expect(code).not.toMatch(/\/\/ /); // comments stripped
  });

  it('throws nothing into the page and adds no global but tr, even when the API is unreachable', async () => {
    const errors: Error[] = [];
    page.on('pageerror', (err) => errors.push(err));
    const failed: string[] = [];
    page.on('requestfailed', (req) => failed.push(req.url()));
    const toClosedPort = `http://127.0.0.1:${closedPort}/v1/pageviews?key=${t.ws.publishable_key}`;

    // By beacon, then by the fetch fallback (sendBeacon refusing): both fail at the network.
    for (const path of ['/unreachable', '/unreachable-fetch']) {
      failed.length = 0;
      await page.goto(`${siteOrigin}${path}`);
      await page.click('#to-pricing');
      await expect.poll(() => failed.filter((url) => url === toClosedPort).length, { timeout: 10_000 }).toBe(2);
    }
    await page.waitForTimeout(200); // an unhandled rejection is reported a moment after the failure
    expect(errors.map(String)).toEqual([]);

    await page.goto(`${siteOrigin}/globals`);
    await waitForPageviews(1);
    const added = await page.evaluate(() => Object.getOwnPropertyNames(window)
      .filter((name) => !(window as unknown as { __before: string[] }).__before.includes(name)));
    expect(added).toEqual(['__before', 'tr']);

    // The listener does see a failed fetch left uncaught, so the empty list above means something.
    await page.evaluate((url) => { void fetch(url, { method: 'POST', body: '{}' }); }, toClosedPort);
    await expect.poll(() => errors.length, { timeout: 5_000 }).toBeGreaterThan(0);
  });

  it('falls back to fetch when navigator.sendBeacon is missing', async () => {
    await page.goto(`${siteOrigin}/no-beacon`);
    expect(await page.evaluate(() => 'sendBeacon' in navigator)).toBe(false);
    const rows = await waitForPageviews(1);
    expect(rows[0]).toMatchObject({ path: '/no-beacon', visitor_id: (await visitorCookie())?.value, channel_category: 'Direct' });
  });

  it('with data-consent="required" sets no cookie and sends nothing until tr.consent(true), then the cookie and the page views held back', async () => {
    const sent: string[] = [];
    page.on('request', (req) => {
      if (req.url().startsWith(`${apiOrigin}/v1/pageviews`)) sent.push(req.postData() ?? '');
    });
    await page.goto(`${siteOrigin}/consent/landing?utm_source=newsletter&utm_medium=email`);
    await page.click('#to-pricing');
    // The tracker ran (its switch is there) and has sent nothing, set nothing.
    expect(await page.evaluate(() => typeof (window as unknown as { tr?: { consent?: unknown } }).tr?.consent)).toBe('function');
    expect(await context.cookies()).toEqual([]);
    expect(sent).toEqual([]);
    expect(await pageviews()).toEqual([]);

    await page.evaluate(() => (window as unknown as { tr: { consent(granted: boolean): void } }).tr.consent(true));
    const rows = await waitForPageviews(2);
    const cookie = await visitorCookie();
    expect(cookie, 'tr_v cookie once consent is given').toBeDefined();
    // The page views held back, in one request: the landing with its campaign, and the in-app navigation carrying it.
    expect(rows.map((r) => [r.visitor_id, r.path, r.channel_category])).toEqual([
      [cookie!.value, '/consent/landing', 'Email'], [cookie!.value, '/pricing', 'Email'],
    ]);
    expect(sent).toHaveLength(1);

    await page.evaluate(() => (window as unknown as { tr: { consent(granted: boolean): void } }).tr.consent(false));
    expect(await visitorCookie()).toBeUndefined();
    await page.evaluate(() => history.pushState({}, '', '/consent/after'));
    await page.reload();
    expect(await context.cookies()).toEqual([]);
    expect(sent).toHaveLength(1);
  });

  it('with data-cookieless never sets a cookie, and the page views are counted and classified under a visitor the service derives', async () => {
    await page.goto(`${siteOrigin}/cookieless/landing?utm_source=newsletter&utm_medium=email`);
    await page.click('#to-pricing');
    await page.goto(`${siteOrigin}/cookieless/docs`);
    const rows = await waitForPageviews(3);
    expect(await context.cookies()).toEqual([]);
    // By path: two beacons sent in the same millisecond's neighbourhood may be stored in either order.
    expect(rows.map((r) => [r.path, r.channel_category]).sort()).toEqual([['/cookieless/docs', 'Direct'], ['/cookieless/landing', 'Email'], ['/pricing', 'Email']]);
    expect(rows.find((r) => r.path === '/cookieless/landing')!.channel).toBe('newsletter');
    // One visitor for the day, derived on the server: no address or user agent in it.
    expect(new Set(rows.map((r) => r.visitor_id)).size).toBe(1);
    expect(rows[0]!.visitor_id).toMatch(/^cl_[\w-]{32}$/);
    const salts = await t.store.query('SELECT day FROM visitor_salts');
    expect(salts).toEqual([{ day: new Date().toISOString().slice(0, 10) }]);
  });
});
