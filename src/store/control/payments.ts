// Payers (Customers and guest payments) and their links, payments, refunds, the payment objects
// seen and the notifications already processed. All writes run inside the webhook's unit of work;
// the payment state the criteria read (subscriptions, invoices, lifecycle events) is analytical.

import type { Money, UnitOfWork } from '../analytics.js';
import { isOlder } from '../instants.js';
import type { CustomerRow } from '../layout.js';
import { columnOf as column, type ControlSql, type ControlTx } from './store.js';
import type { PaymentsMode } from './workspaces.js';

export type LinkState = CustomerRow['link_state'];

export interface CustomerRecord {
  customer_id: string;
  /** The email in effect: the Customer object's, else the latest copy on a payment object. */
  email: string | null;
  /** The Customer object's email (null: it has none, or none seen); its notification's time. */
  customer_email: string | null;
  customer_email_created: Date | null;
  /** The latest email a payment object carried (checkout session, invoice, charge, payment intent). */
  payment_email: string | null;
  payment_email_created: Date | null;
  person_key: number | null;
  visitor_key: number | null;
  tr_user_id: string | null;
  tr_visitor_id: string | null;
  tr_user_id_created: Date | null;
  tr_visitor_id_created: Date | null;
  link_state: LinkState;
}

/** A refund as last announced; `customer_id` is its payer, null until its charge or payment intent is seen. */
export interface RefundState extends Money {
  refund_id: string;
  customer_id: string | null;
  charge_id: string | null;
  payment_intent_id: string | null;
  status: string | null;
  created_at: Date;
}

/** Where a payment's amount was read: a payment intent's settles it, a charge's or a session's stand in. */
export type PaymentSource = 'payment_intent' | 'charge' | 'checkout.session';
const SOURCE_RANK: Record<PaymentSource, number> = { 'checkout.session': 1, charge: 2, payment_intent: 3 };

/** A payment made (a payment intent, else its session or charge), and the invoice it paid when known. */
export interface PaymentState extends Money {
  payment_id: string;
  customer_id: string;
  paid_at: Date;
  source: PaymentSource;
  invoice_id: string | null;
}

const rows = (tx: ControlSql, sql: string, params: (string | number | Date | null)[]) => tx.all(sql, params);

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/**
 * Claims notification ids (distinct): those not processed before, which the caller then applies. One
 * statement, so a redelivery claimed meanwhile by another node waits for it and finds it.
 */
export async function claimNotifications(tx: ControlTx, ws: string, ids: string[]): Promise<Set<string>> {
  const claimed = await tx.all(`INSERT INTO processed_notifications (workspace_id, notification_id)
    SELECT $1, ${tx.dialect.texts('$2')} ON CONFLICT DO NOTHING RETURNING notification_id`, [ws, column(ids)]);
  return new Set(claimed.map((r) => r.notification_id as string));
}

export async function getCustomer(tx: ControlSql, ws: string, customerId: string): Promise<CustomerRecord | null> {
  // An email stored without either source (imported, or from before the sources were kept) counts
  // as a payment object's, so that a later notification does not drop it.
  const found = await rows(tx, `SELECT customer_id, email, customer_email, customer_email_created,
      coalesce(payment_email, CASE WHEN customer_email IS NULL THEN email END) AS payment_email, payment_email_created,
      person_key, visitor_key, tr_user_id, tr_visitor_id, tr_user_id_created, tr_visitor_id_created, link_state
    FROM payment_customers WHERE workspace_id = $1 AND customer_id = $2`, [ws, customerId]);
  const r = found[0];
  if (!r) return null;
  const text = (v: unknown) => (v as string | null | undefined) ?? null;
  const time = (v: unknown) => (v as Date | null | undefined) ?? null;
  return {
    customer_id: r.customer_id as string,
    email: text(r.email),
    customer_email: text(r.customer_email),
    customer_email_created: time(r.customer_email_created),
    payment_email: text(r.payment_email),
    payment_email_created: time(r.payment_email_created),
    person_key: num(r.person_key),
    visitor_key: num(r.visitor_key),
    tr_user_id: text(r.tr_user_id),
    tr_visitor_id: text(r.tr_visitor_id),
    tr_user_id_created: time(r.tr_user_id_created),
    tr_visitor_id_created: time(r.tr_visitor_id_created),
    link_state: r.link_state as LinkState,
  };
}

