// Every call of the console goes through the public API, with the secret key the user entered
// (kept in this tab's session storage only, never in a cookie or local storage).

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

// The API's shapes: the service's own zod schemas' types (type-only imports, erased from the bundle).

export type { Audience, BreakdownRow, CompileAnswer, Delivery, Member, SnapshotMember } from '../audiences/schema.js';
export type { LiftReport } from '../reports/lift-schema.js';
export type { PublicDestination } from '../audiences/destinations/schema.js';
export type { PersonMatch as Person, PeoplePage } from '../attribution/people-schema.js';
export type { CriteriaError } from '../criteria/errors.js';
export type { MergeAnswer, MergePreview } from '../people/schema.js';
export type { Definitions } from '../http/routes/definitions.js';
export type { Workspace } from '../http/routes/workspace.js';
export type { Amounts as Money, RevenueReport } from '../reports/response.js';
export type { PrivacyList, PrivacyRequestAnswer as PrivacyRequest } from '../privacy/schema.js';
