// What a backfill reads and how each listed object becomes a notification: the one the processor
// sends for the object's current state, dated at the object's own time (docs/payments.md,
// "Backfill"). Its id is derived from the object's content, so reading the same object again (a
// resumed page, a second backfill) is a duplicate, and a changed object applies again.

import { createHash } from 'node:crypto';
import type Stripe from 'stripe';
import { field, int, isObject, type Json, type Notification, timeOf } from './notification.js';

export interface BackfillSource {
  /** The object type, as notification types name it (`checkout.session`). */
  type: string;
  /** Parameters every listing of the type sends besides limit, starting_after and created. */
  params: Json;
  list(stripe: Stripe, params: Json): AsyncIterable<unknown>;
  /** The notification type of an object's state; null: the object is not applied (an open session, a draft invoice). */
  event(o: Json): string | null;
  /** When that notification would have been created. */
  at(o: Json): Date | null;
}

/** The object's `created`. */
const created = (o: Json) => timeOf(o.created);
/** A payment is dated at its charge (expanded): when it was paid, not when the intent or session was opened. */
const chargeTime = (charge: unknown, o: Json) => (isObject(charge) ? timeOf(charge.created) : null) ?? created(o);

const PAYMENT_INTENT_EVENTS: Record<string, string> = {
  succeeded: 'payment_intent.succeeded', canceled: 'payment_intent.canceled', processing: 'payment_intent.processing',
  requires_payment_method: 'payment_intent.payment_failed', requires_capture: 'payment_intent.amount_capturable_updated',
};
const INVOICE_EVENTS: Record<string, string> = {
  paid: 'invoice.paid', open: 'invoice.finalized', void: 'invoice.voided', uncollectible: 'invoice.marked_uncollectible',
};

// Listed with the SDK's typed resources; the parameters are the list API's own (Stripe's OpenAPI spec).
type Lister = (stripe: Stripe, params: Json) => AsyncIterable<unknown>;
const lister = (pick: (stripe: Stripe) => { list(params: never): AsyncIterable<unknown> }): Lister =>
  (stripe, params) => pick(stripe).list(params as never);

/** In this order: payers first, then what they paid, refunds last (any order is applied correctly; this one keeps fewer refunds waiting). */
export const BACKFILL_SOURCES: readonly BackfillSource[] = [
  { type: 'customer', params: {}, list: lister((s) => s.customers), event: () => 'customer.updated', at: created },
  {
    type: 'checkout.session', params: { expand: ['data.payment_intent.latest_charge'] }, list: lister((s) => s.checkout.sessions),
    event: (o) => (o.status === 'complete' ? 'checkout.session.completed' : o.status === 'expired' ? 'checkout.session.expired' : null),
    at: (o) => chargeTime(field(o, 'payment_intent', 'latest_charge'), o),
  },
  {
    type: 'payment_intent', params: { expand: ['data.latest_charge'] }, list: lister((s) => s.paymentIntents),
    event: (o) => PAYMENT_INTENT_EVENTS[o.status as string] ?? 'payment_intent.created', at: (o) => chargeTime(o.latest_charge, o),
  },
  {
    // Without status=all the list leaves canceled subscriptions out.
    type: 'customer.subscription', params: { status: 'all' }, list: lister((s) => s.subscriptions),
    event: (o) => (o.status === 'canceled' ? 'customer.subscription.deleted' : 'customer.subscription.updated'),
    at: (o) => (o.status === 'canceled' ? timeOf(o.ended_at) ?? timeOf(o.canceled_at) : null) ?? created(o),
  },
  {
    // Expanded, an invoice lists the payments that paid it (since API version 2025-03-31 nothing else links them).
    type: 'invoice', params: { expand: ['data.payments'] }, list: lister((s) => s.invoices), event: (o) => INVOICE_EVENTS[o.status as string] ?? null,
    at: (o) => (o.status === 'paid' ? timeOf(field(o, 'status_transitions', 'paid_at')) : null) ?? created(o),
  },
  {
    type: 'charge', params: {}, list: lister((s) => s.charges),
    event: (o) => ((int(o.amount_refunded) ?? 0) > 0 ? 'charge.refunded' : o.status === 'succeeded' ? 'charge.succeeded' : 'charge.failed'), at: created,
  },
  { type: 'refund', params: {}, list: lister((s) => s.refunds), event: () => 'refund.created', at: created },
];

/** The notification standing for a listed object; null when the object is not applied. */
export function notificationOf(source: BackfillSource, o: Json): Notification | null {
  const type = source.event(o);
  const at = source.at(o);
  if (type === null || at === null || typeof o.id !== 'string') return null;
  const digest = createHash('sha256').update(type).update('\0').update(JSON.stringify(o)).digest('hex').slice(0, 32);
  return { id: `backfill_${digest}`, type, created: at, livemode: typeof o.livemode === 'boolean' ? o.livemode : null, object: o };
}
