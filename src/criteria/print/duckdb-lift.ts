// The lift report on DuckDB (criteria/lift.ts): a snapshot's members placed in their splits, each
// member's net revenue per currency in the range, and per split the sums a 95 % interval needs.

import type { LiftPlan } from '../lift.js';
import { SPLIT_BUCKETS, splitCaseSql, type SplitPlacement } from '../splits.js';

/** The parts of the workspace the statement reads, as the printer spells them. */
export interface LiftSources {
  w: string;
  /** CTEs the money reads, after `members (profile, split)`. */
  ctes: string[];
  /** `(profile, currency, amount, is_payment)`: the members' payments and refunds in the range (or the shares a model attributes). */
  money: string;
  bind: (value: string | number) => string;
}

/** The split of column `profile` (criteria/splits.ts splitBucket, spelled for DuckDB). */
export function duckdbSplitSql(placement: SplitPlacement, profile: string, bind: (value: string | number) => string): string {
  const bucket = `CAST(('0x' || substr(md5(${bind(placement.salt)} || ':' || CAST(${profile} AS VARCHAR)), 1, 8)) AS UBIGINT) % ${SPLIT_BUCKETS}`;
  return splitCaseSql(placement, bucket, bind);
}

/**
 * A member is one row of `members` and one of `per_member` per currency, so plain counts count them:
 * DuckDB's DISTINCT aggregates over grouping sets cost far more.
 */
export function duckdbLiftSql(plan: LiftPlan, s: LiftSources): string {
  return `WITH members AS MATERIALIZED (
    SELECT profile, ${duckdbSplitSql(plan.placement, 'profile', s.bind)} AS split
    FROM audience_members WHERE workspace_id = ${s.w} AND snapshot_id = ${s.bind(plan.snapshotId)}
  ),${s.ctes.map((c) => `\n  ${c},`).join('')}
  per_member AS (
    SELECT profile, currency, sum(CASE WHEN is_payment THEN amount ELSE -amount END) AS revenue, bool_or(is_payment) AS paid
    FROM (${s.money}) GROUP BY ALL
  )
SELECT m.split, x.currency, 0 AS level, count(*) AS members, count(*) FILTER (WHERE x.paid) AS paying,
  sum(x.revenue) AS total, sum(CAST(x.revenue AS DOUBLE) * x.revenue) AS squares
FROM per_member x JOIN members m ON m.profile = x.profile
GROUP BY m.split, x.currency
UNION ALL
SELECT m.split, NULL, 1, count(*), count(*) FILTER (WHERE x.paid), coalesce(sum(x.revenue), 0), coalesce(sum(x.squares), 0)
FROM members m LEFT JOIN (SELECT profile, bool_or(paid) AS paid, sum(revenue) AS revenue, sum(CAST(revenue AS DOUBLE) * revenue) AS squares
  FROM per_member GROUP BY profile) x ON x.profile = m.profile
GROUP BY m.split`;
}
