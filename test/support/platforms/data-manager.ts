// A double of Google's Data Manager API audience members (googleapis google/ads/datamanager/v1,
// ingestion_service.proto, audience.proto, destination.proto, consent.proto, error.proto at commit
// 102d9f92ac6ed649a61efd9b208e4d1de278e9bb): `POST /v1/audienceMembers:ingest` and `:remove` with
// destinations, audienceMembers (at most 10 000), consent (ingest) and encoding, answered
// `{ requestId }` or a google.rpc.Status with an ErrorInfo reason. It needs an OAuth token with the
// datamanager scope, refuses a missing encoding, an unknown list, a non-numeric account, more than
// 10 000 members, identifiers that are not SHA-256 hex, and adds a member to the list only when its
// consent grants both ad_user_data and ad_personalization, as Google does for the EEA: the member's
// own (AudienceMember.consent) when given, which overrides the request's (IngestAudienceMembersRequest.consent).

import { randomUUID } from 'node:crypto';
import { type GoogleOAuthDouble, googleStatus, unauthorized } from './google-oauth.js';
import { SHA256_HEX, type Answer, parsed, type Received } from './server.js';

const SCOPE = 'https://www.googleapis.com/auth/datamanager';
const MAX_MEMBERS = 10_000;

const invalid = (reason: string, message: string, field?: string): Answer => googleStatus(400, 'INVALID_ARGUMENT', message, [
  { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'datamanager.googleapis.com' },
  ...(field ? [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description: message }] }] : []),
]);

interface Consent { adUserData?: string; adPersonalization?: string }

const CONSENT_STATUSES = new Set([undefined, 'CONSENT_STATUS_UNSPECIFIED', 'CONSENT_GRANTED', 'CONSENT_DENIED']);
const granted = (c: Consent | undefined) => c?.adUserData === 'CONSENT_GRANTED' && c.adPersonalization === 'CONSENT_GRANTED';

interface Body {
  destinations?: { operatingAccount?: { accountType?: string; accountId?: string }; loginAccount?: { accountId?: string }; productDestinationId?: string }[];
  audienceMembers?: { userData?: { userIdentifiers?: { emailAddress?: unknown }[] }; consent?: Consent }[];
  consent?: Consent;
  encoding?: string;
}

export class DataManagerDouble {
  /** `account/list` → hashed emails on the list. */
  readonly lists = new Map<string, Set<string>>();
  readonly requests: { verb: string; members: number; status: number; body: Body | undefined }[] = [];
  /** Members received without granted consent, not added. */
  dropped = 0;
  /** Answers this many next requests 429 RESOURCE_EXHAUSTED. */
  throttle = 0;

  constructor(private readonly oauth: GoogleOAuthDouble, lists: { accountId: string; listId: string }[]) {
    for (const { accountId, listId } of lists) this.lists.set(`${accountId}/${listId}`, new Set());
  }

  handle = (request: Received): Answer => {
    const verb = /^\/v1\/audienceMembers:(ingest|remove)$/.exec(request.path)?.[1];
    const body = parsed(request.body) as Body | undefined;
    const answer = verb && request.method === 'POST' ? this.answer(verb, request, body) : googleStatus(404, 'NOT_FOUND', 'Method not found.');
    this.requests.push({ verb: verb ?? request.path, members: body?.audienceMembers?.length ?? 0, status: answer.status, body });
    return answer;
  };

  private answer(verb: string, request: Received, body: Body | undefined): Answer {
    const refused = unauthorized(this.oauth, request.headers.authorization, SCOPE);
    if (refused) return refused;
    if (this.throttle > 0) {
      this.throttle--;
      return googleStatus(429, 'RESOURCE_EXHAUSTED', 'Too many requests.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'RESOURCE_EXHAUSTED' }]);
    }
    if (!body) return invalid('INVALID_FORMAT', 'Invalid JSON payload received.');
    const [destination, ...more] = body.destinations ?? [];
    if (!destination || more.length > 0) return invalid('REQUIRED_FIELD_MISSING', 'destinations: one destination is expected here', 'destinations');
    const account = destination.operatingAccount;
    if (account?.accountType !== 'GOOGLE_ADS' || !/^\d+$/.test(account.accountId ?? '')) return invalid('INVALID_DESTINATION', 'operating_account: a Google Ads account id of digits is required', 'destinations[0].operating_account');
    const list = this.lists.get(`${account.accountId}/${destination.productDestinationId}`);
    if (!list) return invalid('INVALID_USER_LIST_ID', 'User list is not valid.', 'destinations[0].product_destination_id');
    const members = body.audienceMembers ?? [];
    if (members.length === 0) return invalid('REQUIRED_FIELD_MISSING', 'audience_members is required', 'audience_members');
    if (members.length > MAX_MEMBERS) return invalid('TOO_MANY_AUDIENCE_MEMBERS', 'Maximum number of audience members allowed per request is 10,000.', 'audience_members');
    if (body.encoding !== 'HEX' && body.encoding !== 'BASE64') return invalid('REQUIRED_FIELD_MISSING', 'encoding is required for UserData uploads', 'encoding');
    const hashes: { hash: string; consent: Consent | undefined }[] = [];
    for (const member of members) {
      if (member.consent && !(CONSENT_STATUSES.has(member.consent.adUserData) && CONSENT_STATUSES.has(member.consent.adPersonalization))) {
        return invalid('INVALID_FORMAT', 'Invalid value at \'audience_members.consent\' (type.googleapis.com/google.ads.datamanager.v1.ConsentStatus)', 'audience_members');
      }
      const identifiers = member.userData?.userIdentifiers ?? [];
      if (identifiers.length === 0 || identifiers.length > 10) return invalid('TOO_MANY_USER_IDENTIFIERS', 'Between 1 and 10 user identifiers per audience member.', 'audience_members');
      for (const { emailAddress } of identifiers) {
        if (typeof emailAddress !== 'string' || !SHA256_HEX.test(emailAddress)) return invalid('INVALID_SHA256_FORMAT', 'The SHA256 encoded value is malformed.', 'audience_members');
        hashes.push({ hash: emailAddress, consent: member.consent ?? body.consent });
      }
    }
    for (const { hash, consent } of hashes) {
      if (verb === 'remove') list.delete(hash);
      else if (granted(consent)) list.add(hash);
      else this.dropped++;
    }
    return { status: 200, body: { requestId: randomUUID() } };
  }
}
