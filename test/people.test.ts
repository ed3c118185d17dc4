// End to end: acquisition channel → payment → people lookup and payments criteria (issue 5).

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDataApp } from '../src/http/app.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { checkoutSession, deliver, invoice, notification, nowS, subscription } from './support/stripe.js';

let t: TestApp;
const get = (url: string, key = t.ws.secret_key) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => {
    t = await startTestApp({ engine });
    const T = nowS();
    // An organic visitor who pays with metadata.
    await t.post('/v1/pageviews', { visitor_id: 'v-org', url: 'https://shop.example/', referrer: 'https://www.google.com/' });
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_org', { tr_user_id: 'alice', tr_visitor_id: 'v-org' }, 'alice@example.com'), T));
    await deliver(t, notification('customer.subscription.created', subscription('cus_org', { metadata: { tr_user_id: 'alice' } }), T));
    await deliver(t, notification('invoice.paid', invoice('cus_org'), T));
    // A payer without metadata matched by email, and one matched by nothing.
    await t.post('/v1/persons', { external_id: 'bob', email: 'bob@example.com', name: 'Bob Stone' });
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_bob', {}, 'bob@example.com'), T));
    await deliver(t, notification('customer.subscription.created', subscription('cus_bob', { status: 'canceled' }), T));
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_anon', {}, 'nobody@example.com'), T));
    await deliver(t, notification('invoice.paid', invoice('cus_anon'), T));
    // An old first paid invoice (outside 30 days).
    await t.post('/v1/persons', { external_id: 'carol' });
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_carol', { tr_user_id: 'carol' }), T - 40 * 86_400));
    await deliver(t, notification('invoice.paid', invoice('cus_carol', { paid_at: T - 40 * 86_400 }), T - 40 * 86_400));
    for (let i = 0; i < 5; i++) await t.post('/v1/persons', { external_id: `page-${i}`, email: `page-${i}@example.com` });
  });
  afterAll(async () => { await t.close(); });

  describe('GET /people', () => {
    it('an organic payer with metadata shows Organic Search and linked', async () => {
      const res = await get('/people?q=ALICE');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        data: [expect.objectContaining({ external_id: 'alice', email: 'alice@example.com', customer_ids: ['cus_org'], link_state: 'linked', first_touch_channel: 'Organic Search' })],
        next_cursor: null,
      });
    });

    it('payers without metadata show Non-attributed', async () => {
      expect((await get('/people?q=stone')).json().data).toEqual([{
        person_id: expect.stringMatching(/^per_/), external_id: 'bob', email: 'bob@example.com', name: 'Bob Stone',
        customer_ids: ['cus_bob'], link_state: 'email_matched', first_touch_channel: 'Non-attributed',
      }]);
      expect((await get('/people?q=cus_anon')).json().data).toEqual([{
        person_id: null, external_id: null, email: 'nobody@example.com', name: null,
        customer_ids: ['cus_anon'], link_state: 'unmatched', first_touch_channel: 'Non-attributed',
      }]);
    });

    it('paginates with an opaque cursor', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await get(`/people?q=page-&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        const body = res.json() as { data: { external_id: string }[]; next_cursor: string | null };
        expect(body.data.length).toBeLessThanOrEqual(2);
        seen.push(...body.data.map((d) => d.external_id));
        cursor = body.next_cursor;
      } while (cursor);
      expect(seen.sort()).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
      expect((await get('/people?cursor=nope!')).statusCode).toBe(400);
      expect((await get('/people?limit=201')).statusCode).toBe(400);
    });

    it('needs a secret key', async () => {
      expect((await get('/people?q=a', t.ws.publishable_key)).statusCode).toBe(403);
      expect((await t.app.inject({ method: 'GET', url: '/people?q=a' })).statusCode).toBe(401);
    });

    it('is served by the data app too', async () => {
      const data = await buildDataApp({ stores: t.stores });
      try {
        const res = await data.inject({ method: 'GET', url: '/people?q=alice', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
        expect(res.json().data[0].first_touch_channel).toBe('Organic Search');
        expect((await data.inject({ method: 'POST', url: '/v1/events' })).statusCode).toBe(404);
      } finally {
        await data.close();
      }
    });

    it('never answers 500 to odd queries', async () => {
      await fc.assert(fc.asyncProperty(fc.string(), fc.string(), fc.string(), async (q, limit, cursor) => {
        const qs = new URLSearchParams({ q, limit, cursor }).toString();
        const res = await get(`/people?${qs}`);
        expect(res.statusCode).toBeLessThan(500);
      }), { numRuns: 60 });
    });
  });

  describe('payments leaves in compile', () => {
    const estimate = async (root: unknown) => {
      const res = await t.compile({ version: 1, root });
      expect(res.statusCode).toBe(200);
      return res.json().estimated_count.count as number;
    };

    it('subscription status = active counts the linked payer', async () => {
      expect(await estimate({ source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: 'active' } } })).toBe(1);
    });

    it('first_paid_invoice in the last 30 days counts alice (the unmatched payer belongs to nobody)', async () => {
      expect(await estimate({ source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'last_n_days', n: 30 } } })).toBe(1);
      expect(await estimate({ source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'ever' } } })).toBe(2);
    });
  });
});
