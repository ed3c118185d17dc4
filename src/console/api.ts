// Every call of the console goes through the public API, with the secret key the user entered
// (kept in this tab's session storage only, never in a cookie or local storage).

import type { PersonMatch } from '../attribution/people.js';

const KEY = 'audiences.secret_key';

export const storedKey = (): string | null => sessionStorage.getItem(KEY);
export const storeKey = (key: string) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);

/** An answer other than 2xx: the API's `{ error, message }` body, and the status. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly body: unknown) {
    super(message);
  }
}

async function errorOf(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // not JSON: the status says enough
  }
  const b = (body ?? {}) as { error?: string; message?: string };
  return new ApiError(res.status, b.error ?? `http_${res.status}`, b.message ?? `${res.status} ${res.statusText}`, body);
}

function headers(key: string | null, json: boolean): HeadersInit {
  return { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(json ? { 'content-type': 'application/json' } : {}) };
}

/** A JSON call; `body` makes it a write. */
export async function api<T>(method: string, path: string, body?: unknown, opts: { key?: string; signal?: AbortSignal } = {}): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: headers(opts.key ?? storedKey(), body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: opts.signal,
  });
  if (!res.ok) throw await errorOf(res);
  return await res.json() as T;
}

/** Downloads a file answer (an export) under `filename`: fetched with the key, then saved by the browser. */
export async function download(path: string, filename: string): Promise<void> {
  const res = await fetch(path, { headers: headers(storedKey(), false) });
  if (!res.ok) throw await errorOf(res);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

// The API's shapes, as the console reads them.

export interface CriteriaError { code: string; path: string; message: string }

export interface Approximate { count: number; low: number; high: number; sample_fraction: number }

export interface CompileAnswer {
  valid: boolean;
  is_time_windowed: boolean | null;
  estimated_count: { count: number | null; is_estimate: boolean; hit_limit: boolean; approximate?: Approximate | null } | null;
  errors?: CriteriaError[];
  breakdown?: { value: string | null; count: number }[] | null;
}

export interface Destination { id: string; type: string; [field: string]: unknown }

export interface Audience {
  id: string;
  name: string;
  criteria_json: unknown;
  status: 'pending' | 'refreshing' | 'ready' | 'failed';
  member_count: number | null;
  last_refreshed_at: string | null;
  next_refresh_at: string;
  is_time_windowed: boolean;
  refresh_every: string;
  destinations: Destination[];
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface Member { person_id: string | null; visitor_id: string | null; external_id: string | null; email: string | null }

export interface Delivery {
  delivery_id: string;
  destination_id: string;
  snapshot_id: number;
  status: string;
  pages_delivered: number;
  skipped: number;
  last_error: string | null;
  created_at: string;
  finished_at: string | null;
  attempts: { attempt: number; ok: boolean; http_status: number | null; error: string | null; attempted_at: string }[];
}

/** The people lookup's row: the service's own type (a type-only import, erased from the bundle). */
export type Person = PersonMatch;

export interface Definitions { events: { name: string; paths: string[] }[]; traits: string[] }

export interface Workspace { id: string; name: string; webhook_url: string; payments_mode: string }

export type Money = Record<string, number>;

export interface RevenueRow {
  bucket: string;
  group: string | null;
  revenue: Money;
  refunds: Money;
  refund_count: number;
  paying_customers: number;
  new_paying_customers: number;
}

export interface RevenueReport {
  from: string;
  to: string;
  interval: 'day' | 'week' | 'month';
  group_by: string;
  model: string;
  hit_limit: boolean;
  currencies: string[];
  rows: RevenueRow[];
  totals: { revenue: Money; refunds: Money; refund_count: number; paying_customers: number; new_paying_customers: number } | null;
}
