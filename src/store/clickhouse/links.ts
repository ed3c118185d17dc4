// The visitor → person links dictionary (schema.ts visitorLinksDictionary) holds links older than
// its cut; the criteria queries read newer ones from the table. A link row that lands after the
// dictionary loaded but carries a version before its cut (an insert retried by the outbox after a
// long outage, an import of old rows) would be in neither: whoever writes one reloads the dictionary.

import type { ClickHouseContext } from './context.js';
import { quote } from './run.js';
import { VISITOR_LINKS, VISITOR_LINKS_LAG_S } from './schema.js';

/** Versions older than this (ns before now) may be before a dictionary's cut; half the lag, for clock skew. */
const LATE_NS = BigInt(VISITOR_LINKS_LAG_S / 2) * 1_000_000_000n;

/** Whether a JSONEachRow body of visitor rows holds a version that a loaded dictionary may have cut off. */
export function holdsLateLinks(body: string, nowMs = Date.now()): boolean {
  const late = BigInt(nowMs) * 1_000_000n - LATE_NS;
  for (const [, version] of body.matchAll(/"version":"?(\d+)/g)) if (BigInt(version!) <= late) return true;
  return false;
}

/** Reloads the links dictionary (on every node of a cluster), so it holds every link stored up to its new cut. */
export async function reloadVisitorLinks(ctx: Pick<ClickHouseContext, 'client' | 'database' | 'cluster'>): Promise<void> {
  const onCluster = ctx.cluster === undefined ? '' : ` ON CLUSTER ${quote(ctx.cluster)}`;
  await ctx.client.command({ query: `SYSTEM RELOAD DICTIONARY ${quote(ctx.database)}.${VISITOR_LINKS}${onCluster}` });
}
