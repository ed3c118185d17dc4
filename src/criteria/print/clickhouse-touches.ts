// The revenue report's per-payment models on ClickHouse, as DuckDB's (print/duckdb-touches.ts):
// each money row split over its profile's page views in the lookback before its anchor.

import { closedSharesSql, MICROS_PER_DAY, RANKS_OF, type RankedTouch, type TouchModel, type TouchRank, touchWeightSql } from '../attribution.js';
import type { ReportPlan } from '../report.js';

/**
 * Every rank from one sort of each money row's touches, latest first: the same PARTITION BY and
 * ORDER BY in every window (the frame differs), so ClickHouse sorts the touches once.
 */
const LATEST_FIRST = 'PARTITION BY money_id ORDER BY ts DESC, pageview_id DESC';
const WHOLE = `(${LATEST_FIRST} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)`;
const NON_DIRECT = "channel_category != 'Direct'";
const RANKS: Record<TouchRank, string> = {
  n: `toInt64(count() OVER ${WHOLE})`,
  from_first: `toInt64(count() OVER ${WHOLE}) - toInt64(row_number() OVER (${LATEST_FIRST})) + 1`,
  // 1 for the latest non-Direct touch (a running count of them reaching 1 there), else the latest when all are Direct.
  last_non_direct: `multiIf(${NON_DIRECT} AND countIf(${NON_DIRECT}) OVER (${LATEST_FIRST} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) = 1, 1,
        row_number() OVER (${LATEST_FIRST}) = 1 AND countIf(${NON_DIRECT}) OVER ${WHOLE} = 0, 1, 2)`,
  age: `toUnixTimestamp64Micro(max(ts) OVER ${WHOLE}) - toUnixTimestamp64Micro(ts)`,
};

/** The money row's anchor: a payment's own time; a refund's latest payment at or before it (else its own). */
export const CLICKHOUSE_ANCHOR = `if(is_payment = 1, ts, ifNull(max(if(is_payment = 1, ts, NULL))
        OVER (PARTITION BY customer_id ORDER BY ts ASC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), ts)) AS anchor`;

/**
 * `(money_id, v, share, credited)`: the shares of each money row of `inRange` with a touch among
 * `pageviews` (`profile, ts, pageview_id, channel_category, value`), per touch value. The shares and
 * the remainder in one pass where the weights' sum has a closed form (every model but time_decay).
 */
export function clickhouseCredits(
  report: ReportPlan, model: TouchModel, inRange: string, pageviews: string, add: (v: number, type: 'UInt64' | 'Float64') => string,
): string {
  const touch: RankedTouch = { count: 'n', fromFirst: 'from_first', fromLast: 'from_last', lastNonDirect: 'last_non_direct', ageMicros: 'age' };
  const closed = closedSharesSql(model, touch, 'amount', (a, b) => `intDiv(${a}, ${b})`);
  const read = new Set<TouchRank>([...RANKS_OF[model], ...(closed ? ['n' as const] : [])]);
  const ranks = [`row_number() OVER (${LATEST_FIRST}) AS from_last`, ...[...read].map((c) => `${RANKS[c]} AS ${c}`)];
  const weight = touchWeightSql(model, touch, () => add(report.halfLifeDays * MICROS_PER_DAY, 'Float64'), (x) => x);
  const touches = `SELECT r.money_id AS money_id, r.amount AS amount, x.ts AS ts, x.pageview_id AS pageview_id, x.channel_category AS channel_category,
          CAST(x.value AS Nullable(String)) AS v
        FROM (${inRange}) AS r INNER JOIN (${pageviews}) AS x ON x.profile = r.profile
        WHERE r.profile != 0 AND x.ts <= r.anchor AND x.ts >= r.anchor - toIntervalDay(${add(report.lookbackDays, 'UInt64')})`;
  const ranked = `SELECT money_id, amount, v, ${ranks.join(', ')} FROM (${touches})`;
  if (closed) {
    return `SELECT money_id, v, sum(intDiv(amount * w, total) + if(from_last = 1, amount - floors, 0)) AS share, 1 AS credited
      FROM (SELECT money_id, amount, v, from_last, toInt64(${weight}) AS w, toInt64(${closed.total}) AS total, toInt64(${closed.floors}) AS floors
        FROM (${ranked}))
      WHERE w > 0
      GROUP BY money_id, v`;
  }
  const weighted = `SELECT *, intDiv(amount * w, sum(w) OVER (PARTITION BY money_id)) AS floor_share FROM (
        SELECT money_id, amount, v, from_last, toInt64(${weight}) AS w FROM (${ranked}))`;
  return `SELECT money_id, v, sum(floor_share + if(from_last = 1, amount - floor_total, 0)) AS share, 1 AS credited
      FROM (SELECT *, sum(floor_share) OVER (PARTITION BY money_id) AS floor_total FROM (${weighted}))
      WHERE w > 0
      GROUP BY money_id, v`;
}
