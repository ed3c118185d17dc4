// Random public ids (events, page views, persons) drawn for a whole batch at once.

import { randomBytes } from 'node:crypto';

/** `n` random ids of 96 bits from one call to the random source (a call per id was costly). */
export function newIds(prefix: string, n: number): string[] {
  const random = randomBytes(12 * n).toString('base64url');
  return Array.from({ length: n }, (_, i) => `${prefix}_${random.slice(16 * i, 16 * i + 16)}`);
}
