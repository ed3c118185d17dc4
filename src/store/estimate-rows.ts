// The rows of the estimate statements as the features read them, alike for every engine (each
// returns its integers in its own way: bigint, number or decimal text).

import type { BreakdownCounts } from './analytics.js';

type Row = Record<string, unknown>;

/** `SELECT count … AS count`: its one row's count. */
export const countOf = (rows: Row[]): number => Number(rows[0]?.count ?? 0);

/** `{ value, count, total }` rows, most frequent first: the audience's size is every row's total (none: empty). */
export function breakdownOf(rows: Row[]): BreakdownCounts {
  return {
    total: Number(rows[0]?.total ?? 0),
    top: rows.map((r) => ({ value: r.value === null || r.value === undefined ? null : String(r.value), count: Number(r.count) })),
  };
}

/** `{ mask, count }` rows: profiles per membership mask. */
export const overlapOf = (rows: Row[]): Map<number, number> => new Map(rows.map((r) => [Number(r.mask), Number(r.count)]));
