// removeEmails against the platform doubles: people removed by email (as a privacy deletion needs)
// match the hashes deliveries add, each platform's normalization applied.

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DeliveryContext, Send } from '../src/audiences/destinations/driver.js';
import { byStatus } from '../src/audiences/destinations/driver.js';
import { DestinationClient } from '../src/audiences/destinations/http.js';
import { AccessTokens } from '../src/audiences/destinations/oauth.js';
import { removeEmails } from '../src/audiences/destinations/removal.js';
import { storedDestination } from '../src/audiences/destinations/schema.js';
import { type AdPlatforms, CREDENTIALS, startAdPlatforms } from './support/platforms/index.js';

const sha = (email: string) => createHash('sha256').update(email).digest('hex');
let platforms: AdPlatforms;
let context: DeliveryContext;

beforeAll(async () => {
  platforms = await startAdPlatforms({ metaAudiences: ['3001'], customer: '1234567890', lists: ['41'] });
  const client = new DestinationClient({ timeoutMs: 5000, allowPrivate: true });
  // One attempt per request, judged as a delivery judges it.
  const send: Send = async (build) => {
    const request = await build(new Date());
    const response = await client.send(request);
    const verdict = (request.judge ?? byStatus)(response);
    if (!verdict.ok) throw new Error(verdict.error);
    return response;
  };
  context = { send, wait: async () => undefined, tokens: new AccessTokens(() => new Date()), config: platforms.delivery };
});
afterAll(() => platforms.close());

it('removes people by email from a Meta audience and a Data Manager list, each normalized its own way', async () => {
  platforms.meta.audiences.get('3001')!.add(sha('ann.lee@gmail.com')).add(sha('bob@example.com'));
  platforms.dataManager.lists.get('1234567890/41')!.add(sha('annlee@gmail.com')).add(sha('bob@example.com'));
  const meta = { ...storedDestination.parse({ type: 'meta_custom_audience', audience_id: '3001', access_token: CREDENTIALS.meta }), id: 'dst_m' };
  const google = {
    ...storedDestination.parse({
      type: 'google_customer_match', customer_id: '1234567890', user_list_id: '41', oauth: CREDENTIALS.dataManager,
      consent: { ad_user_data: 'GRANTED', ad_personalization: 'GRANTED' },
    }),
    id: 'dst_g',
  };
  expect(await removeEmails(meta, [' Ann.Lee@Gmail.com'], context)).toBe(true);
  expect(await removeEmails(google, [' Ann.Lee@Gmail.com'], context)).toBe(true);
  expect([...platforms.meta.audiences.get('3001')!]).toEqual([sha('bob@example.com')]);
  expect([...platforms.dataManager.lists.get('1234567890/41')!]).toEqual([sha('bob@example.com')]);
  expect(await removeEmails({ type: 'webhook', url: 'https://hooks.example.com/x', secret: 's', id: 'dst_w' }, ['a@b.c'], context)).toBe(false);
});
