// Google's error answers (google.rpc.Status in JSON, AIP-193): `{ error: { code, message, status,
// details } }`. The Google Ads API puts a GoogleAdsFailure in details, each error with an
// `errorCode` such as `{ offlineUserDataJobError: "CONFLICTING_OPERATION" }`; the Data Manager API an
// ErrorInfo with a `reason`. Throttling (RESOURCE_EXHAUSTED) and CONCURRENT_MODIFICATION are retried.

import { type HttpResponse, jsonOf, type Verdict } from './driver.js';

interface StatusBody {
  error?: {
    code?: number;
    message?: string;
    status?: string;
    details?: { reason?: string; errors?: { errorCode?: Record<string, string>; message?: string }[] }[];
  };
}

const RETRIED = new Set(['RESOURCE_EXHAUSTED', 'CONCURRENT_MODIFICATION', 'UNAVAILABLE', 'DEADLINE_EXCEEDED', 'INTERNAL']);

/** The codes of a status: its own, each GoogleAdsFailure error code, each ErrorInfo reason. */
function codesOf(status: NonNullable<StatusBody['error']>): string[] {
  const codes = status.status ? [status.status] : [];
  for (const detail of status.details ?? []) {
    if (detail.reason) codes.push(detail.reason);
    for (const e of detail.errors ?? []) codes.push(...Object.values(e.errorCode ?? {}));
  }
  return codes;
}

/** Google's message, with each error's code and message, as the delivery log shows it. */
export function describeStatus(status: NonNullable<StatusBody['error']>): string {
  const errors = (status.details ?? []).flatMap((d) => d.errors ?? [])
    .map((e) => `${Object.values(e.errorCode ?? {}).join('/')}${e.message ? ` (${e.message})` : ''}`);
  return [status.status, status.message, ...errors].filter(Boolean).join(': ');
}

/** Judges a Google answer; `unauthenticated` is told of a 401 (the token is fetched again and the attempt retried). */
export function judgeGoogle(unauthenticated: () => void): (response: HttpResponse) => Verdict {
  return (response) => {
    if (response.status >= 200 && response.status < 300) return { ok: true };
    const status = (jsonOf(response.body) as StatusBody | null)?.error;
    const error = `HTTP ${response.status}${status ? `: ${describeStatus(status)}` : ''}`;
    if (response.status === 401) {
      unauthenticated();
      return { ok: false, error, retryable: true };
    }
    const throttled = status ? codesOf(status).some((c) => RETRIED.has(c)) : false;
    return { ok: false, error, retryable: throttled || response.status === 429 || response.status >= 500 };
  };
}

/** The partial failure of an accepted answer (`partialFailureError`), described; null when none. */
export function partialFailure(body: string): string | null {
  const failure = (jsonOf(body) as { partialFailureError?: StatusBody['error'] } | null)?.partialFailureError;
  if (!failure || (!failure.code && !failure.message)) return null;
  const count = (failure.details ?? []).reduce((n, d) => n + (d.errors?.length ?? 0), 0);
  return `partial failure${count ? ` (${count} operations refused)` : ''}: ${describeStatus(failure)}`;
}
