// A double of the Google Ads API's Customer Match upload, from googleapis
// google/ads/googleads/v25 (services/offline_user_data_job_service.proto, resources/offline_user_data_job.proto,
// enums/offline_user_data_job_status.proto, errors/offline_user_data_job_error.proto at commit
// eecf37ae63995d1860eba342cd2922a70ec679f8) and google-ads-python's add_customer_match_user_list
// example (job status read with GoogleAdsService.Search). The job lifecycle: created PENDING, given
// operations, run (RUNNING), read until SUCCESS (its operations applied to the list) or FAILED.
// Errors are google.rpc.Status with a GoogleAdsFailure. It refuses a sunset version, a token
// without the adwords scope, a missing developer token, a customer not allowlisted
// (CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE), an unknown list, creates and removes in one job
// (CONFLICTING_OPERATION), operations after the job started (JOB_ALREADY_STARTED) and more than
// 100 000 identifiers a request (TOO_MANY_USER_IDENTIFIERS); malformed hashes are partial failures.

import { type GoogleOAuthDouble, googleStatus, unauthorized } from './google-oauth.js';
import { SHA256_HEX, type Answer, parsed, type Received } from './server.js';

const SCOPE = 'https://www.googleapis.com/auth/adwords';
/** Versions not sunset on 2026-11-28 (v21 was sunset on 2026-08-05). */
export const GOOGLE_ADS_AVAILABLE_VERSIONS = ['v22', 'v23', 'v24', 'v25'];
const MAX_IDENTIFIERS = 100_000;

const failure = (code: number, status: string, errorCode: Record<string, string>, message: string): Answer => googleStatus(code, status,
  'Request contains an invalid argument.', [{
    '@type': 'type.googleapis.com/google.ads.googleads.v25.errors.GoogleAdsFailure', errors: [{ errorCode, message }], requestId: 'double',
  }]);
const jobError = (code: string, message: string) => failure(400, 'INVALID_ARGUMENT', { offlineUserDataJobError: code }, message);

type UserData = { userIdentifiers?: { hashedEmail?: string }[]; consent?: unknown };
type Operation = { create?: UserData; remove?: UserData; removeAll?: boolean };

interface Job {
  customer: string;
  list: string;
  status: 'PENDING' | 'RUNNING' | 'SUCCESS' | 'FAILED';
  consent: unknown;
  /** The consent of each identifier's UserData (undefined: the job's applies). */
  memberConsents: unknown[];
  kind: 'create' | 'remove' | null;
  hashes: string[];
  /** Status reads left before a running job ends. */
  readsLeft: number;
  failureReason?: string;
}

export class GoogleAdsDouble {
  /** `customer/list` → hashed emails on the list. */
  readonly lists = new Map<string, Set<string>>();
  readonly jobs: Job[] = [];
  readonly requests: { path: string; status: number; headers: Received['headers'] }[] = [];
  /** Status reads a running job takes before it ends. */
  readsToFinish = 2;
  /** The next job run fails with this reason. */
  failNextJob: string | null = null;
  /** Answers this many next requests 429 RESOURCE_EXHAUSTED. */
  throttle = 0;

  constructor(private readonly oauth: GoogleOAuthDouble, private readonly developerToken: string, lists: { customer: string; listId: string }[]) {
    for (const { customer, listId } of lists) this.lists.set(`${customer}/${listId}`, new Set());
  }

  handle = (request: Received): Answer => {
    const answer = this.answer(request);
    this.requests.push({ path: request.path, status: answer.status, headers: request.headers });
    return answer;
  };

