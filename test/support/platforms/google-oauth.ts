// Google's OAuth 2.0 token endpoint (RFC 6749 §6, as https://oauth2.googleapis.com/token answers):
// a form-encoded refresh_token grant for a registered client gives `{ access_token, expires_in,
// scope, token_type }`; an unknown client `invalid_client` (401), a wrong refresh token
// `invalid_grant` (400). The APIs' doubles ask it whether a bearer token is valid: expire() makes
// every token issued so far answer 401, as a token past its 3 600 s does.

import { randomBytes } from 'node:crypto';
import type { Answer, Received } from './server.js';

export interface RegisteredClient { client_id: string; client_secret: string; refresh_token: string; scope: string }

export class GoogleOAuthDouble {
  private readonly issued = new Map<string, { scope: string; expired: boolean }>();
  /** Token exchanges answered. */
  exchanges = 0;
  /** When set, the tokens issued so far serve this many more API requests, then expire (mid-delivery). */
  expireAfter: number | null = null;

  constructor(private readonly clients: RegisteredClient[]) {}

  handle = (request: Received): Answer => {
    if (request.method !== 'POST' || request.path !== '/token') return { status: 404, body: { error: 'not_found' } };
    if (!String(request.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
      return { status: 400, body: { error: 'invalid_request', error_description: 'Bad Request' } };
    }
    const form = new URLSearchParams(request.body);
    if (form.get('grant_type') !== 'refresh_token') return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' } };
    const client = this.clients.find((c) => c.client_id === form.get('client_id') && c.client_secret === form.get('client_secret'));
    if (!client) return { status: 401, body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' } };
    if (client.refresh_token !== form.get('refresh_token')) return { status: 400, body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' } };
    const token = `ya29.${randomBytes(12).toString('base64url')}`;
    this.issued.set(token, { scope: client.scope, expired: false });
    this.exchanges++;
    return { status: 200, body: { access_token: token, expires_in: 3599, scope: client.scope, token_type: 'Bearer' } };
  };

  /** What the APIs make of an Authorization header: a valid token's scope, or why it is refused. */
  check(authorization: string | undefined): { scope: string } | { refused: 'missing' | 'invalid' } {
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    if (!token) return { refused: 'missing' };
    const found = this.issued.get(token);
    if (found && !found.expired && this.expireAfter !== null && this.expireAfter-- <= 0) {
      this.expire();
      this.expireAfter = null;
    }
    return found && !found.expired ? { scope: found.scope } : { refused: 'invalid' };
  }

  /** Every token issued so far expires. */
  expire(): void {
    for (const token of this.issued.values()) token.expired = true;
  }
}

/** google.rpc.Status as Google's JSON APIs answer it (AIP-193). */
export const googleStatus = (code: number, status: string, message: string, details: unknown[] = []): Answer =>
  ({ status: code, body: { error: { code, message, status, details } } });

/** The 401 and 403 every Google API gives for a token refused or lacking the API's scope; null when the token is good. */
export function unauthorized(oauth: GoogleOAuthDouble, authorization: string | undefined, scope: string): Answer | null {
  const checked = oauth.check(authorization);
  if ('refused' in checked) {
    return googleStatus(401, 'UNAUTHENTICATED', checked.refused === 'missing'
      ? 'Request is missing required authentication credential. Expected OAuth 2 access token.'
      : 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
  }
  return checked.scope.split(' ').includes(scope) ? null : googleStatus(403, 'PERMISSION_DENIED', 'Request had insufficient authentication scopes.');
}
