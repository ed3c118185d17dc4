// Stripe notifications built from Stripe's own published objects (test/fixtures/stripe, see its
// README): each builder copies a fixture and changes only ids, emails, amounts, metadata, times and
// the state a flow needs, then wraps it in the fixture event envelope, signed with the stripe
// package's test helper.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import Stripe from 'stripe';
import type { TestApp } from './app.js';
import { controlRows, storedCount } from './stored.js';

const stripe = new Stripe('sk_test_dummy');
let seq = 0;
const nextId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(seq++).toString(36)}`;

export const nowS = () => Math.floor(Date.now() / 1000);

type Json = Record<string, unknown>;
/** A built object: its fields are the fixture's, its id a string. */
export type StripeObject = Json & { id: string };
const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'stripe');
const cache = new Map<string, Json>();

/** A fresh copy of a fixture object (`checkout_session`, `charge`, …). */
export function fixture(name: string): Json {
  let loaded = cache.get(name);
  if (!loaded) cache.set(name, (loaded = JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), 'utf8')) as Json));
  return structuredClone(loaded);
}

const isPlain = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Where `value` departs from the fixture's field layout: keys added or missing, at any depth where
 * both sides are objects (metadata is free-form; an array's items are held to the fixture's first).
 */
export function layoutDifferences(value: unknown, model: unknown, at = ''): string[] {
  if (Array.isArray(value) && Array.isArray(model)) {
    return model.length === 0 ? [] : value.flatMap((item, i) => layoutDifferences(item, model[0], `${at}/${i}`));
  }
  if (!isPlain(value) || !isPlain(model)) return [];
  const out: string[] = [];
  for (const key of Object.keys(value)) if (!(key in model)) out.push(`${at}/${key}: not in the fixture`);
  for (const key of Object.keys(model)) if (!(key in value)) out.push(`${at}/${key}: missing`);
  for (const key of Object.keys(value)) {
    if (key !== 'metadata' && key in model) out.push(...layoutDifferences(value[key], model[key], `${at}/${key}`));
  }
  return out;
}

export interface Notification {
  id: string;
  object: 'event';
  type: string;
  created: number;
  api_version: string | null;
  livemode: boolean;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  data: { object: Json };
}

/** The API version of the objects' shapes: the stripe package's own, as current as the fixtures. */
export const API_VERSION: string = Stripe.API_VERSION;

/** A snapshot event around `object`, in live mode unless `livemode` says otherwise. */
export function notification(type: string, object: Json, created = nowS(), id = nextId('evt'), livemode = true): Notification {
  const event = fixture('event') as unknown as Notification;
  return { ...event, id, type, created, api_version: API_VERSION, livemode, pending_webhooks: 1, data: { object } };
}

/** A thin event (object "v2.core.event"), as an event destination with the thin payload style sends it. */
export function thinEvent(type = 'v1.checkout.session.completed', relatedId = nextId('cs_test')): Json {
  return {
    ...fixture('thin_event'), id: nextId('evt_test'), type, created: new Date().toISOString(),
    related_object: { id: relatedId, type: 'checkout.session', url: `/v1/checkout/sessions/${relatedId}` },
  };
}

type Meta = { tr_user_id?: string | null; tr_visitor_id?: string | null };
const metadataOf = (m: Meta = {}) => Object.fromEntries(Object.entries(m).filter(([, v]) => v !== undefined));

export interface SessionOptions {
  id?: string;
  mode?: 'payment' | 'subscription';
  payment_intent?: string | null;
  subscription?: string | null;
  invoice?: string | null;
  payment_status?: 'paid' | 'unpaid' | 'no_payment_required';
  amount?: number;
  currency?: string;
  client_reference_id?: string | null;
  created?: number;
}

/** A completed Checkout Session (subscription mode unless told); `customer: null` is a guest. */
export function checkoutSession(customer: string | null, metadata?: Meta, email: string | null = null, opts: SessionOptions = {}): StripeObject {
  const s = fixture('checkout_session');
  const id = opts.id ?? nextId('cs_test');
  const mode = opts.mode ?? 'subscription';
  const amount = opts.amount ?? 2000;
  const created = opts.created ?? nowS();
  Object.assign(s, {
    id, mode, customer, status: 'complete', payment_status: opts.payment_status ?? 'paid',
    amount_subtotal: amount, amount_total: amount, currency: opts.currency ?? 'usd', metadata: metadataOf(metadata),
    client_reference_id: opts.client_reference_id ?? null, created, expires_at: created + 86_400,
    payment_intent: opts.payment_intent !== undefined ? opts.payment_intent : mode === 'payment' ? nextId('pi') : null,
    subscription: opts.subscription !== undefined ? opts.subscription : mode === 'subscription' ? nextId('sub') : null,
    invoice: opts.invoice ?? null,
  });
  (s.customer_details as Json).email = email;
  (s.currency_conversion as Json).amount_subtotal = amount;
  (s.currency_conversion as Json).amount_total = amount;
  return s as StripeObject;
}

export function paymentIntent(customer: string | null, metadata?: Meta, extra: Json = {}): StripeObject {
  const p = fixture('payment_intent');
  const amount = typeof extra.amount === 'number' ? extra.amount : 2000;
  const status = (extra.status as string | undefined) ?? 'succeeded';
  Object.assign(p, {
    id: nextId('pi'), amount, amount_received: status === 'succeeded' ? amount : 0, customer, latest_charge: nextId('ch'),
    metadata: metadataOf(metadata), status, created: nowS(), canceled_at: null,
  }, extra);
  p.client_secret = `${p.id as string}_secret_test`;
  return p as StripeObject;
}

export function subscription(customer: string, opts: {
  id?: string; status?: string; metadata?: Meta; price?: string; product?: string; interval?: string; unit_amount?: number;
  quantity?: number; cancel_at_period_end?: boolean; created?: number; trial_end?: number | null;
} = {}): StripeObject {
  const s = fixture('subscription');
  const id = opts.id ?? nextId('sub');
  const created = opts.created ?? nowS();
  Object.assign(s, {
    id, customer, status: opts.status ?? 'active', cancel_at_period_end: opts.cancel_at_period_end ?? false, created, start_date: created,
    billing_cycle_anchor: created, metadata: metadataOf(opts.metadata), cancel_at: null,
    canceled_at: opts.status === 'canceled' ? created : null, ended_at: opts.status === 'canceled' ? created : null,
    trial_start: opts.trial_end ? created : null, trial_end: opts.trial_end ?? null,
  });
  const item = (s.items as { data: Json[] }).data[0]!;
  const price = item.price as Json;
  const unit = opts.unit_amount ?? 2000;
  Object.assign(item, { id: nextId('si'), quantity: opts.quantity ?? 1, subscription: id, created });
  Object.assign(price, {
    id: opts.price ?? 'price_pro', product: opts.product ?? 'prod_pro', unit_amount: unit, unit_amount_decimal: String(unit),
  });
  (price.recurring as Json).interval = opts.interval ?? 'month';
  (s.items as Json).url = `/v1/subscription_items?subscription=${id}`;
  return s as StripeObject;
}

/** A Customer object as the processor sends it (a `customer` field expanded looks the same). */
export function customer(id: string, opts: { email?: unknown; name?: string | null; metadata?: Record<string, string> } = {}): StripeObject {
  const c = fixture('customer');
  Object.assign(c, { id, email: 'email' in opts ? opts.email : null, name: opts.name ?? null, metadata: opts.metadata ?? {}, created: nowS() });
  return c as StripeObject;
}

export function invoice(customer: string | Json, opts: {
  id?: string; status?: string; amount?: number; amount_paid?: number; subscription?: string; customer_email?: string | null;
  paid_at?: number; created?: number; billing_reason?: string; currency?: string;
} = {}): StripeObject {
  const i = fixture('invoice');
  const id = opts.id ?? nextId('in');
  const status = opts.status ?? 'paid';
  const amount = opts.amount ?? 2000;
  const paid = opts.amount_paid ?? (status === 'paid' ? amount : 0);
  const created = opts.created ?? nowS();
  Object.assign(i, {
    id, customer, status, amount_due: amount, amount_paid: paid, amount_remaining: amount - paid, subtotal: amount,
    subtotal_excluding_tax: amount, total: amount, total_excluding_tax: amount, amount_overpaid: 0, currency: opts.currency ?? 'usd',
    customer_email: opts.customer_email ?? null, created, effective_at: created, period_start: created, period_end: created,
    due_date: null, next_payment_attempt: null, webhooks_delivered_at: created, attempted: status === 'paid', attempt_count: status === 'paid' ? 1 : 0,
    billing_reason: opts.billing_reason ?? (opts.subscription ? 'subscription_create' : 'manual'),
    metadata: { tr_user_id: 'never-read-from-invoices' },
    parent: opts.subscription
      ? { quote_details: null, subscription_details: { metadata: null, subscription: opts.subscription }, type: 'subscription_details' }
      : null,
  });
  i.status_transitions = {
    finalized_at: status === 'draft' ? null : created, marked_uncollectible_at: null,
    paid_at: status === 'paid' ? opts.paid_at ?? created : null, voided_at: null,
  };
  const line = (i.lines as { data: Json[] }).data[0]!;
  Object.assign(line, { id: nextId('il'), invoice: id, amount, subtotal: amount });
  (i.lines as Json).url = `/v1/invoices/${id}/lines`;
  return i as StripeObject;
}

/** `invoice_payment.paid`'s object: this payment intent paid that invoice. */
export function invoicePayment(invoiceId: string, paymentIntentId: string, amount = 2000): StripeObject {
  const p = fixture('invoice_payment');
  Object.assign(p, {
    id: nextId('inpay'), invoice: invoiceId, amount_paid: amount, amount_requested: amount, currency: 'usd', created: nowS(),
    livemode: false, status: 'paid', payment: { type: 'payment_intent', payment_intent: paymentIntentId },
    status_transitions: { canceled_at: null, paid_at: nowS() },
  });
  return p as StripeObject;
}

/**
 * A Charge as the current API version sends it: without its `refunds` list (not sent since
 * 2022-11-15, `refunds?` in the stripe package's Charge type) unless `refunds` is given, as
 * earlier versions sent it.
 */
export function charge(customer: string | null, opts: {
  id?: string; payment_intent?: string; metadata?: Meta; refunded?: boolean; amount?: number; amount_refunded?: number;
  refunds?: Json[]; email?: string | null; created?: number;
} = {}): StripeObject {
  const c = fixture('charge');
  const id = opts.id ?? nextId('ch');
  const amount = opts.amount ?? 2000;
  const refunded = opts.amount_refunded ?? (opts.refunded ? amount : 0);
  Object.assign(c, {
    id, customer, amount, amount_captured: amount, amount_refunded: refunded, captured: true, paid: true, status: 'succeeded',
    refunded: opts.refunded ?? refunded >= amount, payment_intent: opts.payment_intent ?? null, metadata: metadataOf(opts.metadata),
    created: opts.created ?? nowS(),
  });
  (c.billing_details as Json).email = opts.email ?? null;
  if (opts.refunds === undefined) {
    delete c.refunds;
  } else {
    const list = c.refunds as Json;
    list.data = opts.refunds;
    list.url = `/v1/charges/${id}/refunds`;
  }
  return c as StripeObject;
}

export function refund(chargeId: string, paymentIntent: string | null = null, opts: {
  id?: string; amount?: number; status?: string; created?: number; customer?: string | null;
} = {}): StripeObject {
  const r = fixture('refund');
  Object.assign(r, {
    id: opts.id ?? nextId('re'), amount: opts.amount ?? 2000, charge: chargeId, payment_intent: paymentIntent,
    status: opts.status ?? 'succeeded', created: opts.created ?? nowS(), customer: opts.customer ?? null,
  });
  return r as StripeObject;
}

export interface DeliverOptions {
  workspaceId?: string;
  secret?: string;
  timestamp?: number;
  /** A header to send as is (null: none). */
  header?: string | null;
  raw?: string;
}

export function deliver(t: TestApp, event: unknown, opts: DeliverOptions = {}): Promise<LightMyRequestResponse> {
  const payload = opts.raw ?? JSON.stringify(event);
  const header = opts.header !== undefined ? opts.header
    : stripe.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? t.ws.stripe_webhook_secret, timestamp: opts.timestamp });
  return t.app.inject({
    method: 'POST',
    url: `/v1/webhooks/stripe/${opts.workspaceId ?? t.ws.workspace_id}`,
    headers: { 'content-type': 'application/json; charset=utf-8', ...(header === null ? {} : { 'stripe-signature': header }) },
    payload,
  });
}

export async function customerRow(t: TestApp, customerId: string, ws = t.ws.workspace_id) {
  const rows = await controlRows(t, `SELECT c.customer_id, c.link_state, c.email, p.external_id, v.visitor_id,
      p2.external_id AS visitor_person
    FROM payment_customers c
      LEFT JOIN persons p ON p.workspace_id = c.workspace_id AND p.person_key = c.person_key
      LEFT JOIN visitors v ON v.workspace_id = c.workspace_id AND v.visitor_key = c.visitor_key
      LEFT JOIN persons p2 ON p2.workspace_id = c.workspace_id AND p2.person_key = v.person_key
    WHERE c.workspace_id = $1 AND c.customer_id = $2`, [ws, customerId]);
  return rows[0] as { link_state: string; email: string | null; external_id: string | null; visitor_id: string | null; visitor_person: string | null } | undefined;
}

/** Rows of `table` in workspace `ws`: the control store's, or the analytical store's for payment_events. */
export async function count(t: TestApp, table: string, ws = t.ws.workspace_id): Promise<number> {
  if (table === 'payment_events') return storedCount(t, table, ws);
  const rows = await controlRows(t, `SELECT count(*) AS n FROM ${table} WHERE workspace_id = $1`, [ws]);
  return Number(rows[0]?.n ?? 0);
}

/**
 * One payment as Stripe notifies it, through `send(type, object, at)`: a one-time payment as a
 * completed payment-mode Checkout session, else a paid invoice, created (and paid) at `at` (seconds).
 */
export function sendPayment(
  send: (type: string, object: StripeObject, at: number) => Promise<unknown>, customer: string,
  payment: { oneTime: boolean; amount: number; currency: string }, at: number,
): Promise<unknown> {
  const { amount, currency } = payment;
  return payment.oneTime
    ? send('checkout.session.completed', checkoutSession(customer, {}, null, { mode: 'payment', amount, currency, created: at }), at)
    : send('invoice.paid', invoice(customer, { amount, currency, paid_at: at, created: at }), at);
}
