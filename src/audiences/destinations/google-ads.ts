// The Google Ads API, for accounts Google still allowlists for Customer Match (googleapis
// google/ads/googleads/v25/services/offline_user_data_job_service.proto; google-ads-python's
// add_customer_match_user_list example). Per change: one offline user data job, created with the
// list and the destination's consent, given its operations (a member with its own `$consent.ads`
// carries it in its UserData, which overrides the job's: offline_user_data.proto UserData.consent) (at most 10 000 a request, partial failure on), run,
// and its status read through GoogleAdsService.Search until it ends. Adds and removes never share a
// job: Google refuses that (OfflineUserDataJobError CONFLICTING_OPERATION).

import type { DiffMember } from '../../store/analytics.js';
import { type DeliveryContext, type HttpRequest, jsonOf } from './driver.js';
import { googleAuthorization } from './google-auth.js';
import { partialFailure } from './google-errors.js';
import type { HashedMember } from './emails.js';
import type { Destination } from './schema.js';

type Google = Extract<Destination, { type: 'google_customer_match' }>;

/** Operations per AddOfflineUserDataJobOperations request. */
export const GOOGLE_ADS_OPERATIONS_PER_REQUEST = 10_000;
/** Rows per page of a google_ads delivery: one job per change and page, so usually one per change and delivery. */
export const GOOGLE_ADS_PAGE_SIZE = 100_000;

interface JobRow { offlineUserDataJob?: { resourceName?: string; status?: string; failureReason?: string } }

async function request(destination: Google, context: DeliveryContext, label: string, path: string, body: unknown): Promise<unknown> {
  const { googleAdsBaseUrl, googleAdsApiVersion } = context.config;
  const url = `${googleAdsBaseUrl}/${encodeURIComponent(googleAdsApiVersion)}/${path}`;
  const response = await context.send(async (): Promise<HttpRequest> => {
    const { headers, judge } = await googleAuthorization(destination, context);
    return {
      label, method: 'POST', url, body: JSON.stringify(body), judge: (answer) => {
        const verdict = judge(answer);
        const note = verdict.ok ? partialFailure(answer.body) : null;
        return note ? { ok: true, note } : verdict;
      },
      headers: {
        'content-type': 'application/json', ...headers, 'developer-token': destination.developer_token ?? '',
        ...(destination.login_customer_id ? { 'login-customer-id': destination.login_customer_id } : {}),
      },
    };
  });
  return jsonOf(response.body);
}

/** The job's status, read until SUCCESS or FAILED; a failed job throws with Google's reason. */
async function awaitJob(destination: Google, context: DeliveryContext, job: string): Promise<void> {
  const { googleJobPollMs, googleJobPollMaxMs, googleJobWaitMs } = context.config;
  // The resource name came from Google and is checked to be customers/<digits>/offlineUserDataJobs/<digits>.
  const query = `SELECT offline_user_data_job.resource_name, offline_user_data_job.status, offline_user_data_job.failure_reason
    FROM offline_user_data_job WHERE offline_user_data_job.resource_name = '${job}'`;
  let waited = 0;
  for (let pause = googleJobPollMs; ; pause = Math.min(pause * 2, googleJobPollMaxMs)) {
    await context.wait(pause);
    waited += pause;
    const answer = await request(destination, context, 'search job status', `customers/${destination.customer_id}/googleAds:search`, { query }) as { results?: JobRow[] } | null;
    const found = answer?.results?.[0]?.offlineUserDataJob;
    if (found?.status === 'FAILED') throw new Error(`the offline user data job ${job} failed: ${found.failureReason ?? 'no failure reason given'}`);
    if (found?.status === 'SUCCESS') return;
    if (waited >= googleJobWaitMs) throw new Error(`the offline user data job ${job} is still ${found?.status ?? 'unknown'} after ${waited} ms`);
  }
}

/** Sends hashed emails to the list as one job of one kind: `added` as create operations, `removed` as remove operations. */
export async function sendToGoogleAds(destination: Google, change: DiffMember['change'], members: HashedMember[], context: DeliveryContext): Promise<void> {
  if (!destination.developer_token) throw new Error('the Google Ads API needs a developer token: save the destination with developer_token');
  const customer = destination.customer_id;
  const created = await request(destination, context, 'create job', `customers/${customer}/offlineUserDataJobs:create`, {
    job: {
      type: 'CUSTOMER_MATCH_USER_LIST',
      customerMatchUserListMetadata: { userList: `customers/${customer}/userLists/${destination.user_list_id}`, consent: {
        adUserData: destination.consent.ad_user_data, adPersonalization: destination.consent.ad_personalization,
      } },
    },
  }) as { resourceName?: unknown } | null;
  const job = created?.resourceName;
  if (typeof job !== 'string' || !new RegExp(`^customers/${customer}/offlineUserDataJobs/\\d+$`).test(job)) {
    throw new Error('the job creation answer has no resourceName of this customer');
  }
  const operation = change === 'added' ? 'create' : 'remove';
  for (let from = 0; from < members.length; from += GOOGLE_ADS_OPERATIONS_PER_REQUEST) {
    const operations = members.slice(from, from + GOOGLE_ADS_OPERATIONS_PER_REQUEST).map(({ hash, ads }) => ({ [operation]: {
      userIdentifiers: [{ hashedEmail: hash }],
      ...(change === 'added' && ads !== undefined ? { consent: { adUserData: ads ? 'GRANTED' : 'DENIED', adPersonalization: ads ? 'GRANTED' : 'DENIED' } } : {}),
    } }));
    await request(destination, context, `add ${operation} operations`, `${job}:addOperations`, { enablePartialFailure: true, operations });
  }
  await request(destination, context, 'run job', `${job}:run`, {});
  await awaitJob(destination, context, job);
}