  private answer(request: Received): Answer {
    const match = /^\/(v\d+)\/customers\/([^/]+)\/(offlineUserDataJobs:create|offlineUserDataJobs\/(\d+):(addOperations|run)|googleAds:search)$/.exec(request.path);
    if (!match || request.method !== 'POST') return googleStatus(404, 'NOT_FOUND', 'Method not found.');
    const [, version, customer, , jobId, verb] = match as unknown as [string, string, string, string, string | undefined, string | undefined];
    if (!GOOGLE_ADS_AVAILABLE_VERSIONS.includes(version)) return googleStatus(404, 'NOT_FOUND', `Version ${version} is sunset.`);
    const refused = unauthorized(this.oauth, request.headers.authorization, SCOPE);
    if (refused) return refused;
    if (request.headers['developer-token'] !== this.developerToken) return failure(401, 'UNAUTHENTICATED', { authenticationError: 'DEVELOPER_TOKEN_INVALID' }, 'The developer token is not valid.');
    if (!/^\d+$/.test(customer)) return failure(400, 'INVALID_ARGUMENT', { requestError: 'INVALID_CUSTOMER_ID' }, 'Invalid customer ID.');
    if (this.throttle > 0) {
      this.throttle--;
      return failure(429, 'RESOURCE_EXHAUSTED', { quotaError: 'RESOURCE_EXHAUSTED' }, 'Too many requests.');
    }
    const body = parsed(request.body) as Record<string, unknown> | undefined;
    if (!body) return googleStatus(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
    if (verb === undefined && request.path.endsWith(':create')) return this.create(customer, body);
    if (verb === undefined) return this.search(customer, body);
    const job = this.jobs[Number(jobId)];
    if (!job || job.customer !== customer) return failure(404, 'NOT_FOUND', { mutateError: 'RESOURCE_NOT_FOUND' }, 'The job does not exist.');
    return verb === 'run' ? this.run(job, customer, Number(jobId)) : this.addOperations(job, body);
  }

  private create(customer: string, body: { job?: { type?: string; customerMatchUserListMetadata?: { userList?: string; consent?: unknown } } }): Answer {
    const lists = [...this.lists.keys()].filter((key) => key.startsWith(`${customer}/`));
    if (lists.length === 0) return failure(403, 'PERMISSION_DENIED', { notAllowlistedError: 'CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE' }, 'Customer is not allowlisted for accessing this feature.');
    if (body.job?.type !== 'CUSTOMER_MATCH_USER_LIST') return jobError('INVALID_USER_LIST_TYPE', 'Type of the user list is not applicable for the job.');
    const list = /^customers\/(\d+)\/userLists\/(\d+)$/.exec(body.job.customerMatchUserListMetadata?.userList ?? '');
    if (!list || list[1] !== customer || !this.lists.has(`${customer}/${list[2]}`)) return jobError('INVALID_USER_LIST_ID', 'The user list ID provided for the job is invalid.');
    const id = this.jobs.push({ customer, list: `${customer}/${list[2]}`, status: 'PENDING', consent: body.job.customerMatchUserListMetadata?.consent, memberConsents: [], kind: null, hashes: [], readsLeft: 0 }) - 1;
    return { status: 200, body: { resourceName: `customers/${customer}/offlineUserDataJobs/${id}` } };
  }

  private addOperations(job: Job, body: { operations?: Operation[]; enablePartialFailure?: boolean }): Answer {
    if (job.status !== 'PENDING') return jobError('JOB_ALREADY_STARTED', 'Once the upload job is started, new operations cannot be added.');
    const operations = body.operations ?? [];
    if (operations.length === 0) return googleStatus(400, 'INVALID_ARGUMENT', 'operations is required');
    const identifiers = operations.reduce((n, op) => n + ((op.create ?? op.remove)?.userIdentifiers?.length ?? 0), 0);
    if (identifiers > MAX_IDENTIFIERS) return jobError('TOO_MANY_USER_IDENTIFIERS', 'Maximum number of user identifiers allowed per request is 100,000 and per operation is 20.');
    const kinds = new Set(operations.map((op) => (op.create ? 'create' : op.remove ? 'remove' : 'removeAll')));
    if (job.kind) kinds.add(job.kind);
    if (kinds.has('create') && kinds.has('remove')) return jobError('CONFLICTING_OPERATION', 'Mixing creation and removal of offline data in the same job is not allowed.');
    const errors: { errorCode: Record<string, string>; message: string; location: unknown }[] = [];
    operations.forEach((op, index) => {
      for (const { hashedEmail } of (op.create ?? op.remove)?.userIdentifiers ?? []) {
        if (hashedEmail && SHA256_HEX.test(hashedEmail)) {
          job.hashes.push(hashedEmail);
          job.memberConsents.push((op.create ?? op.remove)?.consent);
        }
        else errors.push({ errorCode: { offlineUserDataJobError: 'INVALID_SHA256_FORMAT' }, message: 'The SHA256 encoded value is malformed.', location: { fieldPathElements: [{ fieldName: 'operations', index }] } });
      }
    });
    if (errors.length > 0 && !body.enablePartialFailure) return jobError('INVALID_SHA256_FORMAT', 'The SHA256 encoded value is malformed.');
    job.kind = kinds.has('remove') ? 'remove' : 'create';
    return {
      status: 200,
      body: errors.length === 0 ? {} : {
        partialFailureError: { code: 3, message: `Multiple errors in '${errors.length}' operations.`, details: [{ '@type': 'type.googleapis.com/google.ads.googleads.v25.errors.GoogleAdsFailure', errors }] },
      },
    };
  }

  private run(job: Job, customer: string, id: number): Answer {
    if (job.status !== 'PENDING') return jobError('JOB_ALREADY_STARTED', 'Once the upload job is started, new operations cannot be added.');
    job.status = 'RUNNING';
    job.readsLeft = this.readsToFinish;
    return { status: 200, body: { name: `customers/${customer}/operations/${id}` } };
  }

  /** GoogleAdsService.Search on offline_user_data_job by resource name; a running job ends after its reads. */
  private search(customer: string, body: { query?: string }): Answer {
    const name = /FROM\s+offline_user_data_job\s+WHERE\s+offline_user_data_job\.resource_name\s*=\s*'customers\/(\d+)\/offlineUserDataJobs\/(\d+)'/.exec(body.query ?? '');
    if (!name) return failure(400, 'INVALID_ARGUMENT', { queryError: 'UNEXPECTED_INPUT' }, 'The query is not understood by this double.');
    const job = name[1] === customer ? this.jobs[Number(name[2])] : undefined;
    if (!job) return { status: 200, body: { results: [] } };
    if (job.status === 'RUNNING' && --job.readsLeft <= 0) this.finish(job);
    const resourceName = `customers/${customer}/offlineUserDataJobs/${name[2]}`;
    const failureReason = job.failureReason ? { failureReason: job.failureReason } : {};
    return { status: 200, body: { results: [{ offlineUserDataJob: { resourceName, status: job.status, ...failureReason } }] } };
  }

  private finish(job: Job): void {
    if (this.failNextJob) {
      job.status = 'FAILED';
      job.failureReason = this.failNextJob;
      this.failNextJob = null;
      return;
    }
    const list = this.lists.get(job.list)!;
    for (const hash of job.hashes) (job.kind === 'remove' ? list.delete(hash) : list.add(hash));
    job.status = 'SUCCESS';
  }
}
