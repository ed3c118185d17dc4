// Destination configurations as sent by clients; the stored form adds an id. Secrets (the webhook's
// signing secret, the platforms' access tokens) are stored but never shown back.

import { z } from 'zod';

const id = z.string().min(1).max(128);
const secret = z.string().min(1).max(4096);

export const destinationInput = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('webhook'),
    url: z.url({ protocol: /^https?$/ }).max(2048),
    secret: secret.describe('HMAC-SHA256 signing key of X-Signature'),
  }),
  z.object({
    type: z.literal('meta_custom_audience'),
    audience_id: id.describe('the custom audience id on the platform'),
    access_token: secret,
  }),
  z.object({
    type: z.literal('google_customer_match'),
    customer_id: id,
    user_list_id: id,
    access_token: secret,
    developer_token: secret.optional(),
  }),
]);
export type DestinationInput = z.infer<typeof destinationInput>;
export type Destination = DestinationInput & { id: string };
export type DestinationType = Destination['type'];

const SECRET_KEYS = new Set(['secret', 'access_token', 'developer_token']);

/** A destination as the API shows it. */
export function publicDestination(d: Destination): PublicDestination {
  return { ...Object.fromEntries(Object.entries(d).filter(([key]) => !SECRET_KEYS.has(key))), id: d.id, type: d.type };
}

export const publicDestinationSchema = z.object({ id: z.string(), type: z.string() }).catchall(z.unknown());
export type PublicDestination = z.infer<typeof publicDestinationSchema>;
