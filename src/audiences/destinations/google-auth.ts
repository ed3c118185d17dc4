// Google's APIs take a bearer access token from the destination's refresh token (oauth.ts); an
// answer is judged as Google's errors are (google-errors.ts), a 401 forgetting the token.

import type { DeliveryContext } from './driver.js';
import { judgeGoogle } from './google-errors.js';
import type { Destination } from './schema.js';

type Google = Extract<Destination, { type: 'google_customer_match' }>;

/** Bearer headers with the cached access token; a 401 forgets it, and the retried attempt fetches another. */
export async function googleAuthorization(destination: Google, context: DeliveryContext) {
  const token = await context.tokens.get(context.config.googleOauthTokenUrl, destination.oauth, context.send);
  return { headers: { authorization: `Bearer ${token}` }, judge: judgeGoogle(() => context.tokens.forget(token)) };
}

