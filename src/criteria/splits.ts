// An audience's splits as placed (decisions §14): each member falls in a bucket of [0, SPLIT_BUCKETS)
// from an MD5 of the audience's salt and its profile, and each split holds a run of buckets, in the
// order the splits are listed. Only the profile and the salt decide a member's bucket, so a member
// keeps its split across refreshes. Pure; the printers print the same bucket in SQL (MD5 is spelled
// alike by DuckDB and ClickHouse, and this reference is what tests compare them with).

import { createHash } from 'node:crypto';

/** Percents are placed to the hundredth: 10,000 buckets. */
export const SPLIT_BUCKETS = 10_000;

export interface SplitPlacement {
  salt: string;
  /** Each split's name and the end (exclusive) of its buckets; the last ends at SPLIT_BUCKETS. */
  splits: { name: string; until: number }[];
}

/** The splits' runs of buckets from their percents, in order. */
export function placement(salt: string, splits: { name: string; percent: number }[]): SplitPlacement {
  let until = 0;
  return {
    salt,
    splits: splits.map((s) => {
      until += Math.round(s.percent * (SPLIT_BUCKETS / 100));
      return { name: s.name, until };
    }),
  };
}

/** The text hashed for a profile: the salt, a colon, the profile in decimal. */
export const bucketKey = (salt: string, profile: number | bigint): string => `${salt}:${profile}`;

/** The member's bucket: the MD5's first four bytes, big-endian, modulo SPLIT_BUCKETS. */
export function splitBucket(salt: string, profile: number | bigint): number {
  return createHash('md5').update(bucketKey(salt, profile)).digest().readUInt32BE(0) % SPLIT_BUCKETS;
}

/** The name of the member's split; null when there are no splits. */
export function splitOf(p: SplitPlacement, profile: number | bigint): string | null {
  if (p.splits.length === 0) return null;
  const bucket = splitBucket(p.salt, profile);
  return p.splits.find((s) => bucket < s.until)!.name;
}

/** A SQL CASE naming the split of bucket expression `bucket`, names and bounds bound by `bind`. */
export function splitCaseSql(p: SplitPlacement, bucket: string, bind: (value: string | number) => string): string {
  const last = bind(p.splits[p.splits.length - 1]!.name);
  const arms = p.splits.slice(0, -1).map((s) => `WHEN ${bucket} < ${bind(s.until)} THEN ${bind(s.name)}`);
  return arms.length === 0 ? last : `CASE ${arms.join(' ')} ELSE ${last} END`;
}

/** The splits whose members go to one destination (decisions §14). */
export interface SplitRoute {
  placement: SplitPlacement;
  names: string[];
}

/** A SQL condition: `split` (an expression naming a member's split) is one of the route's. */
export function routedSql(route: SplitRoute, split: string, bind: (value: string | number) => string): string {
  return route.names.length === 0 ? '1 = 0' : `${split} IN (${route.names.map(bind).join(', ')})`;
}
