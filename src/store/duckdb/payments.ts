// Payment state the criteria read: subscriptions and invoices (the newest notification's state) and
// lifecycle events (first paid invoice, cancellation, refund). A group of notifications reads what
// it needs a statement per table, decides in memory (attribution/group.ts) and writes a statement or
// two per table, inside the webhook's unit of work.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { PaymentEventKind, PaymentEventState, PaymentStateChanges, PaymentStateKeys, StoredPaymentState } from '../analytics.js';
import { insertRows, type Row, type RowsTable, updateRows } from '../control/rows.js';
import { columnOf as column } from '../control/store.js';
import { stringifyWellFormed } from '../../well-formed.js';
import { controlSql, duckdbDialect } from './control.js';

const texts = duckdbDialect.texts;
const time = (v: unknown) => (v instanceof Date ? v : null);
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
/** A lifecycle event's (kind, object) as one text: kinds hold no colon. */
const eventKey = (kind: string, objectId: string) => `${kind}:${objectId}`;

/** The group's subscriptions, invoices and events in one statement (a part with no keys reads nothing). */
export async function readPaymentState(tx: DuckDBConnection, ws: string, keys: PaymentStateKeys): Promise<StoredPaymentState> {
  const state: StoredPaymentState = { subscriptions: new Map(), invoices: new Map(), events: [] };
  if (keys.subscriptions.length + keys.invoices.length + keys.events.length + keys.firstPaidOf.length === 0) return state;
  const found = await controlSql(tx).all(`
    SELECT 's' AS part, subscription_id AS id, NULL AS customer_id, source_created AS created, NULL AS paid_at,
      NULL AS kind, NULL AS object_id, NULL AS ts, NULL AS amount, NULL AS currency
    FROM subscriptions WHERE workspace_id = $1 AND subscription_id IN (SELECT ${texts('$2')})
    UNION ALL
    SELECT 'i', invoice_id, customer_id, source_created, paid_at, NULL, NULL, NULL, NULL, NULL
    FROM invoices WHERE workspace_id = $1 AND invoice_id IN (SELECT ${texts('$3')})
    UNION ALL
    SELECT 'e', NULL, customer_id, NULL, NULL, kind, object_id, ts, amount, currency
    FROM payment_events WHERE workspace_id = $1 AND (kind || ':' || object_id IN (SELECT ${texts('$4')})
      OR kind = 'first_paid_invoice' AND customer_id IN (SELECT ${texts('$5')}))`,
  [ws, column(keys.subscriptions), column(keys.invoices), column(keys.events.map((e) => eventKey(e.kind, e.object_id))), column(keys.firstPaidOf)]);
  for (const r of found) {
    if (r.part === 's') {
      state.subscriptions.set(r.id as string, { created: time(r.created) });
    } else if (r.part === 'i') {
      state.invoices.set(r.id as string, { created: time(r.created), customer_id: r.customer_id as string, paid_at: time(r.paid_at) });
    } else {
      state.events.push({
        kind: r.kind as PaymentEventKind, customer_id: r.customer_id as string, object_id: r.object_id as string, ts: r.ts as Date,
        amount: num(r.amount), currency: (r.currency as string | null) ?? null,
      });
    }
  }
  return state;
}

const SUBSCRIPTIONS: RowsTable = {
  name: 'subscriptions', key: 'subscription_id', columns: {
    customer_id: 'text', status: 'text', price_id: 'text', product_id: 'text', interval: 'text', amount: 'bigint', currency: 'text',
    cancel_at_period_end: 'boolean', created_at: 'time', source_created: 'time',
  },
};

const INVOICES: RowsTable = {
  name: 'invoices', key: 'invoice_id', columns: {
    customer_id: 'text', subscription_id: 'text', status: 'text', amount_due: 'bigint', amount_paid: 'bigint', currency: 'text',
    created_at: 'time', source_created: 'time', paid_at: 'time',
  },
};

const EVENTS: RowsTable = {
  name: 'payment_events', key: 'object_id', columns: { kind: 'text', customer_id: 'text', ts: 'time', amount: 'bigint', currency: 'text' },
};

export async function writePaymentState(tx: DuckDBConnection, ws: string, changes: PaymentStateChanges): Promise<void> {
  const sql = controlSql(tx);
  const subscriptions = changes.subscriptions.map((s): [boolean, Row] => [s.stored, { ...s.state, source_created: s.created }]);
  await insertRows(sql, SUBSCRIPTIONS, ws, subscriptions.filter(([stored]) => !stored).map(([, row]) => row));
  await updateRows(sql, SUBSCRIPTIONS, ws, subscriptions.filter(([stored]) => stored).map(([, row]) => row));
  const invoices = changes.invoices.map((i): [boolean, Row] => [i.stored, { ...i.state, source_created: i.created }]);
  await insertRows(sql, INVOICES, ws, invoices.filter(([stored]) => !stored).map(([, row]) => row));
  await updateRows(sql, INVOICES, ws, invoices.filter(([stored]) => stored).map(([, row]) => row));
  if (changes.removed.length > 0) {
    const removed = stringifyWellFormed(changes.removed.map((e) => ({ kind: e.kind, customer_id: e.customer_id, object_id: e.object_id })));
    await sql.run(`DELETE FROM payment_events USING ${duckdbDialect.jsonRows('$2', 'r', { kind: 'text', customer_id: 'text', object_id: 'text' })}
      WHERE payment_events.workspace_id = $1 AND payment_events.kind = r.kind AND payment_events.customer_id = r.customer_id
        AND payment_events.object_id = r.object_id`, [ws, removed]);
  }
  await insertRows(sql, EVENTS, ws, changes.added as unknown as Row[]);
}
