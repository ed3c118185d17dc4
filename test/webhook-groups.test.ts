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
import { controlRows, storedRows } from './support/stored.js';
import {
  charge, checkoutSession, count, customer, customerRow, deliver, invoice, invoicePayment, notification, nowS, paymentIntent, refund, subscription,
} from './support/stripe.js';
import { tierRuns } from './support/tier.js';

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

/** The notifications, those at the indexes `again` a second time, in a seeded shuffle (the same run replays the same order). */
function deliveriesOf<T>(events: T[], again: number[], seed: number): T[] {
  const deliveries = [...events, ...again.map((i) => events[i % events.length]!)];
  let s = seed;
  for (let i = deliveries.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1_103_515_245) + 12_345) | 0;
    const j = Math.abs(s) % (i + 1);
    [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
  }
  return deliveries;
}

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
  const deliveries = deliveriesOf(events, again, seed);
  const customers = [...new Set(plan.map((p) => `cus_${prefix}${p.customer}`))];
  return { deliveries, customers, prefix };
}

/**
 * Every kind of notification a group can hold, about three payers (customers 0 and 1, and a guest
 * keyed by payment intent 2) and three payment objects of each kind shared between them, so that
 * notifications of a group read what earlier ones of it wrote: payment objects remembered, refunds
 * waiting for their payment, invoices named by invoice payments, visitors created by one and named
 * as another's client_reference_id, persons found by the email fallback.
 */
interface Mixed {
  kind: 'checkout' | 'guest_checkout' | 'intent' | 'charge' | 'refund' | 'subscription' | 'canceled' | 'invoice' | 'invoice_payment' | 'customer';
  customer: number;
  object: number;
  user: 'a' | 'b' | null;
  visitor: 'a' | 'b' | null;
  email: 'a' | 'b' | null;
  failed: boolean;
}

const mixed = fc.record({
  kind: fc.constantFrom(
    'checkout' as const, 'guest_checkout' as const, 'intent' as const, 'charge' as const, 'refund' as const, 'subscription' as const,
    'canceled' as const, 'invoice' as const, 'invoice_payment' as const, 'customer' as const,
  ),
  customer: fc.integer({ min: 0, max: 1 }),
  object: fc.integer({ min: 0, max: 2 }),
  user: fc.constantFrom('a' as const, 'b' as const, null),
  visitor: fc.constantFrom('a' as const, 'b' as const, null),
  email: fc.constantFrom('a' as const, 'b' as const, null),
  failed: fc.boolean(),
});

const mixedRuns = fc.record({
  plan: fc.array(mixed, { minLength: 1, maxLength: 16 }),
  again: fc.array(fc.nat(), { maxLength: 4 }),
  seed: fc.integer(),
});

