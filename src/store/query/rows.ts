// The rows of the estimate statements as the features read them, alike for every engine (each
// returns its integers in its own way: bigint, number or decimal text).

import type { LiftRow } from '../../criteria/index.js';
import type { BreakdownCounts, RevenueRow } from '../analytics.js';
import type { Row } from './driver.js';

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

/**
 * A revenue row as an engine returns it (64-bit numbers as bigint or text; a column its level does
 * not group by is NULL or, on ClickHouse, its type's default).
 */
export function revenueRow(r: Record<string, unknown>): RevenueRow {
  const level = Number(r.level) as RevenueRow['level'];
  const text = (v: unknown, bit: number) => (v === null || v === undefined || (level & bit) !== 0 ? null : String(v));
  return {
    level, bucket: text(r.bucket, 4), group: text(r.grp, 2), currency: text(r.currency, 1),
    paid: Number(r.paid), refunded: Number(r.refunded), refund_count: Number(r.refund_count), paying: Number(r.paying), new_paying: Number(r.new_paying),
  };
}

/** A lift row as an engine returns it; the currency of a split's counts row (level 1) is null. */
export function liftRow(r: Record<string, unknown>): LiftRow | null {
  const counts = Number(r.level) === 1;
  // The members without money in the range group under a null currency: nothing to add.
  if (!counts && (r.currency === null || r.currency === undefined)) return null;
  return {
    split: String(r.split), currency: counts ? null : String(r.currency),
    members: Number(r.members), paying: Number(r.paying), total: Number(r.total), squares: Number(r.squares),
  };
}
