// Every error the service answers with, declared once: a stable code, its HTTP status and a default
// message. Callers throw `new AppError(code, …)`; http/errors.ts maps them to responses.

export const ERRORS = {
  invalid_json: { status: 400, message: 'the request body is not valid JSON' },
  invalid_request: { status: 400, message: 'the request does not match the schema' },
  invalid_signature: { status: 400, message: 'the Stripe-Signature does not verify for this workspace' },
  invalid_criteria: { status: 400, message: 'the criteria are invalid' },
  unsupported_event: { status: 400, message: 'this kind of payment-processor notification is not supported' },
  unauthorized: { status: 401, message: 'a valid API key is required: Authorization: Bearer <key>' },
  forbidden: { status: 403, message: 'this endpoint needs a secret key (sk_…), not a publishable key' },
  not_found: { status: 404, message: 'no such resource' },
  method_not_allowed: { status: 405, message: 'method not allowed' },
  conflict: { status: 409, message: 'the resource is busy; try again' },
  merge_conflict: { status: 409, message: 'both persons have an external_id: merging them needs force: true' },
  request_timeout: { status: 408, message: 'the request was not received in time' },
  payload_too_large: { status: 413, message: 'the request body is larger than 1 MiB' },
  uri_too_long: { status: 414, message: 'a path segment of the URL is too long' },
  unsupported_media_type: { status: 415, message: 'send the body as Content-Type: application/json' },
  rate_limited: { status: 429, message: 'too many requests' },
  headers_too_large: { status: 431, message: 'the request headers are larger than the server takes' },
  internal: { status: 500, message: 'internal error' },
  unavailable: { status: 503, message: 'a store the service depends on is not answering; retry shortly' },
  overloaded: { status: 503, message: 'too many estimates at once; retry shortly' },
  ingest_backlog: { status: 503, message: 'the ingest log holds more unresolved messages than its bound; retry shortly' },
  analytics_delayed: {
    status: 503,
    message: 'the request was stored, but the analytical store has not acknowledged its rows yet; they are kept and inserted as soon as it does (a retry with the same message_id is stored once)',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class AppError extends Error {
  readonly status: number;

  constructor(readonly code: ErrorCode, message?: string, readonly details?: Record<string, unknown>) {
    super(message ?? ERRORS[code].message);
    this.status = ERRORS[code].status;
  }
}

/** Where a 400 invalid_request fault is: a JSON Pointer into the body, or into the query string / path parameters. */
export interface FieldError {
  field: string;
  message: string;
  in?: 'querystring' | 'params' | 'headers';
  /** The item of a batch the fault is in (also the second segment of `field`). */
  index?: number;
}

/** RFC 6901: `['batch', 3, 'a/b']` → `/batch/3/a~1b`; the empty path, the whole document, is `''`. */
export function pointer(path: readonly PropertyKey[]): string {
  return path.map((part) => `/${String(part).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** 400 invalid_request naming each field the same way everywhere, the first few repeated in the message. */
export function invalidRequest(errors: FieldError[]): AppError {
  const summary = errors.slice(0, 5).map((e) => `${e.in ? `${e.in} ` : ''}${e.field || '(body)'}: ${e.message}`).join('; ');
  return new AppError('invalid_request', summary, { errors });
}
