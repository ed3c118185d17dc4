// The webhook's settings (secret, payments mode) may be kept in memory between deliveries where no
// other process writes them (attribution/webhook.ts): a change must take effect at the next
// delivery all the same, on every control store.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { checkoutSession, count, deliver, notification } from './support/stripe.js';

const payment = (n: number, livemode = true) =>
  notification('checkout.session.completed', checkoutSession(`cus_settings${n}`, { tr_user_id: `u_settings${n}` }), undefined, undefined, livemode);

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ engine }); });
  afterAll(async () => { await t.close(); });

  it('a rotated webhook secret stops working at the next delivery; the new one works', async () => {
    const old = t.ws.stripe_webhook_secret;
    for (const n of [0, 1]) expect((await deliver(t, payment(n), { secret: old })).statusCode).toBe(200);
    const rotated = await t.workspaces.rotate(t.ws.workspace_id, ['webhook']);
    const refused = await deliver(t, payment(2), { secret: old });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toBe('invalid_signature');
    expect((await deliver(t, payment(3), { secret: rotated!.stripe_webhook_secret! })).statusCode).toBe(200);
    expect(await count(t, 'processed_notifications')).toBe(3);
    t.ws.stripe_webhook_secret = rotated!.stripe_webhook_secret!;
  });

  it('a payments mode switched takes effect at the next delivery', async () => {
    expect((await deliver(t, payment(10))).json()).toEqual({ received: true, duplicate: false });
    await t.workspaces.setPaymentsMode(t.ws.workspace_id, 'test');
    expect((await deliver(t, payment(11))).json()).toEqual({ received: true, ignored: 'livemode' });
    expect((await deliver(t, payment(12, false))).json()).toEqual({ received: true, duplicate: false });
    await t.workspaces.setPaymentsMode(t.ws.workspace_id, 'live');
    expect((await deliver(t, payment(13))).json()).toEqual({ received: true, duplicate: false });
  });
});
