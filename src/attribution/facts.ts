// What a verified notification says, read once before its group is applied: its payer's id, the
// payment objects it names, its refunds, payment and invoice link, its subscription or invoice, its
// metadata and emails. Pure functions of the notification.

import type { InvoiceState, SubscriptionState } from '../store/analytics.js';
import type { PaymentState, RefundState } from '../store/control/payments.js';
import {
  customerEmailOf, customerIdOf, emailOf, familyOf, field, idOf, int, isObject, metadataOf, type Notification, str, timeOf,
} from './notification.js';

/** Object families whose notifications are applied; any other type is acknowledged and ignored. */
const APPLIED_FAMILIES = new Set([
  'customer', 'checkout.session', 'payment_intent', 'customer.subscription', 'invoice', 'invoice_payment', 'charge', 'charge.refund', 'refund',
]);

/** Invoice notifications that announce a payment (Stripe sends both; older endpoints often take only the second). */
export const PAID_INVOICE_TYPES = new Set(['invoice.paid', 'invoice.payment_succeeded']);

/** Ids longer than this are not the processor's: they are neither stored nor looked up. */
const ID_MAX = 256;

/** A notification to apply, as read. */
export interface Plan {
  n: Notification;
  family: string;
  /** The Customer it names (an id of the processor's length). */
  customerId: string | null;
  /** The id of its object. */
  objectId: string | null;
  facts: Facts;
  /** `invoice_payment.paid`: which payments paid which invoice (nothing else is read from it). */
  invoicePayment: { invoice: string; payments: string[] } | null;
  /** Its tr_user_id / tr_visitor_id. */
  metadata: { userId: string | null; visitorId: string | null };
  /**
   * A checkout session's `client_reference_id` when its metadata has no tr_visitor_id (what Payment
   * Links and pricing tables can carry): read as the visitor when the workspace has seen it.
   */
  reference: string | null;
  email: string | null;
  customerEmail: string | null | undefined;
}

/** The plan of a notification, or null when it changes nothing (a type not applied, a deleted Customer). */
export function planOf(n: Notification): Plan | null {
  const family = familyOf(n.type);
  // A deleted Customer's payments happened all the same: its data and link stay as they were (its
  // subscriptions' cancellations arrive as notifications of their own).
  if (!APPLIED_FAMILIES.has(family) || n.type === 'customer.deleted') return null;
  const named = customerIdOf(n);
  const metadata = metadataOf(n);
  const reference = metadata.visitorId === null && family === 'checkout.session' ? str(n.object.client_reference_id) : null;
  return {
    n, family, customerId: named !== null && named.length <= ID_MAX ? named : null, objectId: one(n.object.id), facts: factsOf(n, family),
    invoicePayment: family === 'invoice_payment' ? invoicePaymentOf(n.object) : null, metadata,
    reference: reference !== null && reference.length <= ID_MAX ? reference : null, email: emailOf(n), customerEmail: customerEmailOf(n),
  };
}

/** A charge's `amount_refunded`: the total refunded of it so far, in minor units of `currency`. */
export interface RefundedLevel {
  charge_id: string;
  payment_intent_id: string | null;
  level: number;
  currency: string | null;
}

/** What a notification says about payments, besides its customer. */
export interface Facts {
  /** Payment objects it is or names (payment intent, charge): a payer found for one is the payer of all. */
  related: string[];
  /** The key of a new payer for a paid guest payment (no Customer): its payment intent, else the object. */
  guestKey: string | null;
  refunds: Omit<RefundState, 'customer_id'>[];
  /** A charge's cumulative `amount_refunded` as this notification reports it (refunds.ts). */
  refunded: RefundedLevel | null;
  payment: Omit<PaymentState, 'customer_id'> | null;
  /** Payments it names as paying an invoice. */
  invoiceLink: { invoice: string; payments: string[] } | null;
}

