// Payers (Customers and guest payments) and their links, payments, refunds, the payment objects
// seen and the notifications already processed: read and written a group of notifications at a time
// (attribution/group.ts decides), a statement per table, inside the webhook's unit of work. The
// payment state the criteria read (subscriptions, invoices, lifecycle events) is analytical. The
// writes of customers and payments keep the analytical engine's copies too (PaymentsMirror).

import type { CustomerRow } from '../layout.js';
import { insertRows, type Row, type RowsTable, updateRows } from './rows.js';
import { columnOf as column, type ControlSql, type ControlTx } from './store.js';
import type { PaymentsMode } from './workspaces.js';

export type LinkState = CustomerRow['link_state'];

/** An amount in minor units of a currency (either may be unknown). */
export interface Money {
  amount: number | null;
  currency: string | null;
}

/**
 * The copies of customers' links and of payments an analytical engine keeps when it cannot read
 * these tables in place (ClickHouse), written in the same unit of work; none on an engine that reads them here.
 */
export interface PaymentsMirror {
  /** Customers created or changed: whom their rows belong to (a customer's last link wins). */
  customers(ws: string, customers: CustomerRecord[]): Promise<void>;
  /** Payments recorded or changed, as they now stand: the revenue report's one-time payments. */
  payments(ws: string, payments: StoredPayment[]): Promise<void>;
}

/** Where customers and payments are written: a unit of work's control transaction and its engine's copies. */
export interface PaymentsWrites {
  control: ControlTx;
  mirror: PaymentsMirror;
}

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
export const SOURCE_RANK: Record<PaymentSource, number> = { 'checkout.session': 1, charge: 2, payment_intent: 3 };

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

const CUSTOMER_COLUMNS = `customer_id, email, customer_email, customer_email_created,
  coalesce(payment_email, CASE WHEN customer_email IS NULL THEN email END) AS payment_email, payment_email_created,
  person_key, visitor_key, tr_user_id, tr_visitor_id, tr_user_id_created, tr_visitor_id_created, link_state`;

const text = (v: unknown) => (v as string | null | undefined) ?? null;
const time = (v: unknown) => (v as Date | null | undefined) ?? null;

