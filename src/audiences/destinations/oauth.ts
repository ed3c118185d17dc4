// Google access tokens from a refresh token (OAuth 2.0, RFC 6749 §6): fetched with the delivery's
// own client (address policy, retries, attempts logged), cached per client and refresh token until
// shortly before they expire, and forgotten after a 401 so that the next attempt fetches another.

import { createHash } from 'node:crypto';
import { jsonOf, type Send, type Verdict } from './driver.js';

export interface OAuthClient {
  client_id: string;
  client_secret: string;
  refresh_token: string;
}

/** A token is not used in its last minute: a request may take that long to reach the platform. */
const EXPIRY_MARGIN_MS = 60_000;

interface Cached { token: string; expiresAt: number }

/** RFC 6749 §5.2: `{ error, error_description }`. */
function judgeToken(response: { status: number; body: string }): Verdict {
  const answer = jsonOf(response.body) as { access_token?: unknown; error?: unknown; error_description?: unknown } | null;
  if (response.status >= 200 && response.status < 300) {
    return typeof answer?.access_token === 'string' ? { ok: true } : { ok: false, error: 'the token answer has no access_token', retryable: false };
  }
  const reason = typeof answer?.error === 'string' ? `: ${answer.error}${typeof answer.error_description === 'string' ? ` (${answer.error_description})` : ''}` : '';
  return { ok: false, error: `HTTP ${response.status}${reason}`, retryable: response.status === 429 || response.status >= 500 };
}

export class AccessTokens {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly clock: () => Date) {}

  private static key(url: string, client: OAuthClient): string {
    return createHash('sha256').update(JSON.stringify([url, client.client_id, client.client_secret, client.refresh_token])).digest('hex');
  }

  /** A valid access token for `client`: the cached one, or a new one from `url`. */
  async get(url: string, client: OAuthClient, send: Send): Promise<string> {
    const key = AccessTokens.key(url, client);
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt - EXPIRY_MARGIN_MS > this.clock().getTime()) return cached.token;
    const form = new URLSearchParams({ grant_type: 'refresh_token', ...client }).toString();
    const response = await send(() => ({
      label: 'POST oauth token', method: 'POST', url, body: form, judge: judgeToken,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }));
    const answer = JSON.parse(response.body) as { access_token: string; expires_in?: unknown };
    const seconds = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 3600;
    this.cache.set(key, { token: answer.access_token, expiresAt: this.clock().getTime() + seconds * 1000 });
    return answer.access_token;
  }

  /** The platform refused `token` (401): the next get() fetches another. */
  forget(token: string): void {
    for (const [key, cached] of this.cache) if (cached.token === token) this.cache.delete(key);
  }
}