function factsOf(n: Notification, family: string): Facts {
  const o = n.object;
  const id = one(o.id);
  const none: Facts = { related: [], guestKey: null, refunds: [], refunded: null, payment: null, invoiceLink: null };
  switch (family) {
    case 'checkout.session': {
      const intent = one(o.payment_intent);
      const paid = o.payment_status === 'paid';
      const invoice = one(o.invoice);
      const paymentId = intent ?? id;
      const amount = int(o.amount_total);
      return {
        ...none,
        // Refunds name the payment intent, never the session; a guest session without one is keyed by its own id.
        related: ids(intent),
        guestKey: paid ? paymentId : null,
        // Only a payment-mode session is a payment of its own; a subscription's are its invoices.
        payment: paid && o.mode === 'payment' && paymentId && amount !== null && amount > 0
          ? { payment_id: paymentId, amount, currency: str(o.currency), paid_at: n.created, source: 'checkout.session', invoice_id: invoice }
          : null,
      };
    }
    case 'payment_intent': {
      const succeeded = o.status === 'succeeded';
      const invoice = one(o.invoice); // API versions before 2025-03-31 name the invoice a payment intent pays
      const amount = int(o.amount_received);
      return {
        ...none,
        related: ids(id, o.latest_charge),
        guestKey: succeeded ? id : null,
        payment: succeeded && id && amount !== null && amount > 0
          ? { payment_id: id, amount, currency: str(o.currency), paid_at: n.created, source: 'payment_intent', invoice_id: invoice }
          : null,
      };
    }
    case 'charge': {
      const intent = one(o.payment_intent);
      const paid = o.paid === true && o.status === 'succeeded';
      const paymentId = intent ?? id;
      const captured = int(o.amount_captured);
      const amount = captured !== null && captured > 0 ? captured : int(o.amount);
      const list = field(o, 'refunds', 'data');
      const refunded = int(o.amount_refunded);
      return {
        ...none,
        related: ids(id, intent),
        guestKey: paid ? paymentId : null,
        // A charge.refunded of API versions before 2022-11-15 lists its refunds.
        refunds: Array.isArray(list) ? list.flatMap((r) => refundOf(r, n.created, { charge: id, payment_intent: intent })) : [],
        // Later versions send no list: the cumulative amount is all a charge says of its refunds.
        refunded: id && refunded !== null && refunded >= 0 ? { charge_id: id, payment_intent_id: intent, level: refunded, currency: str(o.currency) } : null,
        payment: paid && paymentId && amount !== null && amount > 0
          ? { payment_id: paymentId, amount, currency: str(o.currency), paid_at: timeOf(o.created) ?? n.created, source: 'charge', invoice_id: one(o.invoice) }
          : null,
      };
    }
    case 'refund':
    case 'charge.refund': {
      const refunds = refundOf(o, n.created, {});
      return { ...none, related: refunds.flatMap((r) => ids(r.charge_id, r.payment_intent_id)), refunds };
    }
    case 'invoice': {
      // API versions before 2025-03-31 name the payment; later ones list it when `payments` is expanded.
      const listed = field(o, 'payments', 'data');
      const payments = ids(o.payment_intent, o.charge, ...(Array.isArray(listed)
        ? listed.flatMap((p) => [field(p, 'payment', 'payment_intent'), field(p, 'payment', 'charge')]) : []));
      return { ...none, related: payments, invoiceLink: id && payments.length > 0 ? { invoice: id, payments } : null };
    }
    default:
      return none;
  }
}

/** `invoice_payment.paid` (API versions from 2025-03-31): which payment paid which invoice. */
function invoicePaymentOf(o: Record<string, unknown>): Plan['invoicePayment'] {
  const invoice = one(o.invoice);
  const payments = ids(field(o, 'payment', 'payment_intent'), field(o, 'payment', 'charge'));
  return invoice && payments.length > 0 ? { invoice, payments } : null;
}

/** A refund object (or an entry of a charge's `refunds`), with the charge it came with filling in. */
function refundOf(r: unknown, announced: Date, from: { charge?: string | null; payment_intent?: string | null }): Facts['refunds'] {
  if (!isObject(r)) return [];
  const id = one(r.id);
  if (!id) return [];
  return [{
    refund_id: id, charge_id: one(r.charge ?? from.charge), payment_intent_id: one(r.payment_intent ?? from.payment_intent), amount: int(r.amount), currency: str(r.currency),
    status: str(r.status), created_at: timeOf(r.created) ?? announced,
  }];
}

export const ids = (...values: unknown[]) => values.map(idOf).filter((v): v is string => v !== null && v.length <= ID_MAX);
const one = (value: unknown): string | null => ids(value)[0] ?? null;

/** Minor units per interval, or null when it is unknown or not an exact integer of 64 bits (kept, never a failure). */
function amountPerInterval(unit: number | null, quantity: number): number | null {
  if (unit === null) return null;
  const amount = unit * quantity;
  return Number.isSafeInteger(amount) ? amount : null;
}

export function subscriptionOf(n: Notification, id: string, customerId: string): SubscriptionState {
  const o = n.object;
  const item = field(o, 'items', 'data');
  const first: unknown = Array.isArray(item) ? item[0] : undefined;
  const price = field(first, 'price');
  const unit = int(field(price, 'unit_amount'));
  const quantity = int(field(first, 'quantity')) ?? 1;
  return {
    subscription_id: id,
    customer_id: customerId,
    status: str(o.status) ?? (n.type === 'customer.subscription.deleted' ? 'canceled' : 'incomplete'),
    price_id: idOf(price),
    product_id: idOf(field(price, 'product')),
    interval: str(field(price, 'recurring', 'interval')),
    amount: amountPerInterval(unit, quantity),
    currency: str(field(price, 'currency')) ?? str(o.currency),
    cancel_at_period_end: o.cancel_at_period_end === true,
    created_at: timeOf(o.created) ?? n.created,
  };
}

export function invoiceOf(n: Notification, id: string, customerId: string): InvoiceState {
  const o = n.object;
  const paid = PAID_INVOICE_TYPES.has(n.type);
  // Newer API versions moved the subscription under parent.subscription_details.
  const subscription = idOf(o.subscription) ?? idOf(field(o, 'parent', 'subscription_details', 'subscription'));
  return {
    invoice_id: id,
    customer_id: customerId,
    subscription_id: subscription,
    status: str(o.status) ?? (paid ? 'paid' : 'draft'),
    amount_due: int(o.amount_due) ?? 0,
    amount_paid: int(o.amount_paid) ?? 0,
    currency: str(o.currency) ?? '',
    created_at: timeOf(o.created) ?? n.created,
    paid_at: timeOf(field(o, 'status_transitions', 'paid_at')) ?? (paid ? n.created : null),
  };
}
