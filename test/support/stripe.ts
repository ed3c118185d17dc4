// Stripe notifications in the processor's JSON shapes, signed with the stripe package's test helper.

import type { LightMyRequestResponse } from 'fastify';
import Stripe from 'stripe';
import type { TestApp } from './app.js';

const stripe = new Stripe('sk_test_dummy');
let seq = 0;
const nextId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(seq++).toString(36)}`;

export const nowS = () => Math.floor(Date.now() / 1000);

export interface Notification {
  id: string;
  object: 'event';
  type: string;
  created: number;
  api_version: string;
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  data: { object: Record<string, unknown> };
}

export function notification(type: string, object: Record<string, unknown>, created = nowS(), id = nextId('evt')): Notification {
  return {
    id, object: 'event', type, created, api_version: '2025-03-31.basil', livemode: false, pending_webhooks: 1,
    request: { id: null, idempotency_key: null }, data: { object },
  };
}

type Meta = { tr_user_id?: string | null; tr_visitor_id?: string | null };
const metadataOf = (m: Meta = {}) => Object.fromEntries(Object.entries(m).filter(([, v]) => v !== undefined));

export function checkoutSession(customer: string | null, metadata?: Meta, email: string | null = null) {
  return {
    id: nextId('cs_test'), object: 'checkout.session', mode: 'subscription', status: 'complete', payment_status: 'paid',
    customer, customer_email: null, customer_details: email ? { email, name: null, address: null } : null,
    amount_total: 2000, currency: 'usd', metadata: metadataOf(metadata), subscription: nextId('sub'), created: nowS(),
  };
}

export function paymentIntent(customer: string | null, metadata?: Meta, extra: Record<string, unknown> = {}) {
  return {
    id: nextId('pi'), object: 'payment_intent', amount: 2000, amount_received: 2000, currency: 'usd', customer,
    latest_charge: nextId('ch'), metadata: metadataOf(metadata), receipt_email: null, status: 'succeeded', created: nowS(), ...extra,
  };
}

export function subscription(customer: string, opts: {
  id?: string; status?: string; metadata?: Meta; price?: string; product?: string; interval?: string; unit_amount?: number;
  quantity?: number; cancel_at_period_end?: boolean;
} = {}) {
  return {
    id: opts.id ?? nextId('sub'), object: 'subscription', customer, status: opts.status ?? 'active',
    cancel_at_period_end: opts.cancel_at_period_end ?? false, created: nowS(), currency: 'usd', metadata: metadataOf(opts.metadata),
    items: {
      object: 'list', has_more: false, url: '/v1/subscription_items',
      data: [{
        id: nextId('si'), object: 'subscription_item', quantity: opts.quantity ?? 1,
        price: {
          id: opts.price ?? 'price_pro', object: 'price', currency: 'usd', product: opts.product ?? 'prod_pro', type: 'recurring',
          unit_amount: opts.unit_amount ?? 2000, recurring: { interval: opts.interval ?? 'month', interval_count: 1 },
        },
      }],
    },
  };
}

/** A Customer object as the processor sends it (a `customer` field expanded looks the same). */
export function customer(id: string, opts: { email?: unknown; name?: string | null; metadata?: Record<string, string> } = {}) {
  return {
    id, object: 'customer', address: null, balance: 0, created: nowS(), currency: null, default_source: null, delinquent: false,
    description: null, discount: null, email: 'email' in opts ? opts.email : null, invoice_prefix: 'A1B2C3D4',
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
    livemode: false, metadata: opts.metadata ?? {}, name: opts.name ?? null, next_invoice_sequence: 1, phone: null,
    preferred_locales: [], shipping: null, tax_exempt: 'none', test_clock: null,
  };
}

export function invoice(customer: string | Record<string, unknown>, opts: {
  id?: string; status?: string; amount?: number; subscription?: string; customer_email?: string | null;
} = {}) {
  return {
    id: opts.id ?? nextId('in'), object: 'invoice', customer, status: opts.status ?? 'paid', amount_due: opts.amount ?? 2000,
    amount_paid: opts.status === 'open' ? 0 : opts.amount ?? 2000, currency: 'usd', customer_email: opts.customer_email ?? null, created: nowS(),
    metadata: { tr_user_id: 'never-read-from-invoices' },
    parent: opts.subscription ? { type: 'subscription_details', subscription_details: { subscription: opts.subscription } } : null,
  };
}

export function charge(customer: string | null, opts: { id?: string; payment_intent?: string; metadata?: Meta; refunded?: boolean } = {}) {
  return {
    id: opts.id ?? nextId('ch'), object: 'charge', amount: 2000, amount_refunded: opts.refunded ? 2000 : 0, currency: 'usd',
    customer, payment_intent: opts.payment_intent ?? null, refunded: opts.refunded ?? false, metadata: metadataOf(opts.metadata),
    billing_details: { email: null }, created: nowS(),
  };
}

export function refund(chargeId: string, paymentIntent: string | null = null) {
  return { id: nextId('re'), object: 'refund', amount: 2000, charge: chargeId, payment_intent: paymentIntent, currency: 'usd', status: 'succeeded', metadata: {} };
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
  const rows = await t.store.query(`SELECT c.customer_id, c.link_state, c.email, p.external_id, v.visitor_id,
      p2.external_id AS visitor_person
    FROM payment_customers c
      LEFT JOIN persons p ON p.workspace_id = c.workspace_id AND p.person_key = c.person_key
      LEFT JOIN visitors v ON v.workspace_id = c.workspace_id AND v.visitor_key = c.visitor_key
      LEFT JOIN persons p2 ON p2.workspace_id = c.workspace_id AND p2.person_key = v.person_key
    WHERE c.workspace_id = $1 AND c.customer_id = $2`, [ws, customerId]);
  return rows[0] as { link_state: string; email: string | null; external_id: string | null; visitor_id: string | null; visitor_person: string | null } | undefined;
}

export async function count(t: TestApp, table: string, ws = t.ws.workspace_id): Promise<number> {
  const rows = await t.store.query(`SELECT count(*) AS n FROM ${table} WHERE workspace_id = $1`, [ws]);
  return Number(rows[0]?.n ?? 0);
}
