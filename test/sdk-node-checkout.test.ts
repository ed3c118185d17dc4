// The Stripe metadata end to end, on every store: a real Chromium opens a customer's page whose
// tracker (GET /tracker.js from the real app) sets the tr_v cookie and sends a page view; the
// customer's own server, asked to start a checkout, reads that cookie with the SDK's
// stripeMetadata; the checkout session created with it, notified to the service as Stripe signs
// notifications, leaves the payer `linked` to the user and the visitor who browsed.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stripeMetadata, type StripeMetadata } from '../sdk/node/src/index.js';
import { startTestApp, type TestApp } from './support/app.js';
import { launchChromium } from './support/browser.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { eventually } from './support/faults.js';
import { controlRows, storedCount } from './support/stored.js';
import { checkoutSession, customerRow, deliver, notification } from './support/stripe.js';

let browser: Browser;
let site: Server;
let siteOrigin: string;
let apiOrigin: string;
let publishableKey: string;
/** What the site's checkout route read, per request: the metadata it would give Stripe. */
const checkouts: StripeMetadata[] = [];

beforeAll(async () => {
  // The customer's site: a page embedding the tracker, and a checkout route on its own server.
  site = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/checkout') {
      const signedIn = req.headers['x-user'];
      const metadata = stripeMetadata(req, typeof signedIn === 'string' ? signedIn : undefined);
      checkouts.push(metadata);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(metadata));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><head><title>Shop</title>
<script src="${apiOrigin}/tracker.js" data-key="${publishableKey}"></script></head><body>Pricing</body></html>`);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  browser = await launchChromium(); // a failure, never a skip, when there is none
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
});

describe.each(ENGINES_WITH_POSTGRES)('%s: a checkout created with stripeMetadata', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engine });
    apiOrigin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  beforeEach(async () => {
    publishableKey = (await t.freshWorkspace()).publishable_key;
  });
  afterAll(() => t?.close());

  /** Browses the site in a new browser profile, then starts a checkout as `user` (signed out: none). */
  async function browseAndCheckout(user?: string): Promise<{ cookie: string; metadata: StripeMetadata }> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${siteOrigin}/pricing?utm_source=newsletter`);
      expect(await eventually(async () => (await storedCount(t, 'pageviews')) === 1)).toBe(true);
      const headers: Record<string, string> = user ? { 'x-user': user } : {};
      const metadata = await page.evaluate(async (h) => (await fetch('/checkout', { method: 'POST', headers: h })).json(), headers) as StripeMetadata;
      const cookie = (await context.cookies(siteOrigin)).find((c) => c.name === 'tr_v')!.value;
      return { cookie, metadata };
    } finally {
      await context.close();
    }
  }

  const visitorsOf = async () => (await controlRows(t, 'SELECT visitor_id FROM visitors WHERE workspace_id = $1', [t.ws.workspace_id])).map((r) => r.visitor_id);

  it('links the paying customer to the signed-in user and to the visitor the tracker saw', async () => {
    const { cookie, metadata } = await browseAndCheckout('u_ada');
    expect(metadata).toEqual({ tr_visitor_id: cookie, tr_user_id: 'u_ada' });
    expect(checkouts.at(-1)).toEqual(metadata);
    expect(await visitorsOf()).toEqual([cookie]);

    const res = await deliver(t, notification('checkout.session.completed', checkoutSession('cus_ada', metadata, 'ada@example.com')));
    expect(res.statusCode, res.body).toBe(200);
    expect(await customerRow(t, 'cus_ada')).toMatchObject({ link_state: 'linked', external_id: 'u_ada', visitor_id: cookie, visitor_person: 'u_ada' });
  });

  it('a guest checkout carries the visitor alone: deferred until the visitor is identified, then linked', async () => {
    const { cookie, metadata } = await browseAndCheckout();
    expect(metadata).toEqual({ tr_visitor_id: cookie });
    expect((await deliver(t, notification('checkout.session.completed', checkoutSession('cus_guest', metadata)))).statusCode).toBe(200);
    expect(await customerRow(t, 'cus_guest')).toMatchObject({ link_state: 'deferred', visitor_id: cookie, visitor_person: null });

    const signup = await t.post('/v1/events', { event_name: 'signup', external_id: 'u_bob', visitor_id: cookie });
    expect(signup.statusCode, signup.body).toBe(200);
    expect(await customerRow(t, 'cus_guest')).toMatchObject({ link_state: 'linked', visitor_id: cookie, visitor_person: 'u_bob' });
  });
});
