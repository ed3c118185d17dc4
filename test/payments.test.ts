// Revenue attribution with the real parts: app, DuckDB, stripe's signatures (issue 5).

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import fc from 'fast-check';
import { importDataset } from '../src/store/duckdb/import.js';
import { ENGINES_WITH_POSTGRES, POSTGRES } from './support/engines.js';
import { controlRows, storedRows } from './support/stored.js';
import {
  charge, checkoutSession, count, customer, customerRow, deliver, invoice, notification, nowS, paymentIntent, refund, subscription,
} from './support/stripe.js';
import { tierRuns } from './support/tier.js';

let t: TestApp;

const get = (url: string, key = t.ws.secret_key) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
const ok = async (res: Promise<{ statusCode: number; body: string }>) => {
  const r = await res;
  expect(r.statusCode, r.body).toBe(200);
  return JSON.parse(r.body) as { received: true; duplicate: boolean };
};

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => { t = await startTestApp({ engine }); });
  beforeEach(() => t.freshWorkspace());
  afterAll(async () => { await t.close(); });

  describe('GET /v1/workspace', () => {
    it('returns the id, name and webhook URL (secret key only)', async () => {
      const res = await get('/v1/workspace');
      expect(res.json()).toEqual({
        id: t.ws.workspace_id, name: 'test', webhook_url: `http://127.0.0.1:3000/v1/webhooks/stripe/${t.ws.workspace_id}`, payments_mode: 'live', retention_days: null,
      });
      expect((await get('/v1/workspace', t.ws.publishable_key)).statusCode).toBe(403);
      expect((await t.app.inject({ method: 'GET', url: '/v1/workspace' })).statusCode).toBe(401);
    });
  });

  describe('link states (the spec table)', () => {
    it('tr_user_id and tr_visitor_id: linked at once, the visitor joins the person', async () => {
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_1', { tr_user_id: 'u1', tr_visitor_id: 'v1' }))));
      expect(await customerRow(t, 'cus_1')).toMatchObject({ link_state: 'linked', external_id: 'u1', visitor_id: 'v1', visitor_person: 'u1' });
    });

    it('tr_user_id alone: linked (user id wins), person found or created', async () => {
      await t.post('/v1/persons', { external_id: 'u2', email: 'u2@example.com' });
      await ok(deliver(t, notification('payment_intent.succeeded', paymentIntent('cus_2', { tr_user_id: 'u2' }))));
      await ok(deliver(t, notification('payment_intent.succeeded', paymentIntent('cus_3', { tr_user_id: 'new-user' }))));
      expect(await customerRow(t, 'cus_2')).toMatchObject({ link_state: 'linked', external_id: 'u2' });
      expect(await customerRow(t, 'cus_3')).toMatchObject({ link_state: 'linked', external_id: 'new-user' });
      expect(await count(t, 'persons')).toBe(2);
    });

    it('a known visitor: linked through the visitor-to-user mapping', async () => {
      await t.post('/v1/persons', { external_id: 'u4', visitor_id: 'v4' });
      await ok(deliver(t, notification('customer.subscription.created', subscription('cus_4', { metadata: { tr_visitor_id: 'v4' } }))));
      expect(await customerRow(t, 'cus_4')).toMatchObject({ link_state: 'linked', external_id: null, visitor_person: 'u4' });
    });

    it('an anonymous or unknown visitor: deferred, the row stays unlinked', async () => {
      await t.post('/v1/pageviews', { visitor_id: 'v5', url: 'https://shop.example/' });
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_5', { tr_visitor_id: 'v5' }))));
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_6', { tr_visitor_id: 'v-never-seen' }))));
      expect(await customerRow(t, 'cus_5')).toMatchObject({ link_state: 'deferred', visitor_id: 'v5', visitor_person: null });
      expect(await customerRow(t, 'cus_6')).toMatchObject({ link_state: 'deferred', visitor_id: 'v-never-seen' });
      expect(await count(t, 'persons')).toBe(0);
    });

    it('deferred becomes linked when POST /v1/events carries the visitor and the user id', async () => {
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_7', { tr_visitor_id: 'v7' }))));
      const res = await t.post('/v1/events', { event_name: 'login', user_id: 'u7', visitor_id: 'v7' });
      expect(res.statusCode).toBe(200);
      expect(await customerRow(t, 'cus_7')).toMatchObject({ link_state: 'linked', visitor_person: 'u7' });
    });

    it('deferred becomes linked through POST /v1/persons too', async () => {
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_8', { tr_visitor_id: 'v8' }))));
      await t.post('/v1/persons', { external_id: 'u8', tr_visitor_id: 'v8' });
      expect(await customerRow(t, 'cus_8')).toMatchObject({ link_state: 'linked', visitor_person: 'u8' });
    });

    it('both absent: email matching, else unmatched', async () => {
      await t.post('/v1/persons', { external_id: 'u9', email: 'payer@example.com' });
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_9', {}, '  Payer@Example.COM '))));
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_10', {}, 'stranger@example.com'))));
      await ok(deliver(t, notification('payment_intent.succeeded', paymentIntent('cus_11', {}, { receipt_email: 'PAYER@example.com' }))));
      expect(await customerRow(t, 'cus_9')).toMatchObject({ link_state: 'email_matched', external_id: 'u9', email: 'payer@example.com' });
      expect(await customerRow(t, 'cus_10')).toMatchObject({ link_state: 'unmatched', external_id: null });
      expect(await customerRow(t, 'cus_11')).toMatchObject({ link_state: 'email_matched', external_id: 'u9' });
    });
  });

  describe('metadata precedence', () => {
    it('chained creates: the session carries the visitor, the subscription the user', async () => {
      const T = nowS();
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_c', { tr_visitor_id: 'vc' }), T)));
      expect((await customerRow(t, 'cus_c'))?.link_state).toBe('deferred');
      await ok(deliver(t, notification('customer.subscription.created', subscription('cus_c', { metadata: { tr_user_id: 'uc', tr_visitor_id: 'vc' } }), T + 1)));
      expect(await customerRow(t, 'cus_c')).toMatchObject({ link_state: 'linked', external_id: 'uc', visitor_person: 'uc' });
    });

    it('out of order: an older notification with another tr_user_id does not win', async () => {
      const T = nowS();
      await ok(deliver(t, notification('customer.subscription.updated', subscription('cus_o', { metadata: { tr_user_id: 'new' } }), T)));
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_o', { tr_user_id: 'old', tr_visitor_id: 'vo' }), T - 600)));
      const row = await customerRow(t, 'cus_o');
      // The older visitor id is still the latest non-null visitor signal; the user id stays the newer one.
      expect(row).toMatchObject({ link_state: 'linked', external_id: 'new' });
    });

    it('metadata on charges, refunds and invoices is ignored', async () => {
      await ok(deliver(t, notification('charge.succeeded', charge('cus_x', { metadata: { tr_user_id: 'from-charge', tr_visitor_id: 'vx' } }))));
      await ok(deliver(t, notification('invoice.paid', invoice('cus_x'))));
      expect(await customerRow(t, 'cus_x')).toMatchObject({ link_state: 'unmatched', external_id: null, visitor_id: null });
      expect(await count(t, 'persons')).toBe(0);
      expect(await count(t, 'visitors')).toBe(0);
    });
  });

  describe('the payer\'s email from the Customer object', () => {
    const person = async (externalId: string, email?: string) => {
      expect((await t.post('/v1/persons', { external_id: externalId, email })).statusCode).toBe(200);
    };
    const people = async (q: string) => (await get(`/people?q=${encodeURIComponent(q)}`)).json().data as
      { external_id: string | null; email: string | null; customer_ids: string[]; link_state: string | null }[];
    const estimate = async (root: unknown) => {
      const res = await t.compile({ version: 1, root });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().estimated_count.count as number;
    };

    it('only customer.created carries it: email_matched, in GET /people and in the payments state', async () => {
      const T = nowS();
      await person('dana', 'dana@example.com');
      expect((await t.post('/v1/events', { event_name: 'signup', user_id: 'dana' })).statusCode).toBe(200);
      await ok(deliver(t, notification('customer.created', customer('cus_dana', { email: ' Dana@Example.com', name: 'Dana' }), T)));
      await ok(deliver(t, notification('customer.subscription.created', subscription('cus_dana', { status: 'active' }), T + 1)));
      await ok(deliver(t, notification('invoice.paid', invoice('cus_dana'), T + 2)));
      expect(await customerRow(t, 'cus_dana')).toMatchObject({ link_state: 'email_matched', external_id: 'dana', email: 'dana@example.com' });
      expect(await people('cus_dana')).toEqual([expect.objectContaining({ external_id: 'dana', customer_ids: ['cus_dana'], link_state: 'email_matched' })]);
      // The payments belong to the person who signed up.
      expect(await estimate({ op: 'and', children: [
        { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } },
        { source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: 'active' } } },
        { source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'ever' } } },
      ] })).toBe(1);
    });

    it('customer.created arriving after the invoice.paid re-decides the link', async () => {
      const T = nowS();
      await person('erin', 'erin@example.com');
      await ok(deliver(t, notification('invoice.paid', invoice('cus_erin'), T + 10)));
      expect(await customerRow(t, 'cus_erin')).toMatchObject({ link_state: 'unmatched', email: null });
      await ok(deliver(t, notification('customer.created', customer('cus_erin', { email: 'erin@example.com' }), T)));
      expect(await customerRow(t, 'cus_erin')).toMatchObject({ link_state: 'email_matched', external_id: 'erin', email: 'erin@example.com' });
      expect(await people('erin')).toEqual([expect.objectContaining({ customer_ids: ['cus_erin'], link_state: 'email_matched' })]);
    });

    it('customer.updated with a new email re-decides: another person, nobody, or the email removed', async () => {
      const T = nowS();
      await person('old', 'old@example.com');
      await person('new', 'new@example.com');
      await ok(deliver(t, notification('customer.created', customer('cus_mv', { email: 'old@example.com' }), T)));
      expect(await customerRow(t, 'cus_mv')).toMatchObject({ link_state: 'email_matched', external_id: 'old' });
      await ok(deliver(t, notification('customer.updated', customer('cus_mv', { email: 'NEW@example.com' }), T + 10)));
      expect(await customerRow(t, 'cus_mv')).toMatchObject({ link_state: 'email_matched', external_id: 'new', email: 'new@example.com' });
      expect(await people('cus_mv')).toEqual([expect.objectContaining({ external_id: 'new', customer_ids: ['cus_mv'] })]);
      expect((await people('old@'))[0]).toMatchObject({ customer_ids: [], link_state: null });
      await ok(deliver(t, notification('customer.updated', customer('cus_mv', { email: 'stranger@example.com' }), T + 20)));
      expect(await customerRow(t, 'cus_mv')).toMatchObject({ link_state: 'unmatched', external_id: null, email: 'stranger@example.com' });
      await ok(deliver(t, notification('customer.updated', customer('cus_mv', { email: 'new@example.com' }), T + 30)));
      await ok(deliver(t, notification('customer.updated', customer('cus_mv', { email: null }), T + 40)));
      expect(await customerRow(t, 'cus_mv')).toMatchObject({ link_state: 'unmatched', external_id: null, email: null });
    });

    it('an older customer.updated arriving late does not overwrite the newer email', async () => {
      const T = nowS();
      await person('first', 'first@example.com');
      await person('second', 'second@example.com');
      await ok(deliver(t, notification('customer.created', customer('cus_ooo', { email: 'first@example.com' }), T)));
      await ok(deliver(t, notification('customer.updated', customer('cus_ooo', { email: 'second@example.com' }), T + 20)));
      await ok(deliver(t, notification('customer.updated', customer('cus_ooo', { email: 'first@example.com' }), T + 10)));
      await ok(deliver(t, notification('customer.updated', customer('cus_ooo', { email: null }), T + 15)));
      expect(await customerRow(t, 'cus_ooo')).toMatchObject({ link_state: 'email_matched', external_id: 'second', email: 'second@example.com' });
    });

    it('the Customer\'s email wins over the copies on payment objects, which fill in while it has none', async () => {
      const T = nowS();
      await person('card', 'billing@example.com');
      await person('owner', 'owner@example.com');
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_w', {}, 'billing@example.com'), T)));
      expect(await customerRow(t, 'cus_w')).toMatchObject({ link_state: 'email_matched', external_id: 'card' });
      await ok(deliver(t, notification('customer.updated', customer('cus_w', { email: 'owner@example.com' }), T + 10)));
      // A later invoice keeps the email it was finalized with: it does not undo the Customer's.
      await ok(deliver(t, notification('invoice.paid', invoice('cus_w', { customer_email: 'billing@example.com' }), T + 20)));
      expect(await customerRow(t, 'cus_w')).toMatchObject({ link_state: 'email_matched', external_id: 'owner', email: 'owner@example.com' });
      await ok(deliver(t, notification('customer.updated', customer('cus_w', { email: null }), T + 30)));
      expect(await customerRow(t, 'cus_w')).toMatchObject({ link_state: 'email_matched', external_id: 'card', email: 'billing@example.com' });
    });

    it('an expanded customer on an invoice gives the customer id and its email', async () => {
      await person('exp', 'expanded@example.com');
      await ok(deliver(t, notification('invoice.paid', invoice(customer('cus_exp', { email: 'Expanded@example.com' }), { id: 'in_exp' }))));
      expect(await customerRow(t, 'cus_exp')).toMatchObject({ link_state: 'email_matched', external_id: 'exp', email: 'expanded@example.com' });
      expect(await count(t, 'payment_customers')).toBe(1);
      const events = await storedRows(t, 'payment_events', ['customer_id', 'kind', 'object_id']);
      expect(events).toEqual([{ customer_id: 'cus_exp', kind: 'first_paid_invoice', object_id: 'in_exp' }]);
      const [inv] = await storedRows(t, 'invoices', ['customer_id']);
      expect(inv).toEqual({ customer_id: 'cus_exp' });
      // A deleted Customer expanded shows no email: the one known stays.
      await ok(deliver(t, notification('invoice.paid', invoice({ id: 'cus_exp', object: 'customer', deleted: true }))));
      expect(await customerRow(t, 'cus_exp')).toMatchObject({ link_state: 'email_matched', email: 'expanded@example.com' });
    });

    it('metadata-linked customers are not moved by email, nor is their visitor; Customer metadata is not read', async () => {
      const T = nowS();
      await person('holder', 'taken@example.com');
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_meta', { tr_user_id: 'meta-user', tr_visitor_id: 'v-meta' }), T)));
      // The visitor later signs in as someone else.
      expect((await t.post('/v1/events', { event_name: 'login', user_id: 'other-user', visitor_id: 'v-meta' })).statusCode).toBe(200);
      await ok(deliver(t, notification('customer.updated', customer('cus_meta', { email: 'taken@example.com', metadata: { tr_user_id: 'holder' } }), T + 10)));
      expect(await customerRow(t, 'cus_meta')).toMatchObject({ link_state: 'linked', external_id: 'meta-user', visitor_person: 'other-user', email: 'taken@example.com' });
      expect(await people('taken@')).toEqual([expect.objectContaining({ external_id: 'holder', customer_ids: [] })]);
      // A free email is recorded on the linked person, as when the link was made.
      await ok(deliver(t, notification('customer.updated', customer('cus_meta', { email: 'meta@example.com' }), T + 20)));
      expect(await customerRow(t, 'cus_meta')).toMatchObject({ link_state: 'linked', external_id: 'meta-user', visitor_person: 'other-user' });
      expect(await people('meta@')).toEqual([expect.objectContaining({ external_id: 'meta-user', customer_ids: ['cus_meta'], link_state: 'linked' })]);
    });

    // Imports write the DuckDB file only.
    it.skipIf(engine === POSTGRES)('an imported customer keeps its email through notifications without one, until its Customer shows another', async () => {
      const T = nowS();
      await importDataset(t.store, t.ws.workspace_id, {
        persons: [{ person_id: 'per_imp', external_id: 'imp', email: 'imported@example.com', name: null, traits: null, created_at: new Date() }],
        customers: [{ customer_id: 'cus_imp', email: 'imported@example.com', person_id: 'per_imp', visitor_id: null, link_state: 'email_matched' }],
      });
      await person('later', 'later@example.com');
      await ok(deliver(t, notification('invoice.paid', invoice('cus_imp'), T)));
      expect(await customerRow(t, 'cus_imp')).toMatchObject({ link_state: 'email_matched', external_id: 'imp', email: 'imported@example.com' });
      await ok(deliver(t, notification('customer.updated', customer('cus_imp', { email: 'later@example.com' }), T + 10)));
      expect(await customerRow(t, 'cus_imp')).toMatchObject({ link_state: 'email_matched', external_id: 'later', email: 'later@example.com' });
    });

    it('a visitor-linked customer stays with its visitor when an email arrives', async () => {
      await person('visited', undefined);
      await t.post('/v1/persons', { external_id: 'visited', visitor_id: 'v-vis' });
      await person('mailer', 'mailer@example.com');
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession('cus_vis', { tr_visitor_id: 'v-vis' }))));
      await ok(deliver(t, notification('customer.updated', customer('cus_vis', { email: 'mailer@example.com' }))));
      expect(await customerRow(t, 'cus_vis')).toMatchObject({ link_state: 'linked', external_id: null, visitor_person: 'visited' });
    });

    it('customer.deleted leaves the customer as it was, and stores nothing for one never seen', async () => {
      const T = nowS();
      await person('del', 'del@example.com');
      await ok(deliver(t, notification('customer.created', customer('cus_del', { email: 'del@example.com' }), T)));
      await ok(deliver(t, notification('customer.deleted', customer('cus_del', { email: 'changed@example.com' }), T + 10)));
      expect(await customerRow(t, 'cus_del')).toMatchObject({ link_state: 'email_matched', external_id: 'del', email: 'del@example.com' });
      await ok(deliver(t, notification('customer.deleted', customer('cus_gone', { email: 'del@example.com' }), T + 10)));
      expect(await customerRow(t, 'cus_gone')).toBeUndefined();
    });

    it('a Customer whose email is null, missing or not a string is acknowledged', async () => {
      await person('fuzz', 'fuzz@example.com');
      // null or blank: the Customer has no email; missing or not a string: the known one stays.
      let expected: string | null = null;
      await fc.assert(fc.asyncProperty(
        fc.oneof(fc.constant(null), fc.constant(undefined), fc.constant(' FUZZ@example.com'), fc.string(), fc.anything()),
        async (email) => {
          const object: Record<string, unknown> = customer('cus_fuzz', { email });
          if (email === undefined) delete object.email;
          const res = await deliver(t, notification('customer.updated', object));
          expect(res.statusCode, res.body).toBe(200);
          if (email === null || typeof email === 'string') expected = typeof email === 'string' ? email.trim().toLowerCase() || null : null;
          const row = await customerRow(t, 'cus_fuzz');
          expect(row).toMatchObject({ email: expected, link_state: expected === 'fuzz@example.com' ? 'email_matched' : 'unmatched' });
        },
      ), { numRuns: tierRuns(60) });
      for (const id of [null, 42, '', { nested: true }, 'x'.repeat(300)]) {
        await ok(deliver(t, notification('customer.updated', { ...customer('ignored'), id, email: 'who@example.com' })));
      }
      expect(await count(t, 'payment_customers')).toBe(1);
    });
  });

  describe('delivery', () => {
    it('a repeated notification id is processed once', async () => {
      const event = notification('customer.subscription.deleted', subscription('cus_d', { status: 'canceled', metadata: { tr_user_id: 'ud' } }));
      expect(await ok(deliver(t, event))).toEqual({ received: true, duplicate: false });
      expect(await ok(deliver(t, event))).toEqual({ received: true, duplicate: true });
      expect(await count(t, 'payment_events')).toBe(1);
      expect(await count(t, 'processed_notifications')).toBe(1);
      expect(await count(t, 'payment_customers')).toBe(1);
    });

    it.each([
      ['forged', { secret: 'whsec_forged' }],
      ['missing', { header: null }],
      ['garbage', { header: 't=abc,v1=zzz' }],
      ['stale', { timestamp: nowS() - 301 }],
      ['unknown workspace', { workspaceId: 'ws_nope' }],
    ])('a %s signature is a 400 and stores nothing', async (_name, opts) => {
      const res = await deliver(t, notification('checkout.session.completed', checkoutSession('cus_s', { tr_user_id: 'us' })), opts);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_signature');
      for (const table of ['processed_notifications', 'payment_customers', 'persons']) expect(await count(t, table)).toBe(0);
    });

    it('a signed body that is not a notification is a 400', async () => {
      expect((await deliver(t, null, { raw: '{"not":"an event"}' })).statusCode).toBe(400);
      expect((await deliver(t, null, { raw: 'not json' })).json().error).toBe('invalid_json');
      expect(await count(t, 'processed_notifications')).toBe(0);
    });

    it('unhandled types are acknowledged; an unpaid guest session or payment intent is no payer', async () => {
      await ok(deliver(t, notification('product.created', { id: 'prod_1', object: 'product' })));
      // Types naming a customer, outside the families applied, are ignored too (a card's billing email included).
      await ok(deliver(t, notification('payment_method.attached', {
        id: 'pm_1', object: 'payment_method', type: 'card', customer: 'cus_pm', billing_details: { email: 'card@example.com' }, metadata: {},
      })));
      await ok(deliver(t, notification('customer.source.created', { id: 'card_1', object: 'card', customer: 'cus_pm' })));
      await ok(deliver(t, notification('customer.discount.created', { id: 'di_1', object: 'discount', customer: 'cus_pm' })));
      await ok(deliver(t, notification('checkout.session.completed', checkoutSession(null, { tr_user_id: 'guest' }, null, { mode: 'payment', payment_status: 'unpaid' }))));
      await ok(deliver(t, notification('checkout.session.expired', checkoutSession(null, { tr_user_id: 'guest' }, null, { mode: 'payment', payment_status: 'unpaid' }))));
      await ok(deliver(t, notification('payment_intent.payment_failed', paymentIntent(null, { tr_user_id: 'guest' }, { status: 'requires_payment_method' }))));
      expect(await count(t, 'payment_customers')).toBe(0);
      expect(await count(t, 'persons')).toBe(0);
    });
  });

  describe('workspace isolation', () => {
    it('A\'s notification on B\'s path is rejected; A never links to B\'s persons', async () => {
      const b = await t.workspaces.create('b');
      await t.post('/v1/persons', { external_id: 'shared', email: 'shared@example.com' }, b.secret_key);
      const event = notification('checkout.session.completed', checkoutSession('cus_a', { tr_user_id: 'shared' }, 'shared@example.com'));
      expect((await deliver(t, event, { workspaceId: b.workspace_id })).statusCode).toBe(400);
      expect(await count(t, 'payment_customers', b.workspace_id)).toBe(0);
      await ok(deliver(t, event));
      const rows = await controlRows(t, `SELECT p.workspace_id FROM payment_customers c JOIN persons p ON p.person_key = c.person_key
        WHERE c.customer_id = 'cus_a'`);
      expect(rows).toEqual([{ workspace_id: t.ws.workspace_id }]);
      const lookup = await get('/people?q=cus_a', b.secret_key);
      expect(lookup.json().data).toEqual([]);
    });
  });

  describe('lifecycle events and state', () => {
    it('first paid invoice: the earliest paid, whatever the arrival order; cancellation; a refund once however announced', async () => {
      const T = nowS();
      const paid = (id: string, at: number) => notification('invoice.paid', invoice('cus_l', { id, paid_at: at }), at);
      await ok(deliver(t, notification('payment_intent.succeeded', paymentIntent('cus_l', { tr_user_id: 'ul' }, { id: 'pi_l', latest_charge: 'ch_l' }), T)));
      await ok(deliver(t, paid('in_2', T + 50)));
      await ok(deliver(t, paid('in_1', T + 10))); // arrives late, was paid earlier
      await ok(deliver(t, paid('in_3', T + 90)));
      await ok(deliver(t, notification('customer.subscription.deleted', subscription('cus_l', { id: 'sub_l', status: 'canceled' }), T + 100)));
      const re = refund('ch_l', 'pi_l', { id: 're_l', amount: 2000 });
      await ok(deliver(t, notification('refund.created', re, T + 110)));
      await ok(deliver(t, notification('charge.refunded', charge('cus_l', { id: 'ch_l', payment_intent: 'pi_l', refunded: true, refunds: [re] }), T + 111)));
      // API versions from 2022-11-15 send charge.refunded without its refunds: its amount_refunded is re_l's.
      await ok(deliver(t, notification('charge.refunded', charge('cus_l', { id: 'ch_l', payment_intent: 'pi_l', refunded: true }), T + 112)));
      const events = await storedRows(t, 'payment_events', ['kind', 'object_id', 'customer_id'], ['kind', 'object_id']);
      expect(events).toEqual([
        { kind: 'first_paid_invoice', object_id: 'in_1', customer_id: 'cus_l' },
        { kind: 'refund_issued', object_id: 're_l', customer_id: 'cus_l' },
        { kind: 'subscription_canceled', object_id: 'sub_l', customer_id: 'cus_l' },
      ]);
    });

    it('subscription and invoice state: the newest created wins', async () => {
      const T = nowS();
      await ok(deliver(t, notification('customer.subscription.updated', subscription('cus_s', {
        id: 'sub_s', status: 'past_due', price: 'price_team', product: 'prod_team', interval: 'year', unit_amount: 1500, quantity: 3, cancel_at_period_end: true,
      }), T + 20)));
      await ok(deliver(t, notification('customer.subscription.created', subscription('cus_s', { id: 'sub_s', status: 'active' }), T)));
      await ok(deliver(t, notification('invoice.finalized', invoice('cus_s', { id: 'in_s', status: 'open', subscription: 'sub_s' }), T)));
      await ok(deliver(t, notification('invoice.paid', invoice('cus_s', { id: 'in_s', status: 'paid', subscription: 'sub_s' }), T + 5)));
      const [sub] = await storedRows(t, 'subscriptions', ['status', 'price_id', 'product_id', '"interval"', 'amount', 'currency', 'cancel_at_period_end']);
      expect(sub).toEqual({ status: 'past_due', price_id: 'price_team', product_id: 'prod_team', interval: 'year', amount: 4500, currency: 'usd', cancel_at_period_end: true });
      const [inv] = await storedRows(t, 'invoices', ['status', 'amount_due', 'amount_paid', 'subscription_id']);
      expect(inv).toEqual({ status: 'paid', amount_due: 2000, amount_paid: 2000, subscription_id: 'sub_s' });
    });

    it('acknowledges a subscription whose amount does not fit 64 bits, keeping it with the amount unknown', async () => {
      const max = Number.MAX_SAFE_INTEGER;
      await ok(deliver(t, notification('customer.subscription.created', subscription('cus_big', { id: 'sub_big', unit_amount: max, quantity: max }))));
      await ok(deliver(t, notification('customer.subscription.created', subscription('cus_big', { id: 'sub_fits', unit_amount: max, quantity: 1 }))));
      const rows = await storedRows(t, 'subscriptions', ['subscription_id', 'customer_id', 'status', 'amount'], ['subscription_id']);
      expect(rows.filter((r) => r.customer_id === 'cus_big')).toEqual([
        { subscription_id: 'sub_big', customer_id: 'cus_big', status: 'active', amount: null },
        { subscription_id: 'sub_fits', customer_id: 'cus_big', status: 'active', amount: max },
      ]);
    });
  });
});
