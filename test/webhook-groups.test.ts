// Notifications delivered together share a unit of work (attribution/webhook.ts): grouped, they
// must end as they would one by one, each id applied once, and a notification that fails must fail
// alone.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseNotification } from '../src/attribution/notification.js';
import { PaymentWebhook } from '../src/attribution/webhook.js';
import { Ingest } from '../src/ingest/ingest.js';
import { DuckDBAnalytics } from '../src/store/duckdb/analytics.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import type { Store } from '../src/store/duckdb/db.js';
import type { Stores } from '../src/store/open.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { storedRows } from './support/stored.js';
import { checkoutSession, count, customerRow, deliver, invoice, notification, nowS, subscription } from './support/stripe.js';

/** One customer's notification: which kind, its metadata (checkout and subscription), its time. */
interface Planned {
  customer: number;
  kind: 'checkout' | 'subscription' | 'invoice';
  user: 'a' | 'b' | null;
  visitor: 'a' | 'b' | null;
}

const planned = fc.record({
  customer: fc.integer({ min: 0, max: 2 }),
  kind: fc.constantFrom('checkout' as const, 'subscription' as const, 'invoice' as const),
  user: fc.constantFrom('a' as const, 'b' as const, null),
  visitor: fc.constantFrom('a' as const, 'b' as const, null),
});

/**
 * A run's notifications (each at its own second, so that creation times never tie) and the order
 * of their deliveries: some delivered twice, all shuffled.
 */
const runs = fc.record({
  plan: fc.array(planned, { minLength: 1, maxLength: 12 }),
  again: fc.array(fc.nat(), { maxLength: 4 }),
  seed: fc.integer(),
});

let run = 0;

function build({ plan, again, seed }: { plan: Planned[]; again: number[]; seed: number }) {
  const prefix = `r${run++}_`;
  const base = nowS() - 1000;
  const events = plan.map((p, i) => {
    const customer = `cus_${prefix}${p.customer}`;
    const meta = { tr_user_id: p.user && `u_${prefix}${p.customer}${p.user}`, tr_visitor_id: p.visitor && `v_${prefix}${p.customer}${p.visitor}` };
    const created = base + i;
    if (p.kind === 'checkout') return notification('checkout.session.completed', checkoutSession(customer, meta), created);
    if (p.kind === 'subscription') {
      return notification('customer.subscription.updated', subscription(customer, { id: `sub_${prefix}${p.customer}`, metadata: meta, created }), created);
    }
    return notification('invoice.paid', invoice(customer, { id: `in_${prefix}${i}`, paid_at: created, created }), created);
  });
  const deliveries = [...events, ...again.map((i) => events[i % events.length]!)];
  // A seeded shuffle: the same run replays the same order.
  let s = seed;
  for (let i = deliveries.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1_103_515_245) + 12_345) | 0;
    const j = Math.abs(s) % (i + 1);
    [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
  }
  const customers = [...new Set(plan.map((p) => `cus_${prefix}${p.customer}`))];
  return { deliveries, customers, prefix };
}

