// Revenue attribution on Stripe's real payloads (issue 14, decisions §10 "Settled against Stripe's
// real payloads"): every flow built from Stripe's published objects (test/fixtures/stripe), wrapped
// in event envelopes, signed with the stripe package and delivered in the order Stripe sends them;
// each checks GET /people, the payments leaves through compile, and the stored amounts.

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PaymentWebhook } from '../src/attribution/webhook.js';
import { Ingest } from '../src/ingest/ingest.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { controlRows, oneTimePayments as storedOneTimePayments, storedRows } from './support/stored.js';
import {
  charge, checkoutSession, count, customer, customerRow, deliver, fixture, invoice, invoicePayment, layoutDifferences, notification,
  nowS, paymentIntent, refund, type StripeObject, subscription, thinEvent,
} from './support/stripe.js';

let t: TestApp;

const DAY = 86_400;

/** Delivers each notification in turn; every one must be acknowledged. */
async function send(...events: ReturnType<typeof notification>[]): Promise<Record<string, unknown>[]> {
  const bodies = [];
  for (const e of events) {
    const res = await deliver(t, e);
    expect(res.statusCode, `${e.type}: ${res.body}`).toBe(200);
    bodies.push(res.json() as Record<string, unknown>);
  }
  return bodies;
}

interface Person { person_id: string | null; external_id: string | null; email: string | null; customer_ids: string[]; link_state: string | null; first_touch_channel: string }
async function people(q: string): Promise<Person[]> {
  const res = await t.app.inject({ method: 'GET', url: `/people?q=${encodeURIComponent(q)}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as Person[];
}

async function estimate(root: unknown): Promise<number> {
  const res = await t.compile({ version: 1, root });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().valid, res.body).toBe(true);
  return res.json().estimated_count.count as number;
}

const ever = { kind: 'ever' };
const lastDays = (n: number) => ({ kind: 'last_n_days', n });
const paymentEvent = (event: string, window: object = ever) => ({ source: 'payments', event, occurrence: { window } });
const subscriptionStatus = (status: string) => ({ source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: status } } });
const did = (name: string) => ({ source: 'product_event', name, occurrence: { op: 'did', count: null, window: ever } });

/** Rows of the test's workspace: `sql` filters on `workspace_id = $1`. */
const query = (sql: string) => controlRows(t, sql, [t.ws.workspace_id]);
const events = () => storedRows(t, 'payment_events', ['customer_id', 'kind', 'object_id', 'amount', 'currency', 'ts'], ['kind', 'object_id']);
const oneTimePayments = () => storedOneTimePayments(t);
const refunds = () => query('SELECT refund_id, customer_id, amount, currency, status FROM refunds WHERE workspace_id = $1 ORDER BY refund_id');
const at = (s: number) => new Date(s * 1000);

/** A visit an hour ago: before the flows' payments (a touch counts at or before the first payment, decisions §10). */
const pageview = async (visitorId: string, referrer: string) => {
  const timestamp = new Date((nowS() - 3600) * 1000).toISOString();
  const res = await t.post('/v1/pageviews', { visitor_id: visitorId, url: 'https://shop.example/pricing', referrer, timestamp }, t.ws.publishable_key);
  expect(res.statusCode, res.body).toBe(200);
};

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => { t = await startTestApp({ engine }); });
  beforeEach(() => t.freshWorkspace());
  afterAll(async () => { await t.close(); });

  describe('the objects sent', () => {
    it('have exactly the fields of Stripe\'s published fixtures', () => {
      const built: [string, StripeObject][] = [
        ['checkout_session', checkoutSession(null, { tr_user_id: 'u' }, 'a@example.com', { mode: 'payment', client_reference_id: 'v' })],
        ['checkout_session', checkoutSession('cus_1')],
        ['payment_intent', paymentIntent(null, { tr_visitor_id: 'v' }, { receipt_email: 'a@example.com' })],
        ['charge', charge(null, { payment_intent: 'pi_1', refunds: [refund('ch_1', 'pi_1')], email: 'a@example.com' })],
        ['refund', refund('ch_1', 'pi_1', { customer: 'cus_1', status: 'pending' })],
        ['invoice', invoice('cus_1', { subscription: 'sub_1', amount: 0 })],
        ['customer', customer('cus_1', { email: 'a@example.com' })],
        ['subscription', subscription('cus_1', { status: 'trialing', trial_end: nowS() + DAY })],
        ['invoice_payment', invoicePayment('in_1', 'pi_1')],
      ];
      for (const [name, object] of built.slice(0, -1)) expect(layoutDifferences(object, fixture(name)), name).toEqual([]);
      // Since API version 2022-11-15 a charge comes without its refunds (the fixture shows the list expanded).
      expect(layoutDifferences(charge('cus_1'), fixture('charge'))).toEqual(['/refunds: missing']);
      // The fixture's invoice payment shows only the payment's type; the API reference adds its id.
      expect(layoutDifferences(built.at(-1)![1], fixture('invoice_payment'))).toEqual(['/payment/payment_intent: not in the fixture']);
      // The envelope's own fields (its object is the invoice's, not the fixture event's plan).
      const { data, ...envelope } = notification('invoice.paid', invoice('cus_1'));
      const { data: modelData, ...model } = fixture('event');
      expect(layoutDifferences(envelope, model)).toEqual([]);
      expect(Object.keys(data)).toEqual(Object.keys(modelData as object));
      // The check itself sees an added or a missing field.
      expect(layoutDifferences({ ...refund('ch_1'), extra: 1 }, fixture('refund'))).toEqual(['/extra: not in the fixture']);
      const { charge: _, ...missing } = refund('ch_1');
      expect(layoutDifferences(missing, fixture('refund'))).toEqual(['/charge: missing']);
    });
  });

  describe('subscription checkout, in Stripe\'s delivery order', () => {
    it('links the customer when checkout.session.completed arrives last; one first paid invoice from invoice.paid and invoice.payment_succeeded', async () => {
      const T = nowS() - 60;
      await pageview('v_ada', 'https://www.google.com/');
      const cus = customer('cus_ada', { email: 'ada@example.com', name: 'Ada' });
      // subscription_data.metadata gave the subscription the user id; the session also has the visitor.
      const sub = subscription('cus_ada', { id: 'sub_ada', status: 'incomplete', metadata: { tr_user_id: 'u_ada' }, created: T });
      const open = invoice('cus_ada', { id: 'in_ada', status: 'open', subscription: 'sub_ada', created: T, customer_email: 'ada@example.com' });
      const paid = invoice('cus_ada', { id: 'in_ada', status: 'paid', subscription: 'sub_ada', created: T, paid_at: T + 3, customer_email: 'ada@example.com' });
      const intent = paymentIntent('cus_ada', {}, { id: 'pi_ada', latest_charge: 'ch_ada', created: T });
      const session = checkoutSession('cus_ada', { tr_user_id: 'u_ada', tr_visitor_id: 'v_ada' }, 'ada@example.com',
        { subscription: 'sub_ada', invoice: 'in_ada', created: T });
      await send(
        notification('customer.created', cus, T),
        notification('payment_method.attached', { id: 'pm_ada', object: 'payment_method', customer: 'cus_ada' }, T),
        notification('customer.updated', cus, T + 1),
        notification('customer.subscription.created', sub, T + 1),
        notification('payment_intent.created', { ...intent, status: 'requires_payment_method', amount_received: 0 }, T + 1),
        notification('invoice.created', { ...open, status: 'draft' }, T + 1),
        notification('invoice.finalized', open, T + 2),
        notification('charge.succeeded', charge('cus_ada', { id: 'ch_ada', payment_intent: 'pi_ada', email: 'ada@example.com', created: T + 3 }), T + 3),
        notification('payment_intent.succeeded', intent, T + 3),
        notification('invoice_payment.paid', invoicePayment('in_ada', 'pi_ada'), T + 3),
        notification('customer.subscription.updated', { ...sub, status: 'active' }, T + 4),
        notification('invoice.updated', paid, T + 4),
        notification('invoice.paid', paid, T + 4),
        notification('invoice.payment_succeeded', paid, T + 4),
      );
      // Before the session: linked by the subscription's user id, the acquiring visitor not known yet.
      expect(await customerRow(t, 'cus_ada')).toMatchObject({ link_state: 'linked', external_id: 'u_ada', visitor_id: null, email: 'ada@example.com' });
      expect(await people('ada')).toEqual([expect.objectContaining({ customer_ids: ['cus_ada'], first_touch_channel: 'Non-attributed' })]);
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(1);
      await send(notification('checkout.session.completed', session, T + 5));

      expect(await people('ada')).toEqual([expect.objectContaining({
        external_id: 'u_ada', email: 'ada@example.com', customer_ids: ['cus_ada'], link_state: 'linked', first_touch_channel: 'Organic Search',
      })]);
      expect(await estimate(subscriptionStatus('active'))).toBe(1);
      expect(await estimate(paymentEvent('first_paid_invoice', lastDays(1)))).toBe(1);
      expect(await estimate(paymentEvent('refund_issued'))).toBe(0);
      expect(await events()).toEqual([
        { customer_id: 'cus_ada', kind: 'first_paid_invoice', object_id: 'in_ada', amount: 2000, currency: 'usd', ts: at(T + 3) },
      ]);
      expect(await storedRows(t, 'invoices', ['invoice_id', 'status', 'amount_paid', 'currency', 'paid_at'])).toEqual([
        { invoice_id: 'in_ada', status: 'paid', amount_paid: 2000, currency: 'usd', paid_at: at(T + 3) },
      ]);
      // The subscription's payment intent paid the invoice: it is not also a one-time payment.
      expect(await query('SELECT payment_id, invoice_id, amount FROM payments WHERE workspace_id = $1')).toEqual([{ payment_id: 'pi_ada', invoice_id: 'in_ada', amount: 2000 }]);
      expect(await oneTimePayments()).toEqual([]);
    });
  });

  describe('guest one-time checkout (customer: null)', () => {
    /** Stripe's order for a payment-mode Checkout without a Customer: the intent, its charge, then the session. */
    const guestCheckout = (o: { pi: string; metadata?: Record<string, string>; email: string | null; amount?: number; T: number; reference?: string }) => {
      const amount = o.amount ?? 4900;
      const intent = paymentIntent(null, {}, { id: o.pi, latest_charge: `ch_${o.pi}`, amount, created: o.T });
      return [
        notification('payment_intent.created', { ...intent, status: 'requires_payment_method', amount_received: 0, latest_charge: null }, o.T),
        notification('charge.succeeded', charge(null, { id: `ch_${o.pi}`, payment_intent: o.pi, amount, email: o.email, created: o.T + 1 }), o.T + 1),
        notification('payment_intent.succeeded', intent, o.T + 1),
        notification('checkout.session.completed', checkoutSession(null, o.metadata, o.email,
          { mode: 'payment', payment_intent: o.pi, amount, created: o.T, client_reference_id: o.reference }), o.T + 2),
      ];
    };

    it('with metadata: one payer keyed by the payment intent, linked, listed, its payment kept', async () => {
      const T = nowS() - 60;
      await pageview('v_bo', 'https://chatgpt.com/');
      await send(...guestCheckout({ pi: 'pi_bo', metadata: { tr_user_id: 'u_bo', tr_visitor_id: 'v_bo' }, email: 'bo@example.com', T }));
      expect(await query('SELECT customer_id, link_state, email FROM payment_customers WHERE workspace_id = $1')).toEqual([
        { customer_id: 'pi_bo', link_state: 'linked', email: 'bo@example.com' },
      ]);
      expect(await people('bo@')).toEqual([expect.objectContaining({
        external_id: 'u_bo', customer_ids: ['pi_bo'], link_state: 'linked', first_touch_channel: 'AI',
      })]);
      expect(await people('pi_bo')).toHaveLength(1);
      expect(await oneTimePayments()).toEqual([{ payment_id: 'pi_bo', customer_id: 'pi_bo', amount: 4900, currency: 'usd' }]);
      // A one-time payment is no invoice; nothing was refunded.
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(0);
      expect(await estimate(paymentEvent('refund_issued'))).toBe(0);
    });

    it('the session first, then its intent and charge: the same payer', async () => {
      const T = nowS() - 60;
      const [created, charged, succeeded, completed] = guestCheckout({ pi: 'pi_rev', metadata: { tr_user_id: 'u_rev' }, email: 'rev@example.com', T });
      await send(completed!, succeeded!, charged!, created!);
      expect(await query('SELECT customer_id FROM payment_customers WHERE workspace_id = $1')).toEqual([{ customer_id: 'pi_rev' }]);
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(0);
      expect(await people('u_rev')).toEqual([expect.objectContaining({ customer_ids: ['pi_rev'], link_state: 'linked' })]);
      expect(await oneTimePayments()).toEqual([{ payment_id: 'pi_rev', customer_id: 'pi_rev', amount: 4900, currency: 'usd' }]);
    });

    it('without metadata: email matched, unmatched, or deferred on an anonymous visitor then linked', async () => {
      const T = nowS() - 60;
      expect((await t.post('/v1/persons', { external_id: 'cy', email: 'cy@example.com' })).statusCode).toBe(200);
      expect((await t.post('/v1/events', { event_name: 'signup', user_id: 'cy' })).statusCode).toBe(200);
      await pageview('v_dee', 'https://www.facebook.com/');
      await send(
        ...guestCheckout({ pi: 'pi_cy', email: ' Cy@Example.com', T }),
        ...guestCheckout({ pi: 'pi_nobody', email: 'nobody@example.com', T: T + 10 }),
        ...guestCheckout({ pi: 'pi_dee', metadata: { tr_visitor_id: 'v_dee' }, email: null, T: T + 20 }),
      );
      expect(await people('cy@')).toEqual([expect.objectContaining({ external_id: 'cy', customer_ids: ['pi_cy'], link_state: 'email_matched' })]);
      expect(await people('nobody@')).toEqual([{
        person_id: null, external_id: null, email: 'nobody@example.com', name: null, customer_ids: ['pi_nobody'], link_state: 'unmatched',
        first_touch_channel: 'Non-attributed',
      }]);
      expect(await people('pi_dee')).toEqual([expect.objectContaining({ person_id: null, link_state: 'deferred', first_touch_channel: 'Organic Social' })]);
      expect((await t.post('/v1/events', { event_name: 'login', user_id: 'dee', visitor_id: 'v_dee' })).statusCode).toBe(200);
      expect(await people('pi_dee')).toEqual([expect.objectContaining({ external_id: 'dee', customer_ids: ['pi_dee'], link_state: 'linked' })]);
      expect((await oneTimePayments()).map((p) => p.payment_id)).toEqual(['pi_cy', 'pi_dee', 'pi_nobody']);
      // Refunding cy's payment puts the payer who signed up in the refund leaf.
      await send(notification('refund.created', refund('ch_pi_cy', 'pi_cy', { id: 're_cy', amount: 4900 }), T + 100));
      expect(await estimate({ op: 'and', children: [did('signup'), paymentEvent('refund_issued')] })).toBe(1);
    });
  });

  describe('a payment intent created through the API', () => {
    it('a guest intent carries its metadata and receipt email; an intent of a Customer is the Customer\'s', async () => {
      const T = nowS() - 60;
      expect((await t.post('/v1/persons', { external_id: 'eve', visitor_id: 'v_eve' })).statusCode).toBe(200);
      const guest = paymentIntent(null, { tr_visitor_id: 'v_eve' }, { id: 'pi_eve', latest_charge: 'ch_eve', amount: 1500, receipt_email: 'eve@example.com' });
      const owned = paymentIntent('cus_fay', { tr_user_id: 'fay' }, { id: 'pi_fay', latest_charge: 'ch_fay', amount: 2500, currency: 'eur' });
      await send(
        notification('payment_intent.created', { ...guest, status: 'requires_confirmation', amount_received: 0 }, T),
        notification('payment_intent.succeeded', guest, T + 1),
        notification('charge.succeeded', charge(null, { id: 'ch_eve', payment_intent: 'pi_eve', amount: 1500 }), T + 1),
        notification('payment_intent.succeeded', owned, T + 2),
      );
      expect(await customerRow(t, 'pi_eve')).toMatchObject({ link_state: 'linked', visitor_person: 'eve', email: 'eve@example.com' });
      expect(await people('eve')).toEqual([expect.objectContaining({ external_id: 'eve', customer_ids: ['pi_eve'], link_state: 'linked' })]);
      expect(await people('fay')).toEqual([expect.objectContaining({ external_id: 'fay', customer_ids: ['cus_fay'], link_state: 'linked' })]);
      expect(await oneTimePayments()).toEqual([
        { payment_id: 'pi_eve', customer_id: 'pi_eve', amount: 1500, currency: 'usd' },
        { payment_id: 'pi_fay', customer_id: 'cus_fay', amount: 2500, currency: 'eur' },
      ]);
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(0);
    });
  });

  describe('refunds, one per refund however Stripe announces it', () => {
    const paidGuest = async (pi: string, amount: number, T: number) => {
      await send(
        notification('payment_intent.succeeded', paymentIntent(null, { tr_user_id: `u_${pi}` }, { id: pi, latest_charge: `ch_${pi}`, amount }), T),
        notification('charge.succeeded', charge(null, { id: `ch_${pi}`, payment_intent: pi, amount }), T),
      );
    };

    it('a partial refund announced by refund.created, charge.refunded with its refunds, charge.refund.updated and refund.updated', async () => {
      const T = nowS() - 60;
      await paidGuest('pi_p', 4900, T);
      const pending = refund('ch_pi_p', 'pi_p', { id: 're_p1', amount: 1000, status: 'pending', created: T + 10 });
      const done = { ...pending, status: 'succeeded' };
      await send(
        notification('refund.created', pending, T + 10),
        notification('charge.refunded', charge(null, { id: 'ch_pi_p', payment_intent: 'pi_p', amount: 4900, amount_refunded: 1000, refunds: [done] }), T + 11),
        notification('charge.refund.updated', done, T + 12),
        notification('refund.updated', done, T + 12),
      );
      expect(await events()).toEqual([
        { customer_id: 'pi_p', kind: 'refund_issued', object_id: 're_p1', amount: 1000, currency: 'usd', ts: at(T + 10) },
      ]);
      expect(await refunds()).toEqual([{ refund_id: 're_p1', customer_id: 'pi_p', amount: 1000, currency: 'usd', status: 'succeeded' }]);
      expect(await estimate(paymentEvent('refund_issued'))).toBe(1);
      expect(await people('u_pi_p')).toEqual([expect.objectContaining({ customer_ids: ['pi_p'], link_state: 'linked' })]);
    });

    it('two refunds announced only by charge.refunded give two; together the full amount', async () => {
      const T = nowS() - 60;
      await paidGuest('pi_two', 4900, T);
      const first = refund('ch_pi_two', 'pi_two', { id: 're_a', amount: 1000, created: T + 10 });
      const second = refund('ch_pi_two', 'pi_two', { id: 're_b', amount: 3900, created: T + 20 });
      await send(
        notification('charge.refunded', charge(null, { id: 'ch_pi_two', payment_intent: 'pi_two', amount: 4900, amount_refunded: 1000, refunds: [first] }), T + 10),
        notification('charge.refunded', charge(null, { id: 'ch_pi_two', payment_intent: 'pi_two', amount: 4900, refunded: true, refunds: [second, first] }), T + 20),
      );
      expect((await events()).map((e) => [e.object_id, e.amount])).toEqual([['re_a', 1000], ['re_b', 3900]]);
      expect(await estimate(paymentEvent('refund_issued', lastDays(1)))).toBe(1);
      expect(await people('u_pi_two')).toEqual([expect.objectContaining({ customer_ids: ['pi_two'], link_state: 'linked' })]);
      const [payment] = await oneTimePayments();
      const [refunded] = await query("SELECT sum(amount) AS amount FROM refunds WHERE workspace_id = $1 AND payment_intent_id = 'pi_two'");
      expect(payment).toMatchObject({ payment_id: 'pi_two' });
      expect(payment!.amount).toBe(refunded!.amount);
    });

    it('a full refund announced only by charge.refund.updated; a failed refund stops counting', async () => {
      const T = nowS() - 60;
      await paidGuest('pi_full', 2000, T);
      await paidGuest('pi_fail', 2000, T);
      await send(
        notification('charge.refund.updated', refund('ch_pi_full', 'pi_full', { id: 're_full', amount: 2000, created: T + 5 }), T + 5),
        notification('refund.created', refund('ch_pi_fail', 'pi_fail', { id: 're_fail', amount: 2000, status: 'pending', created: T + 5 }), T + 5),
      );
      expect(await estimate(paymentEvent('refund_issued'))).toBe(2);
      await send(notification('refund.failed', refund('ch_pi_fail', 'pi_fail', { id: 're_fail', amount: 2000, status: 'failed', created: T + 5 }), T + 9));
      expect((await events()).map((e) => e.object_id)).toEqual(['re_full']);
      expect(await refunds()).toEqual([
        { refund_id: 're_fail', customer_id: 'pi_fail', amount: 2000, currency: 'usd', status: 'failed' },
        { refund_id: 're_full', customer_id: 'pi_full', amount: 2000, currency: 'usd', status: 'succeeded' },
      ]);
      expect(await estimate(paymentEvent('refund_issued'))).toBe(1);
      expect(await people('u_pi_fail')).toEqual([expect.objectContaining({ customer_ids: ['pi_fail'], link_state: 'linked' })]);
    });
  });

  describe('out-of-order delivery', () => {
    it('a refund of a payment never seen is kept, and attributed when the payment arrives', async () => {
      const T = nowS() - 60;
      await send(notification('refund.created', refund('ch_late', 'pi_late', { id: 're_late', amount: 700, created: T + 30 }), T + 30));
      expect(await refunds()).toEqual([{ refund_id: 're_late', customer_id: null, amount: 700, currency: 'usd', status: 'succeeded' }]);
      expect(await count(t, 'payment_customers')).toBe(0);
      expect(await events()).toEqual([]);
      await send(notification('checkout.session.completed',
        checkoutSession(null, { tr_user_id: 'u_late' }, 'late@example.com', { mode: 'payment', payment_intent: 'pi_late', amount: 700 }), T));
      expect(await events()).toEqual([
        { customer_id: 'pi_late', kind: 'refund_issued', object_id: 're_late', amount: 700, currency: 'usd', ts: at(T + 30) },
      ]);
      expect(await people('u_late')).toEqual([expect.objectContaining({ customer_ids: ['pi_late'], link_state: 'linked' })]);
      expect(await estimate(paymentEvent('refund_issued'))).toBe(1);
    });

    it('a refund naming only its Customer is the Customer\'s; an older refund state arriving late does not win', async () => {
      const T = nowS() - 60;
      await send(
        notification('charge.refund.updated', refund('ch_c', null, { id: 're_c', amount: 500, status: 'succeeded', customer: 'cus_c', created: T }), T + 9),
        notification('refund.created', refund('ch_c', null, { id: 're_c', amount: 500, status: 'pending', customer: 'cus_c', created: T }), T),
      );
      expect(await refunds()).toEqual([{ refund_id: 're_c', customer_id: 'cus_c', amount: 500, currency: 'usd', status: 'succeeded' }]);
      expect((await events()).map((e) => [e.customer_id, e.object_id])).toEqual([['cus_c', 're_c']]);
      expect(await people('cus_c')).toEqual([expect.objectContaining({ person_id: null, customer_ids: ['cus_c'], link_state: 'unmatched' })]);
      // A payer linked to nobody is in no audience.
      expect(await estimate(paymentEvent('refund_issued'))).toBe(0);
    });

    it('an invoice payment linked before its payment intent arrives is not counted as a one-time payment', async () => {
      const T = nowS() - 60;
      await send(
        notification('invoice.paid', invoice('cus_o', { id: 'in_o', subscription: 'sub_o', paid_at: T }), T),
        notification('invoice_payment.paid', invoicePayment('in_o', 'pi_o'), T),
        notification('payment_intent.succeeded', paymentIntent('cus_o', {}, { id: 'pi_o' }), T + 1),
      );
      expect(await oneTimePayments()).toEqual([]);
      expect(await query('SELECT payment_id, invoice_id, amount FROM payments WHERE workspace_id = $1')).toEqual([{ payment_id: 'pi_o', invoice_id: 'in_o', amount: 2000 }]);
      expect(await people('cus_o')).toEqual([expect.objectContaining({ customer_ids: ['cus_o'], link_state: 'unmatched' })]);
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(0);
    });
  });

  describe('trials and coupons', () => {
    const trialStart = (id: string, T: number) => {
      const zero = invoice(`cus_${id}`, { id: `in_${id}_0`, subscription: `sub_${id}`, amount: 0, created: T, paid_at: T });
      return [
        notification('customer.created', customer(`cus_${id}`, { email: `${id}@example.com` }), T),
        notification('customer.subscription.created', subscription(`cus_${id}`, { id: `sub_${id}`, status: 'trialing', trial_end: T + 14 * DAY, created: T, metadata: { tr_user_id: id } }), T),
        notification('invoice.paid', zero, T),
        notification('invoice.payment_succeeded', zero, T),
        notification('checkout.session.completed', checkoutSession(`cus_${id}`, { tr_user_id: id }, `${id}@example.com`,
          { subscription: `sub_${id}`, amount: 0, payment_status: 'no_payment_required', created: T }), T + 1),
      ];
    };

    it('a trial is no payment; it converts on the first invoice that is paid', async () => {
      const T = nowS() - 20 * DAY;
      await send(...trialStart('gus', T));
      expect(await estimate(subscriptionStatus('trialing'))).toBe(1);
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(0);
      const conversion = invoice('cus_gus', { id: 'in_gus_1', subscription: 'sub_gus', billing_reason: 'subscription_cycle', created: T + 14 * DAY, paid_at: T + 14 * DAY + 60 });
      await send(
        notification('customer.subscription.updated', subscription('cus_gus', { id: 'sub_gus', status: 'active', created: T }), T + 14 * DAY),
        notification('invoice.payment_succeeded', conversion, T + 14 * DAY + 61),
        notification('invoice.paid', conversion, T + 14 * DAY + 61),
      );
      expect((await events()).map((e) => [e.object_id, e.amount, e.ts])).toEqual([['in_gus_1', 2000, at(T + 14 * DAY + 60)]]);
      // The first paid invoice is the conversion, six days ago, not the trial start twenty days ago.
      expect(await estimate(paymentEvent('first_paid_invoice', lastDays(7)))).toBe(1);
      expect(await estimate(paymentEvent('first_paid_invoice', lastDays(5)))).toBe(0);
      expect(await estimate(subscriptionStatus('active'))).toBe(1);
      expect(await people('gus')).toEqual([expect.objectContaining({ external_id: 'gus', customer_ids: ['cus_gus'], link_state: 'linked' })]);
      expect(await storedRows(t, 'invoices', ['invoice_id', 'amount_paid'], ['invoice_id'])).toEqual([
        { invoice_id: 'in_gus_0', amount_paid: 0 }, { invoice_id: 'in_gus_1', amount_paid: 2000 },
      ]);
    });

    it('a trial canceled unpaid is no payer', async () => {
      const T = nowS() - 20 * DAY;
      await send(...trialStart('hal', T));
      await send(notification('customer.subscription.deleted', subscription('cus_hal', { id: 'sub_hal', status: 'canceled', created: T }), T + 14 * DAY));
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(0);
      expect(await estimate(paymentEvent('subscription_canceled'))).toBe(1);
      expect(await estimate(subscriptionStatus('canceled'))).toBe(1);
      expect((await events()).map((e) => e.kind)).toEqual(['subscription_canceled']);
      expect((await storedRows(t, 'invoices', ['amount_paid'])).reduce((sum, i) => sum + (i.amount_paid as number), 0)).toBe(0);
      expect(await oneTimePayments()).toEqual([]);
      // Still a known customer of the person, who never paid.
      expect(await people('hal')).toEqual([expect.objectContaining({ external_id: 'hal', customer_ids: ['cus_hal'], link_state: 'linked' })]);
    });

    it('a 100 % coupon: $0 invoices are no payment, the first invoice paid after it is; a free one-time checkout is no payer', async () => {
      const T = nowS() - 40 * DAY;
      const free = invoice('cus_ivy', { id: 'in_ivy_0', subscription: 'sub_ivy', amount: 0, paid_at: T });
      await send(
        notification('customer.subscription.created', subscription('cus_ivy', { id: 'sub_ivy', status: 'active', metadata: { tr_user_id: 'ivy' } }), T),
        notification('invoice.paid', free, T),
        notification('invoice.payment_succeeded', free, T),
        notification('checkout.session.completed', checkoutSession(null, { tr_user_id: 'gift' }, 'gift@example.com',
          { mode: 'payment', payment_intent: null, amount: 0, payment_status: 'no_payment_required' }), T),
      );
      expect(await estimate(paymentEvent('first_paid_invoice'))).toBe(0);
      expect(await count(t, 'payment_customers')).toBe(1);
      const full = invoice('cus_ivy', { id: 'in_ivy_1', subscription: 'sub_ivy', billing_reason: 'subscription_cycle', amount: 3000, paid_at: T + 30 * DAY });
      await send(notification('invoice.paid', full, T + 30 * DAY));
      expect((await events()).map((e) => [e.object_id, e.amount])).toEqual([['in_ivy_1', 3000]]);
      expect(await estimate(paymentEvent('first_paid_invoice', lastDays(15)))).toBe(1);
      expect(await oneTimePayments()).toEqual([]);
      expect(await people('ivy')).toEqual([expect.objectContaining({ customer_ids: ['cus_ivy'], link_state: 'linked' })]);
    });
  });

  describe('the Customer object\'s email only', () => {
    it('matches the person with that email; the payments follow', async () => {
      const T = nowS() - 60;
      expect((await t.post('/v1/persons', { external_id: 'jo', email: 'jo@example.com' })).statusCode).toBe(200);
      expect((await t.post('/v1/events', { event_name: 'signup', user_id: 'jo' })).statusCode).toBe(200);
      await send(
        notification('customer.created', customer('cus_jo', { email: 'JO@example.com' }), T),
        notification('customer.subscription.created', subscription('cus_jo', { id: 'sub_jo' }), T + 1),
        // An older endpoint subscribed to invoice.payment_succeeded only.
        notification('invoice.payment_succeeded', invoice('cus_jo', { id: 'in_jo', subscription: 'sub_jo', amount: 1200, paid_at: T + 2 }), T + 2),
      );
      expect(await people('jo@')).toEqual([expect.objectContaining({ external_id: 'jo', customer_ids: ['cus_jo'], link_state: 'email_matched' })]);
      expect(await estimate({ op: 'and', children: [did('signup'), paymentEvent('first_paid_invoice'), subscriptionStatus('active')] })).toBe(1);
      expect((await events()).map((e) => [e.object_id, e.amount, e.currency])).toEqual([['in_jo', 1200, 'usd']]);
    });
  });

  describe('a Payment Link with client_reference_id', () => {
    const linkSession = (pi: string, reference: string, metadata: Record<string, string> = {}, email: string | null = null) => {
      const s = checkoutSession(null, metadata, email, { mode: 'payment', payment_intent: pi, client_reference_id: reference, amount: 900 });
      return notification('checkout.session.completed', { ...s, payment_link: 'plink_1Pgc7' });
    };

    it('a seen visitor is read as tr_visitor_id: deferred, then linked', async () => {
      await pageview('v_kim', 'https://www.facebook.com/');
      await send(linkSession('pi_kim', 'v_kim'));
      expect(await customerRow(t, 'pi_kim')).toMatchObject({ link_state: 'deferred', visitor_id: 'v_kim' });
      expect(await people('pi_kim')).toEqual([expect.objectContaining({ link_state: 'deferred', first_touch_channel: 'Organic Social' })]);
      expect((await t.post('/v1/events', { event_name: 'signup', user_id: 'kim', visitor_id: 'v_kim' })).statusCode).toBe(200);
      expect(await people('kim')).toEqual([expect.objectContaining({ customer_ids: ['pi_kim'], link_state: 'linked', first_touch_channel: 'Organic Social' })]);
      expect(await oneTimePayments()).toEqual([{ payment_id: 'pi_kim', customer_id: 'pi_kim', amount: 900, currency: 'usd' }]);
      // A one-time payment: the person signed up and paid no invoice.
      expect(await estimate({ op: 'and', children: [did('signup'), { op: 'not', child: paymentEvent('first_paid_invoice') }] })).toBe(1);
    });

    it('a value that is no seen visitor is not read; metadata wins over it', async () => {
      await pageview('v_lee', 'https://www.google.com/');
      await pageview('v_other', 'https://www.bing.com/');
      await send(linkSession('pi_order', 'order_8812', {}, 'buyer@example.com'), linkSession('pi_lee', 'v_other', { tr_visitor_id: 'v_lee' }));
      expect(await customerRow(t, 'pi_order')).toMatchObject({ link_state: 'unmatched', visitor_id: null });
      expect(await count(t, 'visitors')).toBe(2);
      expect(await customerRow(t, 'pi_lee')).toMatchObject({ link_state: 'deferred', visitor_id: 'v_lee' });
      expect(await people('pi_lee')).toEqual([expect.objectContaining({ link_state: 'deferred', first_touch_channel: 'Organic Search' })]);
    });
  });

  describe('thin events', () => {
    it('a correctly signed thin event is 400 unsupported_event naming the snapshot payload; a badly signed one is invalid_signature', async () => {
      const res = await deliver(t, thinEvent());
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'unsupported_event', message: expect.stringContaining('snapshot') });
      const forged = await deliver(t, thinEvent(), { secret: 'whsec_forged' });
      expect(forged.json().error).toBe('invalid_signature');
      expect(await count(t, 'processed_notifications')).toBe(0);
    });
  });

  describe('test mode', () => {
    it('a live workspace acknowledges test-mode notifications and stores them nowhere; in test mode the reverse', async () => {
      const T = nowS() - 60;
      const testPayment = notification('checkout.session.completed',
        checkoutSession(null, { tr_user_id: 'u_test' }, 'test@example.com', { mode: 'payment', payment_intent: 'pi_test' }), T, 'evt_test_mode', false);
      const [body] = await send(testPayment);
      expect(body).toEqual({ received: true, ignored: 'livemode' });
      for (const table of ['processed_notifications', 'payment_customers', 'payments', 'persons']) expect(await count(t, table), table).toBe(0);
      // What the route is given to answer (`ignored: "livemode"`).
      const webhook = new PaymentWebhook(t.stores, new Ingest(t.stores));
      const raw = Buffer.from(JSON.stringify(testPayment));
      const { default: Stripe } = await import('stripe');
      const header = new Stripe('sk_test_dummy').webhooks.generateTestHeaderString({ payload: raw.toString(), secret: t.ws.stripe_webhook_secret });
      expect(await webhook.receive(t.ws.workspace_id, raw, header)).toEqual({ duplicate: false, ignored: 'livemode' });

      expect(await t.workspaces.setPaymentsMode(t.ws.workspace_id, 'test')).toBe('live');
      const shown = await t.app.inject({ method: 'GET', url: '/v1/workspace', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
      expect(shown.json()).toMatchObject({ payments_mode: 'test' });
      // Stored nowhere before, so the same notification now applies.
      expect(await send(testPayment)).toEqual([{ received: true, duplicate: false }]);
      expect(await people('u_test')).toEqual([expect.objectContaining({ customer_ids: ['pi_test'], link_state: 'linked' })]);
      await send(notification('checkout.session.completed', checkoutSession(null, { tr_user_id: 'u_live' }, null, { mode: 'payment' }), T));
      expect(await people('u_live')).toEqual([]);
      expect(await count(t, 'processed_notifications')).toBe(1);
    });
  });

  describe('redelivery', () => {
    it('the same notification delivered again is a duplicate and changes nothing', async () => {
      const T = nowS() - 60;
      const session = notification('checkout.session.completed',
        checkoutSession(null, { tr_user_id: 'u_again' }, 'again@example.com', { mode: 'payment', payment_intent: 'pi_again', amount: 3100 }), T);
      const refunded = notification('refund.created', refund('ch_again', 'pi_again', { id: 're_again', amount: 3100 }), T + 5);
      const paid = notification('invoice.paid', invoice('cus_again', { id: 'in_again', paid_at: T }), T);
      expect(await send(session, refunded, paid)).toEqual(Array(3).fill({ received: true, duplicate: false }));
      const before = { events: await events(), payments: await oneTimePayments(), refunds: await refunds() };
      // Stripe retries with the same id and a fresh signature.
      expect(await send(session, refunded, paid, session)).toEqual(Array(4).fill({ received: true, duplicate: true }));
      expect({ events: await events(), payments: await oneTimePayments(), refunds: await refunds() }).toEqual(before);
      expect(before.events.map((e) => e.kind)).toEqual(['first_paid_invoice', 'refund_issued']);
      expect(before.payments).toEqual([{ payment_id: 'pi_again', customer_id: 'pi_again', amount: 3100, currency: 'usd' }]);
      expect(await count(t, 'processed_notifications')).toBe(3);
      expect(await people('u_again')).toEqual([expect.objectContaining({ customer_ids: ['pi_again'], link_state: 'linked' })]);
      expect(await estimate(paymentEvent('refund_issued'))).toBe(1);
    });
  });
});
