// A double of Meta's Marketing API custom audience users edge, from facebook-business-sdk-codegen
// api_specs/specs/CustomAudience.json (commit 1338eb3e44e8162958ad288e4b604547ba9dc915: POST and
// DELETE `users` with params payload, session, namespace), Meta's Marketing API version table and
// error reference. It keeps each audience's members and answers like the platform:
// `{ audience_id, session_id, num_received, num_invalid_entries, invalid_entry_samples }`, or a 4xx
// `{ error: { message, type, code, error_subcode, fbtrace_id } }`. It refuses a retired version,
// an id that is not a number, a bad token, an empty body (a DELETE sent without Content-Length), a
// payload that is not EMAIL_SHA256 rows, more than 10 000 rows, and a session out of sequence.

import { SHA256_HEX, type Answer, parsed, type Received } from './server.js';

/** Versions the version table lists as available (checked 2026-11-28: v25.0 until 2027-02-23, v26.0, v27.0). */
export const META_AVAILABLE_VERSIONS = ['v25.0', 'v26.0', 'v27.0'];
const MAX_ROWS = 10_000;

const metaError = (status: number, code: number, message: string, type = 'OAuthException', subcode?: number): Answer =>
  ({ status, body: { error: { message, type, code, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: 'AbCdEf' } } });

interface Session { session_id: number; batch_seq: number; last_batch_flag: boolean; estimated_num_total: number }

export class MetaDouble {
  readonly audiences = new Map<string, Set<string>>();
  /** Every request that reached it, accepted or not. */
  readonly requests: { method: string; rows: number; session: Session | null; status: number }[] = [];
  /** Sessions seen: their last batch_seq, and whether the last batch came. */
  readonly sessions = new Map<number, { seq: number; ended: boolean }>();
  /** Answers this many next requests with a rate-limit error (code 80003, the custom audience limit). */
  throttle = 0;

  constructor(private readonly token: string, audienceIds: string[]) {
    for (const id of audienceIds) this.audiences.set(id, new Set());
  }

  handle = (request: Received): Answer => {
    const answer = this.answer(request);
    const body = parsed(request.body) as { payload?: { data?: unknown[] }; session?: Session } | undefined;
    this.requests.push({ method: request.method, rows: body?.payload?.data?.length ?? 0, session: body?.session ?? null, status: answer.status });
    return answer;
  };

  private answer(request: Received): Answer {
    const match = /^\/(v\d+\.\d+)\/([^/?]+)\/users$/.exec(request.path);
    if (!match) return metaError(400, 2500, 'Unknown path components', 'OAuthException');
    const [, version, id] = match as unknown as [string, string, string];
    if (!META_AVAILABLE_VERSIONS.includes(version)) return metaError(400, 2635, `You are calling a deprecated version of the Ads API. Please update to the latest version: ${META_AVAILABLE_VERSIONS.at(-1)}.`);
    if (request.headers.authorization !== `Bearer ${this.token}`) return metaError(400, 190, 'Invalid OAuth access token - Cannot parse access token');
    const members = /^\d+$/.test(id) ? this.audiences.get(id) : undefined;
    if (!members) {
      return metaError(400, 100, `Unsupported ${request.method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`, 'GraphMethodException', 33);
    }
    if (request.method !== 'POST' && request.method !== 'DELETE') return metaError(400, 100, 'Unsupported request method', 'GraphMethodException');
    if (this.throttle > 0) {
      this.throttle--;
      return metaError(400, 80003, 'There have been too many calls to this ad-account. Wait a bit and try again.', 'OAuthException', 2446079);
    }
    const body = parsed(request.body) as { payload?: { schema?: unknown; data?: unknown }; session?: Session } | undefined;
    if (!body?.payload) return metaError(400, 100, '(#100) The parameter payload is required');
    const { schema, data } = body.payload;
    if (schema !== 'EMAIL_SHA256' || !Array.isArray(data)) return metaError(400, 100, '(#100) Invalid schema or data: a single EMAIL_SHA256 schema takes a list of hashes');
    if (data.length === 0) return metaError(400, 100, '(#100) The data field is empty');
    if (data.length > MAX_ROWS) return metaError(400, 100, `(#100) Too many rows: at most ${MAX_ROWS} a request`);
    const refused = this.session(body.session);
    if (refused) return refused;
    const valid = data.filter((row): row is string => typeof row === 'string' && SHA256_HEX.test(row));
    for (const hash of valid) (request.method === 'POST' ? members.add(hash) : members.delete(hash));
    return {
      status: 200,
      body: { audience_id: id, session_id: body.session?.session_id ?? 0, num_received: data.length, num_invalid_entries: data.length - valid.length, invalid_entry_samples: {} },
    };
  }

  /** A session's batches come in order from 1; none after the last. */
  private session(session: Session | undefined): Answer | null {
    if (!session) return null;
    const { session_id, batch_seq, last_batch_flag, estimated_num_total } = session;
    if (!Number.isSafeInteger(session_id) || !Number.isSafeInteger(batch_seq) || typeof last_batch_flag !== 'boolean' || !Number.isSafeInteger(estimated_num_total)) {
      return metaError(400, 100, '(#100) session needs session_id, batch_seq, last_batch_flag and estimated_num_total');
    }
    const seen = this.sessions.get(session_id) ?? { seq: 0, ended: false };
    // A batch sent again (a retry) is taken again; a skipped one or one after the last is not.
    if (batch_seq < 1 || batch_seq > seen.seq + 1 || (seen.ended && batch_seq > seen.seq)) return metaError(400, 100, `(#100) Invalid batch_seq ${batch_seq} for session ${session_id}`);
    this.sessions.set(session_id, { seq: Math.max(seen.seq, batch_seq), ended: seen.ended || last_batch_flag });
    return null;
  }
}
