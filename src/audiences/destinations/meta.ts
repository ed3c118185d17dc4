// Meta Marketing API, custom audience users (facebook-business-sdk-codegen api_specs CustomAudience.json:
// `POST /{id}/users` and `DELETE /{id}/users`, params payload, session, namespace).
// `{META_BASE_URL}/{META_API_VERSION}/{audience_id}/users`, payload `{ schema: "EMAIL_SHA256", data }`,
// at most 10 000 rows a request. A delivery that takes several requests of one kind sends them as one
// session (`session_id`, `batch_seq` from 1, `last_batch_flag`, `estimated_num_total`). Throttling
// arrives as a 4xx whose body carries one of Meta's rate-limit codes: retried like a 429.

import { createHash } from 'node:crypto';
import type { DiffMember } from '../../store/analytics.js';
import { type DeliveryContext, type DeliveryPosition, type Driver, type HttpResponse, jsonOf, jsonRequest, type Verdict } from './driver.js';
import { hashedEmails, metaEmail, withoutEmail } from './emails.js';
import type { Destination } from './schema.js';

type Meta = Extract<Destination, { type: 'meta_custom_audience' }>;

/** Meta's limit of rows per request. */
export const META_ROWS_PER_REQUEST = 10_000;

/**
 * Rate limiting (Marketing API error reference and rate-limiting guide): 4 application, 17 user,
 * 32 page, 613 calls per hour, 80003 custom audience (business use case), 80004 ads management.
 */
export const META_THROTTLING_CODES = new Set([4, 17, 32, 613, 80003, 80004]);

interface MetaError { message?: string; type?: string; code?: number; error_subcode?: number; is_transient?: boolean; fbtrace_id?: string }

export function judgeMeta(response: HttpResponse): Verdict {
  const answer = jsonOf(response.body) as { error?: MetaError; num_received?: number; num_invalid_entries?: number } | null;
  if (response.status >= 200 && response.status < 300) {
    const invalid = answer?.num_invalid_entries ?? 0;
    return invalid > 0 ? { ok: true, note: `Meta refused ${invalid} of ${answer?.num_received ?? '?'} rows (num_invalid_entries)` } : { ok: true };
  }
  const e = answer?.error;
  const code = e?.code;
  const error = `HTTP ${response.status}${e ? `: ${e.message ?? ''} (code ${code ?? '?'}${e.error_subcode ? `, subcode ${e.error_subcode}` : ''})` : ''}`;
  const throttled = code !== undefined && META_THROTTLING_CODES.has(code);
  return { ok: false, error, retryable: throttled || e?.is_transient === true || response.status === 429 || response.status >= 500 };
}

export interface MetaSession { session_id: number; batch_seq: number; last_batch_flag: boolean; estimated_num_total: number }

/**
 * The session of this page's request of one change, or null when the delivery sends that change in
 * one request. Derived from the delivery (same on a resumed delivery): its work list holds the adds
 * first, so the adds span pages 0…, the removes start on page ⌊added / pageSize⌋. Pages filtered by
 * splits send no session: a later page may hold none of the destination's members, so no request
 * could be known to be the last, and a session never closed is worse than none (it is optional).
 */
export function metaSession(position: DeliveryPosition, page: number, change: DiffMember['change']): MetaSession | null {
  const { pageSize, added, removed } = position;
  if (position.filtered) return null;
  const [first, total, end] = change === 'added' ? [0, added, added] : [Math.floor(added / pageSize), removed, added + removed];
  const lastPage = Math.ceil(end / pageSize) - 1;
  if (lastPage === first) return null;
  const id = createHash('sha256').update(`${position.workspaceId}:${position.deliveryId}:${change}`).digest().readUIntBE(0, 6);
  return { session_id: id, batch_seq: page - first + 1, last_batch_flag: page === lastPage, estimated_num_total: total };
}

/** Sends hashed emails to the audience: `added` with POST, `removed` with DELETE. */
export async function sendToMeta(
  destination: Meta, change: DiffMember['change'], hashes: string[], context: DeliveryContext, session: MetaSession | null = null,
): Promise<void> {
  const { metaBaseUrl, metaApiVersion } = context.config;
  const url = `${metaBaseUrl}/${encodeURIComponent(metaApiVersion)}/${encodeURIComponent(destination.audience_id)}/users`;
  const method = change === 'added' ? 'POST' : 'DELETE';
  for (let from = 0; from < hashes.length; from += META_ROWS_PER_REQUEST) {
    const body = { payload: { schema: 'EMAIL_SHA256', data: hashes.slice(from, from + META_ROWS_PER_REQUEST) }, ...(session ? { session } : {}) };
    await context.send(() => jsonRequest(`${method} /users`, method, url, { authorization: `Bearer ${destination.access_token}` }, body, judgeMeta));
  }
}

/** Removes members by email (e.g. a person deleted for privacy): Meta's normalization, then DELETE. */
export const removeFromMeta = (destination: Meta, emails: string[], context: DeliveryContext) =>
  sendToMeta(destination, 'removed', hashedEmails(emails.map((email) => ({ email, change: 'removed' }) as DiffMember), 'removed', metaEmail), context);

export const metaDriver: Driver<Meta> = {
  pageSize: () => META_ROWS_PER_REQUEST,
  async deliverPage(destination, page, context) {
    for (const change of ['added', 'removed'] as const) {
      const hashes = hashedEmails(page.members, change, metaEmail);
      if (hashes.length > 0) await sendToMeta(destination, change, hashes, context, metaSession(page.delivery, page.page, change));
    }
    return { skipped: withoutEmail(page.members) };
  },
};
