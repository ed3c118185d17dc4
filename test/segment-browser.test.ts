// Segment's browser library (@segment/analytics-next, its UMD build as installed) in a real
// Chromium, on a customer's page of its own origin, `apiHost` pointed at the service: it posts
// text/plain JSON to the one-letter paths (/v1/p, /v1/i, /v1/t, …) with the write key in the body
// and as Basic auth, after a CORS preflight. What it sends is stored as our own API would store it.

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { launchChromium } from './support/browser.js';
import { AT, expectSameAsOwnApi, LATER, resolved } from './support/segment.js';

const umd = join(dirname(createRequire(import.meta.url).resolve('@segment/analytics-next/package.json')), 'dist', 'umd');

let t: TestApp;
let site: Server;
let siteOrigin: string;
let browser: Browser;

beforeAll(async () => {
  t = await startTestApp();
  const api = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' }));
  site = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path.startsWith('/umd/')) {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(join(umd, path.slice(5).replace(/[^\w.-]/g, ''))));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>Shop</title><script src="/umd/index.js"></script>
<script>window.API_HOST = ${JSON.stringify(`${api.host}/v1`)};</script>`);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => site.close(resolve));
  await t.close();
});

it('@segment/analytics-next in Chromium: page, identify, track, group and alias are stored as our API stores them', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${siteOrigin}/`);
  const failures = await page.evaluate(async ({ writeKey, at, later }) => {
    const { AnalyticsBrowser } = (window as unknown as { AnalyticsNext: { AnalyticsBrowser: { load: (...args: unknown[]) => Promise<[Record<string, (...a: unknown[]) => Promise<{ failedDelivery(): unknown }>>]> } } }).AnalyticsNext;
    const host = (window as unknown as { API_HOST: string }).API_HOST;
    const [analytics] = await AnalyticsBrowser.load(
      { writeKey, cdnSettings: { integrations: { 'Segment.io': { apiKey: writeKey, apiHost: host, protocol: 'http' } } } },
      { initialPageview: false, disableClientPersistence: true },
    );
    await analytics.setAnonymousId!('anon-1');
    const contexts = [
      await analytics.page!(null, 'Pricing', { url: 'https://shop.example/pricing', referrer: 'https://mail.example/', title: 'Pricing' },
        { timestamp: new Date(at), context: { campaign: { name: 'june', source: 'newsletter', medium: 'email' } } }),
      await analytics.identify!('u-1', { email: 'ada@example.com', name: 'Ada', plan: 'pro' }, { timestamp: new Date(at) }),
      await analytics.track!('Order Completed', { total: 42, items: [{ sku: 'a' }] }, { timestamp: new Date(later) }),
      await analytics.group!('g-1', { name: 'Acme' }, { timestamp: new Date(later) }),
      await analytics.alias!('u-1', 'anon-2'),
    ];
    return contexts.map((c) => c.failedDelivery()).filter(Boolean).map(String);
  }, { writeKey: t.ws.secret_key, at: AT, later: LATER });
  expect(failures).toEqual([]);
  await context.close();
  await resolved(t);
  await expectSameAsOwnApi(t, t.ws.workspace_id, 'anon-1');
});
