// Destination configurations (decisions §9). Credentials (the webhook's signing secret, Meta's
// access token, Google's OAuth client and developer token) are write-only: stored, never shown. An
// edit may leave them out and name the saved destination by `id`: its credentials are kept.

import { z } from 'zod';

const secret = z.string().min(1).max(4096);
const digits = (what: string) => z.string().trim().regex(/^\d{1,32}$/, `${what}: digits only`);
/** Google shows account ids as 123-456-7890; the APIs take the digits. */
const googleAccount = (what: string) => z.string().transform((v) => v.replaceAll('-', '').trim()).pipe(digits(what));
const consentStatus = z.enum(['GRANTED', 'DENIED']);
/** Ad platforms hold a member unless its `$consent.ads` is false; with this, only when it is true (decisions §12). */
const requireConsent = z.boolean().optional()
  .describe('send only members whose $consent.ads trait is true (default: all but those whose $consent.ads is false)');

export const GOOGLE_APIS = ['data_manager', 'google_ads'] as const;

const webhook = z.object({
  type: z.literal('webhook'),
  url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }).max(2048, 'at most 2048 characters'),
  secret: secret.describe('HMAC-SHA256 signing key of X-Signature'),
});

const meta = z.object({
  type: z.literal('meta_custom_audience'),
  audience_id: digits('the custom audience id').describe('the custom audience id on Meta (digits)'),
  access_token: secret.describe('a system user access token with ads_management'),
  require_consent: requireConsent,
});

const google = z.object({
  type: z.literal('google_customer_match'),
  customer_id: googleAccount('the Google Ads customer id').describe('the Google Ads account of the list (hyphens allowed)'),
  user_list_id: digits('the user list id').describe('the Customer Match user list id'),
  login_customer_id: googleAccount('the manager account id').optional().describe('the manager account the OAuth user signs in with, when not the customer itself'),
  oauth: z.object({ client_id: z.string().min(1).max(512), client_secret: secret, refresh_token: secret })
    .describe('an OAuth client and a refresh token with the datamanager (or, with api google_ads, adwords) scope'),
  developer_token: secret.optional().describe('the Google Ads API developer token (api google_ads only)'),
  consent: z.object({ ad_user_data: consentStatus, ad_personalization: consentStatus })
    .describe('the EEA consent (Digital Markets Act) of members without a $consent.ads trait: Google drops members without granted consent'),
  require_consent: requireConsent,
  api: z.enum(GOOGLE_APIS).default('data_manager').describe('data_manager (default) or google_ads (accounts Google allowlists for Customer Match)'),
});

/** A destination complete with its credentials, as stored. */
export const storedDestination = z.discriminatedUnion('type', [webhook, meta, google]);
export type Destination = z.infer<typeof storedDestination> & { id: string };
export type DestinationType = Destination['type'];
/** The destinations that match members by their email and honour their ads consent. */
export type AdPlatform = Extract<Destination, { type: 'meta_custom_audience' | 'google_customer_match' }>;
export const isAdPlatform = (d: Destination): d is AdPlatform => d.type !== 'webhook';

/** The credentials of each type: write-only. */
export const CREDENTIALS = {
  webhook: ['secret'],
  meta_custom_audience: ['access_token'],
  google_customer_match: ['oauth', 'developer_token'],
} as const satisfies { [T in DestinationType]: readonly (keyof Extract<Destination, { type: T }>)[] };

const savedId = z.string().min(1).max(128).optional().describe('the id of a saved destination: credentials left out are kept from it');

export const destinationInput = z.discriminatedUnion('type', [
  webhook.partial({ secret: true }).extend({ id: savedId }),
  meta.partial({ access_token: true }).extend({ id: savedId }),
  google.partial({ oauth: true }).extend({ id: savedId }),
]);
export type DestinationInput = z.infer<typeof destinationInput>;

/** A destination as the API shows it: no credentials. */
export function publicDestination(d: Destination): PublicDestination {
  const hidden = new Set<string>(CREDENTIALS[d.type]);
  return { ...Object.fromEntries(Object.entries(d).filter(([key]) => !hidden.has(key))), id: d.id, type: d.type };
}

export const publicDestinationSchema = z.object({ id: z.string(), type: z.string() }).catchall(z.unknown());
export type PublicDestination = z.infer<typeof publicDestinationSchema>;
