// The lift report on ClickHouse: DuckDB's statement (duckdb-lift.ts) spelled for the engine, the
// bucket from the same MD5 bytes (reinterpretAsUInt32 reads little-endian, hence the reverse).

import type { LiftPlan } from '../lift.js';
import { SPLIT_BUCKETS, splitCaseSql, type SplitPlacement } from '../splits.js';
import type { LiftSources } from './duckdb-lift.js';

/** The split of column `profile` (criteria/splits.ts splitBucket, spelled for ClickHouse). */
export function clickhouseSplitSql(placement: SplitPlacement, profile: string, bind: (value: string | number) => string): string {
  const bucket = `reinterpretAsUInt32(reverse(substring(MD5(concat(${bind(placement.salt)}, ':', toString(${profile}))), 1, 4))) % ${SPLIT_BUCKETS}`;
  return splitCaseSql(placement, bucket, bind);
}

export function clickhouseLiftSql(plan: LiftPlan, s: Omit<LiftSources, 'ctes'> & { members: string }): string {
  const members = `SELECT profile, ${clickhouseSplitSql(plan.placement, 'profile', s.bind)} AS split
      FROM ${s.members} WHERE workspace_id = ${s.w} AND snapshot_id = ${s.bind(plan.snapshotId)}`;
  const perMember = `SELECT profile, currency, sum(if(is_payment = 1, amount, -amount)) AS revenue, max(is_payment) AS paid
      FROM (${s.money}) GROUP BY profile, currency`;
  return `SELECT split, currency, grouping(currency) AS level, uniqExact(profile) AS members, uniqExactIf(profile, paid = 1) AS paying,
  sum(revenue) AS total, sum(toFloat64(revenue) * revenue) AS squares
FROM (
  SELECT m.split AS split, m.profile AS profile, x.currency AS currency, ifNull(x.revenue, 0) AS revenue, ifNull(x.paid, 0) AS paid
  FROM (${members}) AS m LEFT JOIN (${perMember}) AS x ON x.profile = m.profile
)
GROUP BY GROUPING SETS ((split), (split, currency))
SETTINGS join_use_nulls = 1`;
}