export async function saveCustomer(tx: ControlTx, ws: string, c: CustomerRecord, isNew: boolean, now: Date): Promise<void> {
  const values = [c.email, c.person_key, c.visitor_key, c.tr_user_id, c.tr_visitor_id,
    c.tr_user_id_created, c.tr_visitor_id_created, c.link_state, now,
    c.customer_email, c.customer_email_created, c.payment_email, c.payment_email_created];
  if (isNew) {
    await tx.run(`INSERT INTO payment_customers (workspace_id, customer_id, email, person_key, visitor_key, tr_user_id,
        tr_visitor_id, tr_user_id_created, tr_visitor_id_created, link_state, updated_at,
        customer_email, customer_email_created, payment_email, payment_email_created)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    [ws, c.customer_id, ...values]);
  } else {
    await tx.run(`UPDATE payment_customers SET email = $3, person_key = $4, visitor_key = $5, tr_user_id = $6,
        tr_visitor_id = $7, tr_user_id_created = $8, tr_visitor_id_created = $9,
        link_state = $10, updated_at = $11, customer_email = $12,
        customer_email_created = $13, payment_email = $14, payment_email_created = $15
      WHERE workspace_id = $1 AND customer_id = $2`, [ws, c.customer_id, ...values]);
  }
}

/** Deferred customers of these visitors become linked (the visitor now has a person). */
export async function linkDeferredCustomers(tx: ControlTx, ws: string, visitorKeys: number[], now: Date): Promise<void> {
  if (visitorKeys.length === 0) return;
  await tx.run(`UPDATE payment_customers SET link_state = 'linked', updated_at = $2
    WHERE workspace_id = $1 AND link_state = 'deferred' AND visitor_key IN (SELECT ${tx.dialect.keys('$3')})`,
  [ws, now, column(visitorKeys)]);
}

/** A refund stops counting when the processor reports it failed or canceled. */
const issued = (status: unknown) => status !== 'failed' && status !== 'canceled';

/**
 * Inserts the refund, or overwrites it unless the stored state is newer than `created`; a payer,
 * charge or payment intent once known is kept. Its refund_issued event follows the stored state.
 */
export async function saveRefund(work: UnitOfWork, ws: string, r: RefundState, created: Date): Promise<void> {
  const tx = work.control;
  const found = await rows(tx, 'SELECT source_created FROM refunds WHERE workspace_id = $1 AND refund_id = $2', [ws, r.refund_id]);
  const values = [r.customer_id, r.charge_id, r.payment_intent_id, r.amount, r.currency, r.status, r.created_at, created];
  if (found.length === 0) {
    await tx.run(`INSERT INTO refunds (workspace_id, refund_id, customer_id, charge_id, payment_intent_id, amount, currency, status,
        created_at, source_created)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, [ws, r.refund_id, ...values]);
  } else if (isOlder(found[0]!.source_created, created)) {
    await tx.run(`UPDATE refunds SET customer_id = coalesce(customer_id, $3), charge_id = coalesce($4, charge_id),
        payment_intent_id = coalesce($5, payment_intent_id), amount = coalesce($6, amount), currency = coalesce($7, currency),
        status = $8, created_at = $9, source_created = $10
      WHERE workspace_id = $1 AND refund_id = $2`, [ws, r.refund_id, ...values]);
  } else {
    await tx.run(`UPDATE refunds SET customer_id = coalesce(customer_id, $3), charge_id = coalesce(charge_id, $4),
        payment_intent_id = coalesce(payment_intent_id, $5)
      WHERE workspace_id = $1 AND refund_id = $2`, [ws, r.refund_id, r.customer_id, r.charge_id, r.payment_intent_id]);
  }
  await syncRefundEvent(work, ws, r.refund_id);
}

async function syncRefundEvent(work: UnitOfWork, ws: string, refundId: string): Promise<void> {
  const [r] = await rows(work.control, 'SELECT customer_id, amount, currency, status, created_at FROM refunds WHERE workspace_id = $1 AND refund_id = $2', [ws, refundId]);
  if (!r || r.customer_id === null) return;
  if (issued(r.status)) {
    await work.analytics.addPaymentEvent(ws, r.customer_id as string, 'refund_issued', r.created_at as Date, refundId,
      { amount: num(r.amount), currency: (r.currency as string | null) ?? null });
  } else {
    await work.analytics.withdrawPaymentEvent(ws, 'refund_issued', refundId);
  }
}

/** Refunds kept without a payer whose charge or payment intent is one of `objectIds` now belong to `customerId`. */
export async function attributeRefunds(work: UnitOfWork, ws: string, customerId: string, objectIds: string[]): Promise<void> {
  if (objectIds.length === 0) return;
  const waiting = await rows(work.control, `SELECT refund_id FROM refunds WHERE workspace_id = $1 AND customer_id IS NULL
      AND (charge_id IN (SELECT ${work.control.dialect.texts('$2')}) OR payment_intent_id IN (SELECT ${work.control.dialect.texts('$2')}))`,
  [ws, column(objectIds)]);
  for (const { refund_id } of waiting) {
    await work.control.run('UPDATE refunds SET customer_id = $3 WHERE workspace_id = $1 AND refund_id = $2', [ws, refund_id as string, customerId]);
    await syncRefundEvent(work, ws, refund_id as string);
  }
}

