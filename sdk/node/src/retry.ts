// When to send a refused batch again, and after how long: exponential backoff with full jitter
// (spreads the clients an outage made wait together), unless the service said when (Retry-After).

export interface RetryPolicy {
  /** Attempts after the first before a batch is given up (default 8). */
  maxRetries: number;
  /** The first backoff's ceiling; each next one doubles it (default 200 ms). */
  minDelayMs: number;
  /** No backoff waits longer (default 30 s). */
  maxDelayMs: number;
  /** A Retry-After above this is waited this long instead (default 5 min, as Segment's clients). */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 8, minDelayMs: 200, maxDelayMs: 30_000, maxRetryAfterMs: 300_000 };

/** 408, 429 and 5xx are the service's "not now": the same batch may succeed later. Other 4xx never will. */
export const retryable = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** A Retry-After header (delay-seconds or an HTTP-date) in milliseconds from `now`; undefined if absent or unreadable. */
export function retryAfterMs(header: string | null, now: number, cap: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const text = header.trim();
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now;
  if (Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(ms, 0), cap);
}

/** The wait before retry number `retry` (1-based): uniform in [0, min(max, min · 2^(retry-1))]. */
export function backoffMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** Math.min(retry - 1, 30));
  return Math.round(random() * ceiling);
}
