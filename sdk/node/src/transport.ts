// One batch to POST /v1/batch, sent again on 408 / 429 / 5xx and network errors until it is taken,
// refused for good, out of retries, or abandoned (close's deadline).

import { body, type Queued } from './batch.js';
import { backoffMs, retryable, retryAfterMs, type RetryPolicy } from './retry.js';

export interface Endpoint {
  url: string;
  headers: Record<string, string>;
  /** Each attempt's own limit. */
  timeoutMs: number;
}

/** Told before each wait: which retry comes next, after how long, and why. */
export interface RetryNotice {
  retry: number;
  delayMs: number;
  status?: number;
  error?: unknown;
}

export type Outcome =
  | { ok: true; attempts: number }
  | { ok: false; attempts: number; reason: 'rejected' | 'retries_exhausted' | 'abandoned'; status?: number; detail: string };

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  if (signal.aborted) return resolve();
  const done = () => {
    clearTimeout(timer);
    signal.removeEventListener('abort', done);
    resolve();
  };
  const timer = setTimeout(done, ms);
  signal.addEventListener('abort', done, { once: true });
});

/** The body of an answer, cut short: enough to say why it was refused. */
async function excerpt(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

export async function deliver(
  batch: readonly Queued[], endpoint: Endpoint, policy: RetryPolicy, abandon: AbortSignal, onRetry?: (notice: RetryNotice) => void,
): Promise<Outcome> {
  for (let attempt = 1; ; attempt++) {
    if (abandon.aborted) return { ok: false, attempts: attempt - 1, reason: 'abandoned', detail: 'closed before the batch was taken' };
    let status: number | undefined;
    let error: unknown;
    let delayMs: number | undefined;
    try {
      const res = await fetch(endpoint.url, {
        method: 'POST',
        headers: endpoint.headers,
        body: body(batch, new Date()),
        signal: AbortSignal.any([abandon, AbortSignal.timeout(endpoint.timeoutMs)]),
      });
      status = res.status;
      const detail = await excerpt(res);
      if (res.ok) return { ok: true, attempts: attempt };
      if (!retryable(status)) return { ok: false, attempts: attempt, reason: 'rejected', status, detail };
      error = new Error(`${status} ${detail}`);
      delayMs = retryAfterMs(res.headers.get('retry-after'), Date.now(), policy.maxRetryAfterMs);
    } catch (err) {
      error = err;
    }
    if (attempt > policy.maxRetries) {
      return { ok: false, attempts: attempt, reason: 'retries_exhausted', status, detail: String(error) };
    }
    delayMs ??= backoffMs(attempt, policy);
    onRetry?.({ retry: attempt, delayMs, status, error });
    await sleep(delayMs, abandon);
  }
}
