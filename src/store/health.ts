// Whether each store serves: a trivial statement answered within a short bound, and room to write.
// /health answers from it (http/routes/health.ts); the stores' own checks are in open.ts.

import { DependencyUnavailable, type Dependency } from './errors.js';

/** Per store, 'ok' or why it does not serve. */
export type StoresHealth = Partial<Record<Dependency, string>>;

/** A store's check: why it cannot serve reads and writes, or null. */
export type HealthCheck = () => Promise<string | null>;

/** Runs the checks at once, each bounded by `timeoutMs`. */
export async function checkStores(checks: Partial<Record<Dependency, HealthCheck>>, timeoutMs: number): Promise<StoresHealth> {
  const entries = await Promise.all(Object.entries(checks).map(async ([name, check]) => [name, await within(check, timeoutMs)] as const));
  return Object.fromEntries(entries.map(([name, problem]) => [name, problem ?? 'ok']));
}

async function within(check: HealthCheck, timeoutMs: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([check().catch(describe), late]);
  } finally {
    clearTimeout(timer);
  }
}

const describe = (err: unknown): string =>
  err instanceof DependencyUnavailable ? err.reason : `the check failed (${err instanceof Error ? err.message.split('\n')[0]!.slice(0, 200) : String(err)})`;
