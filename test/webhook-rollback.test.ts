// A notification that fails half-way keeps nothing (not even its id), so the processor's retry applies it.

import { afterEach, beforeEach, expect, it } from 'vitest';
import { PaymentWebhook } from '../src/attribution/webhook.js';
import { parseNotification } from '../src/attribution/notification.js';
import { Ingest } from '../src/ingest/ingest.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { DuckDBAnalytics } from '../src/store/duckdb/analytics.js';
import type { Store } from '../src/store/duckdb/db.js';
import type { Stores } from '../src/store/open.js';
import { startTestApp, type TestApp } from './support/app.js';
import { count, notification, subscription } from './support/stripe.js';

let t: TestApp;
beforeEach(async () => { t = await startTestApp(); });
afterEach(async () => { await t.close(); });

/** The same stores, whose units of work fail on the first write to payment_events. */
function failingOnPaymentEvents(stores: Stores): Stores {
  const store = stores.duckdb!;
  const failing = Object.create(store) as Store;
  failing.transaction = (fn) => store.transaction((tx) => fn(new Proxy(tx, {
    get(target, prop) {
      // Statements run as they are, or prepared once and kept (store/duckdb/statements.ts).
      if (prop === 'run' || prop === 'prepare') {
        return (sql: string, ...rest: unknown[]) => (sql.includes('INSERT INTO payment_events')
          ? Promise.reject(new Error('disk full'))
          : (target[prop] as (...a: unknown[]) => Promise<unknown>).call(target, sql, ...rest));
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  })));
  return { ...stores, control: new DuckDBControl(failing), analytics: new DuckDBAnalytics(failing), duckdb: failing };
}

it('rolls back everything, and the retry succeeds', async () => {
  const n = parseNotification(notification('customer.subscription.deleted', subscription('cus_r', { status: 'canceled', metadata: { tr_user_id: 'ur' } })));
  const broken = new PaymentWebhook(failingOnPaymentEvents(t.stores), new Ingest(t.stores));
  await expect(broken.apply(t.ws.workspace_id, n)).rejects.toThrow('disk full');
  for (const table of ['processed_notifications', 'payment_customers', 'subscriptions', 'persons']) expect(await count(t, table)).toBe(0);
  const healthy = new PaymentWebhook(t.stores, new Ingest(t.stores));
  expect(await healthy.apply(t.ws.workspace_id, n)).toEqual({ duplicate: false });
  expect(await count(t, 'payment_events')).toBe(1);
  expect(await count(t, 'persons')).toBe(1);
});
