// Webhook destination: JSON pages of added and removed members, signed like Stripe's webhooks:
// `X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.

import { createHmac } from 'node:crypto';
import type { Destination } from './schema.js';
import { type Driver, publicMember } from './driver.js';

type Webhook = Extract<Destination, { type: 'webhook' }>;

export function signature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export const webhookDriver: Driver<Webhook> = {
  pageSize: (_destination, config) => config.webhookPageSize,
  async deliverPage(destination, page, { send }) {
    const body = JSON.stringify({
      audience_id: page.audienceId,
      snapshot_id: page.snapshotId,
      page: page.page,
      added: page.members.filter((m) => m.change === 'added').map(publicMember),
      removed: page.members.filter((m) => m.change === 'removed').map(publicMember),
    });
    await send((now) => ({
      label: 'POST',
      method: 'POST',
      url: destination.url,
      headers: {
        'content-type': 'application/json',
        'x-signature': signature(destination.secret, Math.floor(now.getTime() / 1000), body),
      },
      body,
    }));
    return { skipped: 0 };
  },
};
