// Payment-processor notifications: verified, then applied once each (payer link, subscription and
// invoice state, payments and refunds, lifecycle events). Notifications of a workspace that arrive
// together share one unit of work (ingest's group commit), applied in arrival order as one by one;
// a failing one is retried apart and fails alone, keeping nothing, so the processor's retry starts clean.

import { AppError } from '../errors.js';
import { GroupCommit } from '../ingest/group-commit.js';
import type { Ingest } from '../ingest/ingest.js';
import type { Staged, UnitOfWork, VisitorLink } from '../store/analytics.js';
import {
  attributeRefunds, claimNotifications, customerOfObject, linkDeferredCustomers, linkPaymentsToInvoice, recordPayment, rememberObjects,
  saveRefund, webhookSettings,
} from '../store/control/payments.js';
import { visitorsById } from '../store/control/people.js';
import type { ControlStore, ControlTx } from '../store/control/store.js';
import type { Stores } from '../store/open.js';
import { updateCustomer } from './link.js';
import {
  customerEmailOf, customerIdOf, emailOf, familyOf, field, idOf, int, isObject, type Json, metadataOf, type Notification,
  parseNotification, str, timeOf,
} from './notification.js';
import { verifyNotification } from './signature.js';

export interface Receipt {
  duplicate: boolean;
  /** Set when the notification was acknowledged and stored nowhere: it is of the other payments mode. */
  ignored?: 'livemode';
}

/** The most notifications one unit of work takes. */
const GROUP_MAX = 500;

type Settings = Awaited<ReturnType<typeof webhookSettings>>;

export class PaymentWebhook {
  private readonly writes = new GroupCommit<Notification, { duplicate: boolean }>((ws, ns) => this.applyGroup(ws, ns), GROUP_MAX);
  /** Settings reads under way per workspace: deliveries arriving meanwhile share the read (nothing is kept after it). */
  private readonly settingsReads = new Map<string, Promise<Settings>>();

  constructor(private readonly stores: Stores, ingest: Ingest, private readonly clock: () => Date = () => new Date()) {
    // Deferred customers resolve as soon as their visitor is linked to a person.
    ingest.onVisitorLinked((work, links) => this.visitorsLinked(work, links));
  }

  /** Verifies and applies one delivery; `duplicate` when its id was processed before. */
  async receive(ws: string, rawBody: Buffer, signature: unknown): Promise<Receipt> {
    const settings = ws.length <= 256 ? await this.settingsOf(ws) : null;
    if (!settings?.secret) throw new AppError('invalid_signature', 'unknown workspace, or no webhook secret set for it');
    const notification = parseNotification(verifyNotification(rawBody, signature, settings.secret));
    // A notification that does not say its mode is applied: only a holder of the secret could sign it.
    if (notification.livemode !== null && notification.livemode !== (settings.mode === 'live')) return { duplicate: false, ignored: 'livemode' };
    return this.apply(ws, notification);
  }

  /** Applies a verified notification with those of the workspace waiting; `duplicate` when its id was processed before. */
  async apply(ws: string, n: Notification): Promise<{ duplicate: boolean }> {
    const [receipt] = await this.writes.submit(ws, [n]);
    return receipt!;
  }

  /**
   * One unit of work for a group: the ids claimed in one statement, then each notification applied
   * in arrival order. An id twice in the group is claimed by its first delivery; the later ones are duplicates.
   */
  private applyGroup(ws: string, ns: Notification[]): Promise<Staged<{ duplicate: boolean }[]>> {
    const now = this.clock();
    return this.stores.analytics.stage(async (work) => {
      // In one order on every node: two groups claiming the same ids never wait for each other crosswise.
      const fresh = await claimNotifications(work.control, ws, [...new Set(ns.map((n) => n.id))].sort());
      const receipts: { duplicate: boolean }[] = [];
      for (const n of ns) {
        const claimed = fresh.delete(n.id);
        if (claimed) await applyEffects(this.stores.control, work, ws, n, now);
        receipts.push({ duplicate: !claimed });
      }
      return receipts;
    });
  }

  private settingsOf(ws: string): Promise<Settings> {
    let read = this.settingsReads.get(ws);
    if (!read) {
      read = webhookSettings(this.stores.control, ws).finally(() => this.settingsReads.delete(ws));
      this.settingsReads.set(ws, read);
    }
    return read;
  }

  private async visitorsLinked(work: UnitOfWork, links: VisitorLink[]): Promise<void> {
    const byWorkspace = new Map<string, number[]>();
    for (const l of links) {
      const keys = byWorkspace.get(l.workspaceId);
      if (keys) keys.push(l.visitorKey);
      else byWorkspace.set(l.workspaceId, [l.visitorKey]);
    }
    const now = this.clock();
    for (const [ws, keys] of byWorkspace) await linkDeferredCustomers(work.control, ws, keys, now);
  }
}

/** Object families whose notifications are applied; any other type is acknowledged and ignored. */
const APPLIED_FAMILIES = new Set([
  'customer', 'checkout.session', 'payment_intent', 'customer.subscription', 'invoice', 'invoice_payment', 'charge', 'charge.refund', 'refund',
]);

/** Invoice notifications that announce a payment (Stripe sends both; older endpoints often take only the second). */
const PAID_INVOICE_TYPES = new Set(['invoice.paid', 'invoice.payment_succeeded']);

