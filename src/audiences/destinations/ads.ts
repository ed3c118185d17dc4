// Ad platforms (decisions §9): members matched by SHA-256 of the normalized email; members without
// an email are skipped. Meta custom audiences take POST (add) and DELETE (remove) on
// `{base}/{audience_id}/users`; Google Customer Match takes an offline user data job per page.

import { createHash } from 'node:crypto';
import type { DiffMember } from '../../store/analytics.js';
import type { Destination } from './schema.js';
import type { Driver, HttpRequest } from './driver.js';

type Meta = Extract<Destination, { type: 'meta_custom_audience' }>;
type Google = Extract<Destination, { type: 'google_customer_match' }>;

export const hashEmail = (email: string) => createHash('sha256').update(email.trim().toLowerCase()).digest('hex');

function hashed(members: DiffMember[], change: DiffMember['change']): string[] {
  return members.flatMap((m) => (m.change === change && m.email ? [hashEmail(m.email)] : []));
}

/** Meta's and Google's limit of rows (operations) per request. */
const PLATFORM_PAGE_SIZE = 10_000;

const skippedOf = (members: DiffMember[]) => members.filter((m) => !m.email).length;

const json = (label: string, method: HttpRequest['method'], url: string, headers: Record<string, string>, body: unknown): HttpRequest =>
  ({ label, method, url, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

export const metaDriver: Driver<Meta> = {
  pageSize: () => PLATFORM_PAGE_SIZE,
  async deliverPage(destination, page, send, config) {
    const url = `${config.metaBaseUrl}/${encodeURIComponent(destination.audience_id)}/users`;
    const auth = { authorization: `Bearer ${destination.access_token}` };
    for (const [change, method] of [['added', 'POST'], ['removed', 'DELETE']] as const) {
      const data = hashed(page.members, change).map((hash) => [hash]);
      if (data.length === 0) continue;
      await send(() => json(`${method} /users`, method, url, auth, { payload: { schema: 'EMAIL_SHA256', data } }));
    }
    return { skipped: skippedOf(page.members) };
  },
};

export const googleDriver: Driver<Google> = {
  pageSize: () => PLATFORM_PAGE_SIZE,
  async deliverPage(destination, page, send, config) {
    const operations = [
      ...hashed(page.members, 'added').map((hashedEmail) => ({ create: { userIdentifiers: [{ hashedEmail }] } })),
      ...hashed(page.members, 'removed').map((hashedEmail) => ({ remove: { userIdentifiers: [{ hashedEmail }] } })),
    ];
    if (operations.length > 0) {
      const customer = encodeURIComponent(destination.customer_id);
      const headers: Record<string, string> = { authorization: `Bearer ${destination.access_token}` };
      if (destination.developer_token) headers['developer-token'] = destination.developer_token;
      const created = await send(() => json('create job', 'POST', `${config.googleBaseUrl}/customers/${customer}/offlineUserDataJobs:create`, headers, {
        job: {
          type: 'CUSTOMER_MATCH_USER_LIST',
          customerMatchUserListMetadata: { userList: `customers/${customer}/userLists/${encodeURIComponent(destination.user_list_id)}` },
        },
      }));
      const job = (JSON.parse(created.body) as { resourceName?: unknown } | null)?.resourceName;
      if (typeof job !== 'string' || !job.startsWith('customers/')) throw new Error('the job creation answer has no resourceName');
      await send(() => json('add operations', 'POST', `${config.googleBaseUrl}/${job}:addOperations`, headers, { operations }));
      await send(() => json('run job', 'POST', `${config.googleBaseUrl}/${job}:run`, headers, {}));
    }
    return { skipped: skippedOf(page.members) };
  },
};