/** The stored customers of these ids. */
export async function readCustomers(tx: ControlSql, ws: string, customerIds: string[]): Promise<Map<string, CustomerRecord>> {
  if (customerIds.length === 0) return new Map();
  // An email stored without either source (imported, or from before the sources were kept) counts
  // as a payment object's, so that a later notification does not drop it.
  const found = await rows(tx, `SELECT ${CUSTOMER_COLUMNS} FROM payment_customers
    WHERE workspace_id = $1 AND customer_id IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(customerIds)]);
  return new Map(found.map((r) => [r.customer_id as string, {
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
  }]));
}

const CUSTOMERS: RowsTable = {
  name: 'payment_customers', key: 'customer_id', columns: {
    email: 'text', person_key: 'bigint', visitor_key: 'bigint', tr_user_id: 'text', tr_visitor_id: 'text', tr_user_id_created: 'time',
    tr_visitor_id_created: 'time', link_state: 'text', updated_at: 'time', customer_email: 'text', customer_email_created: 'time',
    payment_email: 'text', payment_email_created: 'time',
  },
};

/**
 * Inserts `created` customers and overwrites `changed` ones, a statement each; the people search's
 * own indexes (DuckDB's) learn the created and `reemailed` (the changed ones given another email).
 */
export async function writeCustomers({ control: tx, mirror }: PaymentsWrites, ws: string, created: CustomerRecord[], changed: CustomerRecord[],
  reemailed: CustomerRecord[], now: Date): Promise<void> {
  const row = (c: CustomerRecord): Row => ({ ...c, updated_at: now });
  await insertRows(tx, CUSTOMERS, ws, created.map(row));
  await updateRows(tx, CUSTOMERS, ws, changed.map(row));
  await mirror.customers(ws, [...created, ...changed]);
  tx.search.indexCustomers(ws, [...created, ...reemailed].map((c) => ({ key: c.customer_id, values: [c.customer_id, c.email] })));
}

/** Deferred customers of these visitors become linked (the visitor now has a person). */
export async function linkDeferredCustomers(tx: ControlTx, ws: string, visitorKeys: number[], now: Date): Promise<void> {
  if (visitorKeys.length === 0) return;
  await tx.run(`UPDATE payment_customers SET link_state = 'linked', updated_at = $2
    WHERE workspace_id = $1 AND link_state = 'deferred' AND visitor_key IN (SELECT ${tx.dialect.keys('$3')})`,
  [ws, now, column(visitorKeys)]);
}

/** A refund as stored: its state, and the time of the notification that last announced it. */
export interface StoredRefund extends RefundState {
  source_created: Date;
}

/**
 * The refunds of these ids, every refund of a charge among `objects` (a charge's refunds are
 * reconciled together, attribution/refunds.ts), and those without a payer whose payment intent is one of `objects`.
 */
export async function readRefunds(tx: ControlSql, ws: string, refundIds: string[], objects: string[]): Promise<StoredRefund[]> {
  if (refundIds.length === 0 && objects.length === 0) return [];
  const { texts } = tx.dialect;
  // Only the parts asked for: PostgreSQL answers each from an index (004_waiting_refunds.sql, 007_refunds_by_charge.sql).
  const params: string[] = [ws];
  const parts: string[] = [];
  if (refundIds.length > 0) parts.push(`refund_id IN (SELECT ${texts(`$${params.push(column(refundIds))}`)})`);
  if (objects.length > 0) {
    const named = `$${params.push(column(objects))}`;
    parts.push(`charge_id IN (SELECT ${texts(named)}) OR customer_id IS NULL AND payment_intent_id IN (SELECT ${texts(named)})`);
  }
  const found = await rows(tx, `SELECT refund_id, customer_id, charge_id, payment_intent_id, amount, currency, status, created_at, source_created
    FROM refunds WHERE workspace_id = $1 AND (${parts.join(' OR ')})`, params);
  return found.map((r) => ({
    refund_id: r.refund_id as string, customer_id: text(r.customer_id), charge_id: text(r.charge_id), payment_intent_id: text(r.payment_intent_id),
    amount: num(r.amount), currency: text(r.currency), status: text(r.status), created_at: r.created_at as Date, source_created: r.source_created as Date,
  }));
}

const REFUNDS: RowsTable = {
  name: 'refunds', key: 'refund_id', columns: {
    customer_id: 'text', charge_id: 'text', payment_intent_id: 'text', amount: 'bigint', currency: 'text', status: 'text', created_at: 'time',
    source_created: 'time',
  },
};

export async function writeRefunds(tx: ControlTx, ws: string, created: StoredRefund[], changed: StoredRefund[]): Promise<void> {
  await insertRows(tx, REFUNDS, ws, created as unknown as Row[]);
  await updateRows(tx, REFUNDS, ws, changed as unknown as Row[]);
}

/** A payment as stored: an invoice's payment named before the payment itself was seen has only its invoice. */
export interface StoredPayment extends Money {
  payment_id: string;
  customer_id: string | null;
  paid_at: Date | null;
  source: PaymentSource | null;
  invoice_id: string | null;
}

export async function readPayments(tx: ControlSql, ws: string, paymentIds: string[]): Promise<Map<string, StoredPayment>> {
  if (paymentIds.length === 0) return new Map();
  const found = await rows(tx, `SELECT payment_id, customer_id, amount, currency, paid_at, source, invoice_id FROM payments
    WHERE workspace_id = $1 AND payment_id IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(paymentIds)]);
  return new Map(found.map((r) => [r.payment_id as string, {
    payment_id: r.payment_id as string, customer_id: text(r.customer_id), amount: num(r.amount), currency: text(r.currency),
    paid_at: time(r.paid_at), source: text(r.source) as PaymentSource | null, invoice_id: text(r.invoice_id),
  }]));
}

const PAYMENTS: RowsTable = {
  name: 'payments', key: 'payment_id',
  columns: { customer_id: 'text', amount: 'bigint', currency: 'text', paid_at: 'time', source: 'text', invoice_id: 'text' },
};

export async function writePayments({ control: tx, mirror }: PaymentsWrites, ws: string, created: StoredPayment[], changed: StoredPayment[]): Promise<void> {
  await insertRows(tx, PAYMENTS, ws, created as unknown as Row[]);
  await updateRows(tx, PAYMENTS, ws, changed as unknown as Row[]);
  await mirror.payments(ws, [...created, ...changed]);
}

/** The customers that payment objects (charges, payment intents) of these ids belong to. */
export async function readObjects(tx: ControlSql, ws: string, objectIds: string[]): Promise<Map<string, string>> {
  if (objectIds.length === 0) return new Map();
  const found = await rows(tx, `SELECT object_id, customer_id FROM payment_objects
    WHERE workspace_id = $1 AND object_id IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(objectIds)]);
  return new Map(found.map((r) => [r.object_id as string, r.customer_id as string]));
}

const OBJECTS: RowsTable = { name: 'payment_objects', key: 'object_id', columns: { customer_id: 'text' } };

/** Remembers which customer new charges and payment intents belong to (refunds name only those). */
export async function writeObjects(tx: ControlTx, ws: string, objects: { object_id: string; customer_id: string }[]): Promise<void> {
  await insertRows(tx, OBJECTS, ws, objects);
}

/** The workspace's webhook secret and payments mode; null when it does not exist. */
export async function webhookSettings(store: ControlSql, ws: string): Promise<{ secret: string | null; mode: PaymentsMode } | null> {
  const found = await store.all(`SELECT stripe_webhook_secret, coalesce(payments_mode, 'live') AS payments_mode
    FROM workspaces WHERE workspace_id = $1`, [ws]);
  const r = found[0];
  return r ? { secret: (r.stripe_webhook_secret as string | null) ?? null, mode: r.payments_mode as PaymentsMode } : null;
}