/** Ids longer than this are not the processor's: they are neither stored nor looked up. */
const ID_MAX = 256;

async function applyEffects(store: ControlStore, work: UnitOfWork, ws: string, n: Notification, now: Date): Promise<void> {
  const tx = work.control;
  const family = familyOf(n.type);
  // A deleted Customer's payments happened all the same: its data and link stay as they were (its
  // subscriptions' cancellations arrive as notifications of their own).
  if (!APPLIED_FAMILIES.has(family) || n.type === 'customer.deleted') return;
  if (family === 'invoice_payment') return applyInvoicePayment(work, ws, n.object);
  const facts = factsOf(n, family);
  const named = customerIdOf(n);
  const customerId = named !== null && named.length <= ID_MAX ? named : null;
  const payer = customerId ?? await customerOfObject(tx, ws, facts.related) ?? facts.guestKey;
  for (const refund of facts.refunds) await saveRefund(work, ws, { ...refund, customer_id: payer }, n.created);
  if (facts.invoiceLink) await linkPaymentsToInvoice(work, ws, facts.invoiceLink.payments, facts.invoiceLink.invoice);
  if (payer === null) return; // a refund of a payment not seen yet waits for it; an unpaid guest is no payer

  const signals = { ...await signalsOf(tx, ws, n), email: emailOf(n), customerEmail: customerEmailOf(n) };
  await updateCustomer(store, work, ws, payer, signals, n.created, now);
  await rememberObjects(tx, ws, payer, facts.related);
  await attributeRefunds(work, ws, payer, facts.related);
  if (facts.payment) await recordPayment(work, ws, { ...facts.payment, customer_id: payer });

  const o = n.object;
  const objectId = one(o.id);
  if (!objectId) return;
  if (family === 'customer.subscription') {
    await work.analytics.saveSubscription(ws, subscriptionOf(n, objectId, payer), n.created);
    if (n.type === 'customer.subscription.deleted') await work.analytics.addPaymentEvent(ws, payer, 'subscription_canceled', n.created, objectId);
  } else if (family === 'invoice') {
    const invoice = invoiceOf(n, objectId, payer);
    await work.analytics.saveInvoice(ws, invoice, n.created);
    // $0 invoices (a trial's start, a 100 % coupon) are no payment.
    if (PAID_INVOICE_TYPES.has(n.type) && invoice.amount_paid > 0) {
      await work.analytics.recordPaidInvoice(ws, payer, invoice.paid_at ?? n.created, objectId, { amount: invoice.amount_paid, currency: invoice.currency || null });
    }
  }
}

/** What a notification says about payments, besides its customer. */
interface Facts {
  /** Payment objects it is or names (payment intent, charge): a payer found for one is the payer of all. */
  related: string[];
  /** The key of a new payer for a paid guest payment (no Customer): its payment intent, else the object. */
  guestKey: string | null;
  refunds: Omit<Parameters<typeof saveRefund>[2], 'customer_id'>[];
  payment: Omit<Parameters<typeof recordPayment>[2], 'customer_id'> | null;
  /** Payments it names as paying an invoice. */
  invoiceLink: { invoice: string; payments: string[] } | null;
}

function factsOf(n: Notification, family: string): Facts {
  const o = n.object;
  const id = one(o.id);
  const none: Facts = { related: [], guestKey: null, refunds: [], payment: null, invoiceLink: null };
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
      return {
        ...none,
        related: ids(id, intent),
        guestKey: paid ? paymentId : null,
        // A charge.refunded of API versions before 2022-11-15 lists its refunds (later ones announce each refund itself).
        refunds: Array.isArray(list) ? list.flatMap((r) => refundOf(r, n.created, { charge: id, payment_intent: intent })) : [],
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
async function applyInvoicePayment(work: UnitOfWork, ws: string, o: Json): Promise<void> {
  const invoice = one(o.invoice);
  const payments = ids(field(o, 'payment', 'payment_intent'), field(o, 'payment', 'charge'));
  if (!invoice || payments.length === 0) return;
  await linkPaymentsToInvoice(work, ws, payments, invoice);
  const customer = await work.analytics.customerOfInvoice(ws, invoice);
  if (customer) {
    await rememberObjects(work.control, ws, customer, payments);
    await attributeRefunds(work, ws, customer, payments);
  }
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

/**
 * The notification's tr_user_id / tr_visitor_id. A checkout session without tr_visitor_id gives its
 * `client_reference_id` (what Payment Links and pricing tables can carry) when that is a visitor
 * the workspace has seen.
 */
async function signalsOf(tx: ControlTx, ws: string, n: Notification): Promise<{ userId: string | null; visitorId: string | null }> {
  const signals = metadataOf(n);
  if (signals.visitorId !== null || familyOf(n.type) !== 'checkout.session') return signals;
  const reference = str(n.object.client_reference_id);
  if (reference === null || reference.length > ID_MAX) return signals;
  const [visitor] = await visitorsById(tx, ws, [reference]);
  return visitor ? { ...signals, visitorId: reference } : signals;
}

const ids = (...values: unknown[]) => values.map(idOf).filter((v): v is string => v !== null && v.length <= ID_MAX);
const one = (value: unknown): string | null => ids(value)[0] ?? null;

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
