// Payment state the criteria read: subscriptions and invoices (the newest notification's state) and
// lifecycle events (first paid invoice, cancellation, refund), written inside the webhook's unit of work.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { InvoiceState, Money, PaymentEventKind, SubscriptionState } from '../analytics.js';
import { runKept } from './statements.js';
import { isOlder, utc } from './time.js';

async function rows(tx: DuckDBConnection, sql: string, params: (string | number | null)[]): Promise<Record<string, unknown>[]> {
  return (await (await runKept(tx, sql, params)).getRowObjectsJS()) as Record<string, unknown>[];
}

async function run(tx: DuckDBConnection, sql: string, params: (string | number | null)[]): Promise<void> {
  await runKept(tx, sql, params);
}

const ts = (d: Date | null) => (d === null ? null : utc(d));

/** Inserts the subscription, or overwrites it unless the stored state is newer than `created`. */
export async function saveSubscription(tx: DuckDBConnection, ws: string, s: SubscriptionState, created: Date): Promise<void> {
  const found = await rows(tx, 'SELECT source_created FROM subscriptions WHERE workspace_id = $1 AND subscription_id = $2', [ws, s.subscription_id]);
  const values = [s.customer_id, s.status, s.price_id, s.product_id, s.interval, s.amount, s.currency, s.cancel_at_period_end ? 1 : 0, utc(s.created_at), utc(created)];
  if (found.length === 0) {
    await run(tx, `INSERT INTO subscriptions (workspace_id, subscription_id, customer_id, status, price_id, product_id, "interval",
        amount, currency, cancel_at_period_end, created_at, source_created)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CAST($10 AS INTEGER) = 1, CAST($11 AS TIMESTAMP), CAST($12 AS TIMESTAMP))`,
    [ws, s.subscription_id, ...values]);
  } else if (isOlder(found[0]!.source_created, created)) {
    await run(tx, `UPDATE subscriptions SET customer_id = $3, status = $4, price_id = $5, product_id = $6, "interval" = $7,
        amount = $8, currency = $9, cancel_at_period_end = CAST($10 AS INTEGER) = 1, created_at = CAST($11 AS TIMESTAMP),
        source_created = CAST($12 AS TIMESTAMP)
      WHERE workspace_id = $1 AND subscription_id = $2`, [ws, s.subscription_id, ...values]);
  }
}

export async function saveInvoice(tx: DuckDBConnection, ws: string, i: InvoiceState, created: Date): Promise<void> {
  const found = await rows(tx, 'SELECT source_created FROM invoices WHERE workspace_id = $1 AND invoice_id = $2', [ws, i.invoice_id]);
  const values = [i.customer_id, i.subscription_id, i.status, i.amount_due, i.amount_paid, i.currency, utc(i.created_at), utc(created), ts(i.paid_at)];
  if (found.length === 0) {
    await run(tx, `INSERT INTO invoices (workspace_id, invoice_id, customer_id, subscription_id, status, amount_due, amount_paid,
        currency, created_at, source_created, paid_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CAST($9 AS TIMESTAMP), CAST($10 AS TIMESTAMP), CAST($11 AS TIMESTAMP))`, [ws, i.invoice_id, ...values]);
  } else if (isOlder(found[0]!.source_created, created)) {
    // A later update that does not show the payment time keeps the one known.
    await run(tx, `UPDATE invoices SET customer_id = $3, subscription_id = $4, status = $5, amount_due = $6, amount_paid = $7,
        currency = $8, created_at = CAST($9 AS TIMESTAMP), source_created = CAST($10 AS TIMESTAMP),
        paid_at = coalesce(CAST($11 AS TIMESTAMP), paid_at)
      WHERE workspace_id = $1 AND invoice_id = $2`, [ws, i.invoice_id, ...values]);
  }
}

/** Records a lifecycle event once per (kind, object). */
export async function addPaymentEvent(tx: DuckDBConnection, ws: string, customerId: string, kind: PaymentEventKind, at: Date, objectId: string,
  money: Money = { amount: null, currency: null }): Promise<void> {
  const seen = await rows(tx, 'SELECT 1 FROM payment_events WHERE workspace_id = $1 AND kind = $2 AND object_id = $3', [ws, kind, objectId]);
  if (seen.length > 0) return;
  await run(tx, `INSERT INTO payment_events (workspace_id, customer_id, kind, ts, object_id, amount, currency)
    VALUES ($1, $2, $3, CAST($4 AS TIMESTAMP), $5, $6, $7)`, [ws, customerId, kind, utc(at), objectId, money.amount, money.currency]);
}

/** Withdraws the event of (kind, object), if any. */
export async function withdrawPaymentEvent(tx: DuckDBConnection, ws: string, kind: PaymentEventKind, objectId: string): Promise<void> {
  await run(tx, 'DELETE FROM payment_events WHERE workspace_id = $1 AND kind = $2 AND object_id = $3', [ws, kind, objectId]);
}

/** Keeps one first_paid_invoice per customer: the earliest paid invoice seen, whatever the arrival order. */
export async function recordPaidInvoice(tx: DuckDBConnection, ws: string, customerId: string, at: Date, invoiceId: string, money: Money): Promise<void> {
  const found = await rows(tx, `SELECT ts FROM payment_events WHERE workspace_id = $1 AND customer_id = $2 AND kind = 'first_paid_invoice'`, [ws, customerId]);
  const first = found[0]?.ts;
  if (first instanceof Date && first.getTime() <= at.getTime()) return;
  if (found.length > 0) {
    await run(tx, `DELETE FROM payment_events WHERE workspace_id = $1 AND customer_id = $2 AND kind = 'first_paid_invoice'`, [ws, customerId]);
  }
  await addPaymentEvent(tx, ws, customerId, 'first_paid_invoice', at, invoiceId, money);
}

/** The customer of a stored invoice, or null. */
export async function customerOfInvoice(tx: DuckDBConnection, ws: string, invoiceId: string): Promise<string | null> {
  const [found] = await rows(tx, 'SELECT customer_id FROM invoices WHERE workspace_id = $1 AND invoice_id = $2', [ws, invoiceId]);
  return (found?.customer_id as string | undefined) ?? null;
}
