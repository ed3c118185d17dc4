// Random and mutated notifications, signed or not: the webhook answers 200 or a 4xx, never a 500.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import {
  charge, checkoutSession, customer, deliver, invoice, invoicePayment, notification, paymentIntent, refund, subscription, thinEvent,
} from './support/stripe.js';
import { tierRuns } from './support/tier.js';

let t: TestApp;
beforeAll(async () => { t = await startTestApp(); });
afterAll(async () => { await t.close(); });

const seeds = [
  notification('checkout.session.completed', checkoutSession('cus_f', { tr_user_id: 'uf', tr_visitor_id: 'vf' }, 'f@example.com')),
  notification('payment_intent.succeeded', paymentIntent('cus_f', { tr_visitor_id: 'vf' })),
  notification('customer.subscription.updated', subscription('cus_f')),
  notification('customer.subscription.deleted', subscription('cus_f', { status: 'canceled' })),
  notification('invoice.paid', invoice('cus_f')),
  notification('charge.refunded', charge('cus_f', { refunded: true })),
  notification('refund.created', refund('ch_x')),
  notification('checkout.session.completed', checkoutSession(null, { tr_visitor_id: 'vf' }, 'g@example.com', { mode: 'payment', client_reference_id: 'vf' })),
  notification('payment_intent.succeeded', paymentIntent(null, { tr_user_id: 'uf' }, { receipt_email: 'g@example.com' })),
  notification('charge.refunded', charge(null, { payment_intent: 'pi_g', refunds: [refund('ch_g', 'pi_g')] })),
  notification('charge.refund.updated', refund('ch_g', 'pi_g', { customer: 'cus_f', status: 'failed' })),
  notification('invoice.payment_succeeded', invoice(customer('cus_f', { email: 'f@example.com' }), { subscription: 'sub_f' })),
  notification('invoice_payment.paid', invoicePayment('in_f', 'pi_f')),
  notification('checkout.session.completed', checkoutSession('cus_f'), undefined, undefined, false),
  thinEvent(),
];

function paths(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null) return [prefix];
  return [prefix, ...Object.entries(value).flatMap(([k, v]) => paths(v, [...prefix, k]))];
}

function mutate(doc: unknown, path: string[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const copy = structuredClone(doc) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path[path.length - 1]!] = replacement;
  return copy;
}

const odd = fc.oneof(
  fc.constantFrom(null, true, 0, -1, 1.5, 1e308, '', 'x'.repeat(300), [], {}, { id: 5 }, '__proto__'),
  fc.jsonValue({ maxDepth: 2 }),
);
const mutated = fc.constantFrom(...seeds).chain((seed) =>
  fc.tuple(fc.constantFrom(...paths(seed)), odd, fc.string({ maxLength: 8 })).map(([p, r, id]) => ({ ...(mutate(seed, p, r) as object), id: `evt_${id}` })));

describe('webhook fuzz', () => {
  it('signed mutated notifications never give a 500', async () => {
    await fc.assert(fc.asyncProperty(mutated, async (event) => {
      const res = await deliver(t, event);
      expect(res.statusCode, res.body).toBeLessThan(500);
    }), { numRuns: tierRuns(150) });
  });

  it('random bodies and headers never give a 500', async () => {
    await fc.assert(fc.asyncProperty(fc.string(), fc.option(fc.string()), fc.string({ maxLength: 300 }), async (raw, header, ws) => {
      const res = await deliver(t, null, { raw, header, workspaceId: encodeURIComponent(ws) });
      expect(res.statusCode).toBeLessThan(500);
    }), { numRuns: tierRuns(100) });
    await fc.assert(fc.asyncProperty(fc.string(), async (raw) => {
      const res = await deliver(t, null, { raw });
      expect(res.statusCode).toBeLessThan(500);
    }), { numRuns: tierRuns(100) });
  });
});
