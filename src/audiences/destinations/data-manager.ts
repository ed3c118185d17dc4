// Google's Data Manager API (googleapis google/ads/datamanager/v1 ingestion_service.proto):
// `POST {GOOGLE_DATA_MANAGER_BASE_URL}/v1/audienceMembers:ingest` and `…:remove`, each with the
// destination (the Google Ads account and its Customer Match list), `encoding: HEX` and at most
// 10 000 members; ingest also carries the consent: the destination's for the request, and a
// member's own (its `$consent.ads`) on the member, which overrides the request's (audience.proto
// AudienceMember.consent). The answer is `{ requestId }`.

import type { DiffMember } from '../../store/analytics.js';
import type { DeliveryContext } from './driver.js';
import { googleAuthorization } from './google-auth.js';
import type { HashedMember } from './emails.js';
import type { Destination } from './schema.js';

type Google = Extract<Destination, { type: 'google_customer_match' }>;

/** IngestAudienceMembersRequest.audience_members: "At most 10000". */
export const DATA_MANAGER_MEMBERS_PER_REQUEST = 10_000;

const CONSENT = { GRANTED: 'CONSENT_GRANTED', DENIED: 'CONSENT_DENIED' } as const;

/** A member's own consent: both signals from its ads consent. */
const memberConsent = (ads: boolean) => ({ adUserData: CONSENT[ads ? 'GRANTED' : 'DENIED'], adPersonalization: CONSENT[ads ? 'GRANTED' : 'DENIED'] });

const audienceMember = ({ hash, ads }: HashedMember, change: DiffMember['change']) => ({
  userData: { userIdentifiers: [{ emailAddress: hash }] },
  ...(change === 'added' && ads !== undefined ? { consent: memberConsent(ads) } : {}),
});

const account = (accountId: string) => ({ accountType: 'GOOGLE_ADS', accountId });

/** The Destination message: the list in the operating account, reached through the login account when given. */
export const dataManagerDestination = (d: Google) => ({
  operatingAccount: account(d.customer_id),
  ...(d.login_customer_id ? { loginAccount: account(d.login_customer_id) } : {}),
  productDestinationId: d.user_list_id,
});

/** Sends hashed emails to the list: `added` with `:ingest`, `removed` with `:remove`. */
export async function sendToDataManager(destination: Google, change: DiffMember['change'], members: HashedMember[], context: DeliveryContext): Promise<void> {
  const verb = change === 'added' ? 'ingest' : 'remove';
  const url = `${context.config.googleDataManagerBaseUrl}/v1/audienceMembers:${verb}`;
  for (let from = 0; from < members.length; from += DATA_MANAGER_MEMBERS_PER_REQUEST) {
    const body = {
      destinations: [dataManagerDestination(destination)],
      audienceMembers: members.slice(from, from + DATA_MANAGER_MEMBERS_PER_REQUEST).map((m) => audienceMember(m, change)),
      ...(change === 'added' ? { consent: { adUserData: CONSENT[destination.consent.ad_user_data], adPersonalization: CONSENT[destination.consent.ad_personalization] } } : {}),
      encoding: 'HEX',
    };
    await context.send(async () => {
      const { headers, judge } = await googleAuthorization(destination, context);
      return { label: `POST audienceMembers:${verb}`, method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), judge };
    });
  }
}
