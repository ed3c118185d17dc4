// Payment-processor notifications: verified, then applied once each in one transaction (customer
// link, subscription and invoice state, lifecycle events). A failure keeps nothing, so the
// processor's retry starts clean.

import { AppError } from '../errors.js';
import type { Ingest, VisitorLink } from '../ingest/ingest.js';
import type { Store } from '../store/db.js';
import {
  addPaymentEvent, claimNotification, customerOfObject, linkDeferredCustomers, recordPaidInvoice, rememberObjects,
  saveInvoice, saveSubscription, webhookSecret,
} from '../store/payments.js';
import type { Tx } from '../store/people.js';
import { updateCustomer } from './link.js';
import {
  customerEmailOf, customerIdOf, emailOf, familyOf, field, idOf, int, metadataOf, type Notification, parseNotification, str,
  timeOf,
} from './notification.js';
import { verifyNotification } from './signature.js';

export class PaymentWebhook {
  constructor(private readonly store: Store, ingest: Ingest, private readonly clock: () => Date = () => new Date()) {
    // Deferred customers resolve as soon as their visitor is linked to a person.
    ingest.onVisitorLinked((tx, links) => this.visitorsLinked(tx, links));
  }

  /** Verifies and applies one delivery; `duplicate` when its id was processed before. */
  async receive(ws: string, rawBody: Buffer, signature: unknown): Promise<{ duplicate: boolean }> {
    const secret = ws.length <= 256 ? await webhookSecret(this.store, ws) : null;
    if (!secret) throw new AppError('invalid_signature', 'unknown workspace, or no webhook secret set for it');
    const notification = parseNotification(verifyNotification(rawBody, signature, secret));
    return this.apply(ws, notification);
  }

  async apply(ws: string, n: Notification): Promise<{ duplicate: boolean }> {
    const now = this.clock();
    return this.store.transaction(async (tx) => {
      if (!(await claimNotification(tx, ws, n.id))) return { duplicate: true };
      await applyEffects(this.store, tx, ws, n, now);
      return { duplicate: false };
    });
  }

  private async visitorsLinked(tx: Tx, links: VisitorLink[]): Promise<void> {
    const byWorkspace = new Map<string, number[]>();
    for (const l of links) {
      const keys = byWorkspace.get(l.workspaceId);
      if (keys) keys.push(l.visitorKey);
      else byWorkspace.set(l.workspaceId, [l.visitorKey]);
    }
    const now = this.clock();
    for (const [ws, keys] of byWorkspace) await linkDeferredCustomers(tx, ws, keys, now);
  }
}

/** Object families whose notifications are applied; any other type is acknowledged and ignored. */
const APPLIED_FAMILIES = new Set(['customer', 'checkout.session', 'payment_intent', 'customer.subscription', 'invoice', 'charge', 'refund']);

async function applyEffects(store: Store, tx: Tx, ws: string, n: Notification, now: Date): Promise<void> {
  const family = familyOf(n.type);
  // A deleted Customer's payments happened all the same: its data and link stay as they were (its
  // subscriptions' cancellations arrive as notifications of their own).
  if (!APPLIED_FAMILIES.has(family) || n.type === 'customer.deleted') return;
  const o = n.object;
  const objectId = str(o.id);
  // Refunds name only their charge / payment intent: the customer comes from those seen before.
  const customerId = customerIdOf(n)
    ?? (family === 'refund' || family === 'charge' ? await customerOfObject(tx, ws, ids(o.charge, o.payment_intent)) : null);
  if (!customerId || customerId.length > 256) return; // a guest payment: nothing to attribute it to

  const signals = { ...metadataOf(n), email: emailOf(n), customerEmail: customerEmailOf(n) };
  await updateCustomer(store, tx, ws, customerId, signals, n.created, now);

  switch (family) {
    case 'customer.subscription':
      if (!objectId) return;
      await saveSubscription(tx, ws, subscriptionOf(n, objectId, customerId), n.created);
      if (n.type === 'customer.subscription.deleted') await addPaymentEvent(tx, ws, customerId, 'subscription_canceled', n.created, objectId);
      return;
    case 'invoice':
      if (!objectId) return;
      await saveInvoice(tx, ws, invoiceOf(n, objectId, customerId), n.created);
      if (n.type === 'invoice.paid') await recordPaidInvoice(tx, ws, customerId, n.created, objectId);
      return;
    case 'payment_intent':
      await rememberObjects(tx, ws, customerId, ids(o.id, o.latest_charge));
      return;
    case 'charge':
      await rememberObjects(tx, ws, customerId, ids(o.id, o.payment_intent));
      if (n.type === 'charge.refunded' && objectId) await addPaymentEvent(tx, ws, customerId, 'refund_issued', n.created, objectId);
      return;
    case 'refund':
      if (n.type === 'refund.created' && objectId) await addPaymentEvent(tx, ws, customerId, 'refund_issued', n.created, objectId);
      return;
  }
}

const ids = (...values: unknown[]) => values.map(idOf).filter((v): v is string => v !== null);

/** Minor units per interval, or null when it is unknown or not an exact integer of 64 bits (kept, never a failure). */
function amountPerInterval(unit: number | null, quantity: number): number | null {
  if (unit === null) return null;
  const amount = unit * quantity;
  return Number.isSafeInteger(amount) ? amount : null;
}

function subscriptionOf(n: Notification, id: string, customerId: string) {
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

function invoiceOf(n: Notification, id: string, customerId: string) {
  const o = n.object;
  // Newer API versions moved the subscription under parent.subscription_details.
  const subscription = idOf(o.subscription) ?? idOf(field(o, 'parent', 'subscription_details', 'subscription'));
  return {
    invoice_id: id,
    customer_id: customerId,
    subscription_id: subscription,
    status: str(o.status) ?? (n.type === 'invoice.paid' ? 'paid' : 'draft'),
    amount_due: int(o.amount_due) ?? 0,
    amount_paid: int(o.amount_paid) ?? 0,
    currency: str(o.currency) ?? '',
    created_at: timeOf(o.created) ?? n.created,
  };
}