/**
 * Records a payment, or merges a later announcement of it: the amount of the best source so far
 * (payment intent, then charge, then session), the earliest time, the invoice once one is named.
 */
export async function recordPayment(work: UnitOfWork, ws: string, p: PaymentState): Promise<void> {
  await storePayment(work.control, ws, p);
  await mirrorPayment(work, ws, p.payment_id);
}

async function storePayment(tx: ControlTx, ws: string, p: PaymentState): Promise<void> {
  const [found] = await rows(tx, 'SELECT customer_id, amount, currency, paid_at, source, invoice_id FROM payments WHERE workspace_id = $1 AND payment_id = $2',
    [ws, p.payment_id]);
  if (!found) {
    await tx.run(`INSERT INTO payments (workspace_id, payment_id, customer_id, amount, currency, paid_at, source, invoice_id)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [ws, p.payment_id, p.customer_id, p.amount, p.currency, p.paid_at, p.source, p.invoice_id]);
    return;
  }
  const stored = found.source as PaymentSource | null;
  const replaces = stored === null || found.amount === null || SOURCE_RANK[p.source] >= SOURCE_RANK[stored];
  const paidAt = found.paid_at instanceof Date && found.paid_at.getTime() < p.paid_at.getTime() ? found.paid_at : p.paid_at;
  await tx.run(`UPDATE payments SET customer_id = coalesce(customer_id, $3), amount = $4, currency = $5, paid_at = $6,
      source = $7, invoice_id = coalesce(invoice_id, $8)
    WHERE workspace_id = $1 AND payment_id = $2`,
  [ws, p.payment_id, p.customer_id, replaces ? p.amount : num(found.amount), replaces ? p.currency : (found.currency as string | null),
    paidAt, replaces ? p.source : stored, p.invoice_id]);
}

/** These payments paid `invoiceId` (named by the invoice, the payment or an invoice payment, in any order). */
export async function linkPaymentsToInvoice(work: UnitOfWork, ws: string, paymentIds: string[], invoiceId: string): Promise<void> {
  const tx = work.control;
  for (const id of new Set(paymentIds)) {
    const seen = await rows(tx, 'SELECT 1 FROM payments WHERE workspace_id = $1 AND payment_id = $2', [ws, id]);
    if (seen.length > 0) {
      await tx.run('UPDATE payments SET invoice_id = $3 WHERE workspace_id = $1 AND payment_id = $2', [ws, id, invoiceId]);
    } else {
      await tx.run('INSERT INTO payments (workspace_id, payment_id, invoice_id) VALUES ($1, $2, $3)', [ws, id, invoiceId]);
    }
    await mirrorPayment(work, ws, id);
  }
}

/** Hands the payment as it now stands in the control store to the analytical writes (the revenue report's copy). */
async function mirrorPayment(work: UnitOfWork, ws: string, paymentId: string): Promise<void> {
  const [r] = await rows(work.control, 'SELECT customer_id, amount, currency, paid_at, invoice_id FROM payments WHERE workspace_id = $1 AND payment_id = $2',
    [ws, paymentId]);
  if (!r) return;
  await work.analytics.savePayment(ws, {
    payment_id: paymentId, customer_id: (r.customer_id as string | null) ?? null, amount: num(r.amount), currency: (r.currency as string | null) ?? null,
    paid_at: (r.paid_at as Date | null) ?? null, invoice_id: (r.invoice_id as string | null) ?? null,
  });
}

/** Remembers which customer a charge or payment intent belongs to (refunds name only those). */
export async function rememberObjects(tx: ControlTx, ws: string, customerId: string, objectIds: string[]): Promise<void> {
  for (const id of new Set(objectIds)) {
    const seen = await rows(tx, 'SELECT 1 FROM payment_objects WHERE workspace_id = $1 AND object_id = $2', [ws, id]);
    if (seen.length === 0) await tx.run('INSERT INTO payment_objects (workspace_id, object_id, customer_id) VALUES ($1, $2, $3)', [ws, id, customerId]);
  }
}

export async function customerOfObject(tx: ControlSql, ws: string, objectIds: string[]): Promise<string | null> {
  for (const id of objectIds) {
    const found = await rows(tx, 'SELECT customer_id FROM payment_objects WHERE workspace_id = $1 AND object_id = $2', [ws, id]);
    if (found[0]) return found[0].customer_id as string;
  }
  return null;
}

/** The workspace's webhook secret and payments mode; null when it does not exist. */
export async function webhookSettings(store: ControlSql, ws: string): Promise<{ secret: string | null; mode: PaymentsMode } | null> {
  const found = await store.all(`SELECT stripe_webhook_secret, coalesce(payments_mode, 'live') AS payments_mode
    FROM workspaces WHERE workspace_id = $1`, [ws]);
  const r = found[0];
  return r ? { secret: (r.stripe_webhook_secret as string | null) ?? null, mode: r.payments_mode as PaymentsMode } : null;
}