function buildMixed({ plan, again, seed }: { plan: Mixed[]; again: number[]; seed: number }) {
  const prefix = `m${run++}_`;
  const base = nowS() - 1000;
  const events = plan.map((p, i) => {
    const created = base + i;
    const cus = `cus_${prefix}${p.customer}`;
    const [pi, ch, inv] = [`pi_${prefix}${p.object}`, `ch_${prefix}${p.object}`, `in_${prefix}${p.object}`];
    const meta = { tr_user_id: p.user && `u_${prefix}${p.user}`, tr_visitor_id: p.visitor && `v_${prefix}${p.visitor}` };
    const email = p.email && `${p.email}_${prefix}@example.com`;
    switch (p.kind) {
      case 'checkout':
        return notification('checkout.session.completed', checkoutSession(cus, meta, email, { created }), created);
      case 'guest_checkout':
        // Without tr_visitor_id, a client_reference_id naming a visitor other notifications may create.
        return notification('checkout.session.completed', checkoutSession(null, { tr_user_id: meta.tr_user_id }, email, {
          mode: 'payment', payment_intent: pi, client_reference_id: `v_${prefix}${p.visitor ?? 'a'}`, created,
        }), created);
      case 'intent':
        return notification('payment_intent.succeeded', paymentIntent(p.object === 2 ? null : cus, meta, {
          id: pi, latest_charge: ch, receipt_email: email, created,
        }), created);
      case 'charge':
        return notification('charge.succeeded', charge(p.object === 2 ? null : cus, { id: ch, payment_intent: pi, email, created }), created);
      case 'refund':
        return notification('refund.created', refund(ch, pi, { id: `re_${prefix}${p.object}`, status: p.failed ? 'failed' : 'succeeded', created }), created);
      case 'subscription':
        return notification('customer.subscription.updated', subscription(cus, { id: `sub_${prefix}${p.object}`, metadata: meta, created }), created);
      case 'canceled':
        return notification('customer.subscription.deleted', subscription(cus, { id: `sub_${prefix}${p.object}`, status: 'canceled', created }), created);
      case 'invoice':
        return notification(p.failed ? 'invoice.payment_succeeded' : 'invoice.paid', invoice(cus, {
          id: inv, paid_at: created, created, customer_email: email, amount_paid: p.user === 'b' ? 0 : undefined,
        }), created);
      case 'invoice_payment':
        return notification('invoice_payment.paid', invoicePayment(inv, pi), created);
      case 'customer':
        return notification('customer.updated', customer(cus, { email }), created);
    }
  });
  return { deliveries: deliveriesOf(events, again, seed), prefix };
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
    }), { numRuns: tierRuns(6), seed: 20 });
  });

  /** Everything a mixed run left in a workspace, by public ids (keys differ between workspaces). */
  async function everything(ws: string, prefix: string) {
    const mine = (rows: Record<string, unknown>[]) => rows.filter((r) => Object.values(r).some((v) => typeof v === 'string' && v.includes(prefix)));
    const control = async (sql: string) => mine(await controlRows(t, sql, [ws]));
    return {
      customers: await control(`SELECT c.customer_id, c.link_state, c.email, c.customer_email, c.payment_email, c.tr_user_id, c.tr_visitor_id,
          p.external_id, p.email AS person_email, v.visitor_id, p2.external_id AS visitor_person
        FROM payment_customers c
          LEFT JOIN persons p ON p.workspace_id = c.workspace_id AND p.person_key = c.person_key
          LEFT JOIN visitors v ON v.workspace_id = c.workspace_id AND v.visitor_key = c.visitor_key
          LEFT JOIN persons p2 ON p2.workspace_id = c.workspace_id AND p2.person_key = v.person_key
        WHERE c.workspace_id = $1 ORDER BY c.customer_id`),
      persons: await control('SELECT external_id, email FROM persons WHERE workspace_id = $1 ORDER BY external_id, email'),
      visitors: await control(`SELECT v.visitor_id, p.external_id, p.email FROM visitors v
        LEFT JOIN persons p ON p.workspace_id = v.workspace_id AND p.person_key = v.person_key WHERE v.workspace_id = $1 ORDER BY v.visitor_id`),
      objects: await control('SELECT object_id, customer_id FROM payment_objects WHERE workspace_id = $1 ORDER BY object_id'),
      payments: await control(`SELECT payment_id, customer_id, amount, currency, paid_at, source, invoice_id FROM payments
        WHERE workspace_id = $1 ORDER BY payment_id`),
      refunds: await control(`SELECT refund_id, customer_id, charge_id, payment_intent_id, amount, currency, status, created_at FROM refunds
        WHERE workspace_id = $1 ORDER BY refund_id`),
      subscriptions: mine(await storedRows(t, 'subscriptions', ['subscription_id', 'customer_id', 'status'], ['subscription_id'], ws)),
      invoices: mine(await storedRows(t, 'invoices', ['invoice_id', 'customer_id', 'status', 'amount_paid', 'paid_at'], ['invoice_id'], ws)),
      events: mine(await storedRows(t, 'payment_events', ['customer_id', 'kind', 'object_id', 'ts', 'amount'], ['customer_id', 'kind', 'object_id'], ws)),
    };
  }

  it('a mix of every kind (guest payments, charges, refunds, invoice payments, emails, cancellations), delivered concurrently, ends as one by one', async () => {
    const otherKey = (await t.workspaces.create('mixed one by one'));
    await fc.assert(fc.asyncProperty(mixedRuns, async (r) => {
      const { deliveries, prefix } = buildMixed(r);
      // In both workspaces: a person holding email a (the email fallback finds it) and an anonymous visitor b.
      for (const [ws, key] of [[t.ws.workspace_id, t.ws.secret_key], [otherKey.workspace_id, otherKey.secret_key]] as const) {
        expect((await t.post('/v1/persons', { email: `a_${prefix}@example.com`, external_id: `u_${prefix}x` }, key)).statusCode).toBe(200);
        expect((await t.post('/v1/events', { event_name: 'seen', visitor_id: `v_${prefix}b` }, key)).statusCode, ws).toBe(200);
      }
      const together = await Promise.all(deliveries.map((e) => deliver(t, e)));
      const oneByOne = [];
      for (const e of deliveries) oneByOne.push(await deliver(t, e, { workspaceId: otherKey.workspace_id, secret: otherKey.stripe_webhook_secret }));
      for (const res of [...together, ...oneByOne]) expect(res.statusCode, res.body).toBe(200);
      expect(await everything(t.ws.workspace_id, prefix)).toEqual(await everything(otherKey.workspace_id, prefix));
    }), { numRuns: tierRuns(engine === 'duckdb' ? 25 : 10), seed: 21 });
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