describe.each(ENGINES)('%s', (engine) => {
  let t: TestApp;
  /** A second workspace of the same app, which gets the same notifications one by one. */
  let other: { workspaceId: string; secret: string };
  beforeAll(async () => {
    t = await startTestApp({ engine });
    const created = await t.workspaces.create('one by one');
    other = { workspaceId: created.workspace_id, secret: created.stripe_webhook_secret };
  });
  afterAll(async () => { await t.close(); });

  /** What a run left in a workspace: its customers' links, subscriptions, invoices and lifecycle events. */
  async function state(ws: string, customers: string[], prefix: string) {
    const links = await Promise.all(customers.map((c) => customerRow(t, c, ws)));
    const mine = (rows: Record<string, unknown>[]) => rows.filter((r) => String(r.customer_id).includes(prefix));
    return {
      links,
      subscriptions: mine(await storedRows(t, 'subscriptions', ['subscription_id', 'customer_id', 'status'], ['subscription_id'], ws)),
      invoices: mine(await storedRows(t, 'invoices', ['invoice_id', 'customer_id', 'amount_paid'], ['invoice_id'], ws)),
      events: mine(await storedRows(t, 'payment_events', ['customer_id', 'kind', 'object_id'], ['customer_id', 'kind', 'object_id'], ws)),
    };
  }

  it('delivered concurrently, in any order and some twice, ends as one by one: each id applied once, the latest metadata wins', async () => {
    await fc.assert(fc.asyncProperty(runs, async (r) => {
      const { deliveries, customers, prefix } = build(r);
      const together = await Promise.all(deliveries.map((e) => deliver(t, e)));
      const oneByOne = [];
      for (const e of deliveries) oneByOne.push(await deliver(t, e, { workspaceId: other.workspaceId, secret: other.secret }));
      for (const res of [...together, ...oneByOne]) expect(res.statusCode, res.body).toBe(200);
      // Each id is applied by exactly one of its deliveries.
      const applied = (answers: typeof together) => answers.filter((res) => res.json().duplicate === false).length;
      const ids = new Set(deliveries.map((e) => e.id)).size;
      expect(applied(together)).toBe(ids);
      expect(applied(oneByOne)).toBe(ids);
      expect(await state(t.ws.workspace_id, customers, prefix)).toEqual(await state(other.workspaceId, customers, prefix));
    }), { numRuns: 6, seed: 20 });
  });

  it('a delivery with a bad signature in a concurrent burst fails alone; the others are applied', async () => {
    const events = [0, 1, 2, 3, 4].map((i) => notification('checkout.session.completed', checkoutSession(`cus_burst${i}`, { tr_user_id: `u_burst${i}` })));
    const answers = await Promise.all(events.map((e, i) => deliver(t, e, i === 2 ? { secret: 'whsec_wrong' } : {})));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 400, 200, 200]);
    expect(answers[2]!.json().error).toBe('invalid_signature');
    for (const i of [0, 1, 3, 4]) expect((await customerRow(t, `cus_burst${i}`))?.external_id).toBe(`u_burst${i}`);
    expect(await customerRow(t, 'cus_burst2')).toBeUndefined();
  });
});

/** The same stores, whose transactions fail on any statement that names `marker`. */
function failingOn(stores: Stores, marker: string): Stores {
  const store = stores.duckdb!;
  const failing = Object.create(store) as Store;
  const names = (args: readonly unknown[]) => JSON.stringify(args, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).includes(marker);
  failing.transaction = (fn) => store.transaction((tx) => fn(new Proxy(tx, {
    get(target, prop) {
      if (prop === 'run' || prop === 'prepare') {
        const method = target[prop] as unknown as (...a: unknown[]) => Promise<{ bind?: (v: unknown[]) => void }>;
        // A kept statement is bound later: its values are checked then.
        return async (...args: unknown[]) => {
          if (names(args)) throw new Error('disk full');
          const result = await method.apply(target, args);
          if (prop === 'prepare' && result.bind) {
            const bind = result.bind.bind(result);
            return Object.assign(Object.create(result) as object, {
              bind: (values: unknown[]) => { if (names(values)) throw new Error('disk full'); bind(values); },
            });
          }
          return result;
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  })));
  return { ...stores, control: new DuckDBControl(failing), analytics: new DuckDBAnalytics(failing), duckdb: failing };
}

describe('duckdb: a notification whose unit fails', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t.close(); });

  it('fails alone in a concurrent burst, keeping nothing of it (not its id); the others are applied and its retry succeeds', async () => {
    const ws = t.ws.workspace_id;
    const broken = new PaymentWebhook(failingOn(t.stores, 'cus_broken'), new Ingest(t.stores));
    const customers = ['cus_g0', 'cus_g1', 'cus_broken', 'cus_g2', 'cus_g3', 'cus_g4'];
    const events = customers.map((c) => parseNotification(notification('customer.subscription.created', subscription(c, { metadata: { tr_user_id: `u_${c}` } }))));
    const outcomes = await Promise.allSettled(events.map((n) => broken.apply(ws, n)));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(outcomes[2]).toMatchObject({ reason: { message: 'disk full' } });
    expect(await count(t, 'processed_notifications')).toBe(5);
    expect(await count(t, 'subscriptions')).toBe(5);
    expect(await customerRow(t, 'cus_broken')).toBeUndefined();
    for (const c of customers.filter((c) => c !== 'cus_broken')) expect((await customerRow(t, c))?.external_id).toBe(`u_${c}`);
    const healthy = new PaymentWebhook(t.stores, new Ingest(t.stores));
    expect(await healthy.apply(ws, events[2]!)).toEqual({ duplicate: false });
    expect((await customerRow(t, 'cus_broken'))?.external_id).toBe('u_cus_broken');
  });
});
