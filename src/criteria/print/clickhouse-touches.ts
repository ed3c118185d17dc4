// The revenue report's per-payment models on ClickHouse, as DuckDB's (print/duckdb-touches.ts):
// each money row split over its profile's page views in the lookback before its anchor.

import { MICROS_PER_DAY, RANKS_OF, type TouchModel, type TouchRank, touchWeightSql } from '../attribution.js';
import type { ReportPlan } from '../report.js';

const RANKS: Record<TouchRank, string> = {
  n: 'toInt64(count() OVER (PARTITION BY money_id))',
  from_first: 'row_number() OVER (PARTITION BY money_id ORDER BY ts ASC, pageview_id ASC)',
  last_non_direct: "row_number() OVER (PARTITION BY money_id ORDER BY channel_category != 'Direct' DESC, ts DESC, pageview_id DESC)",
  age: 'toUnixTimestamp64Micro(max(ts) OVER (PARTITION BY money_id)) - toUnixTimestamp64Micro(ts)',
};

/** The money row's anchor: a payment's own time; a refund's latest payment at or before it (else its own). */
export const CLICKHOUSE_ANCHOR = `if(is_payment = 1, ts, ifNull(max(if(is_payment = 1, ts, NULL))
        OVER (PARTITION BY customer_id ORDER BY ts ASC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), ts)) AS anchor`;

/**
 * `(money_id, v, share, credited)`: the shares of each money row of `inRange` with a touch among
 * `pageviews` (`profile, ts, pageview_id, channel_category, value`), per touch value.
 */
export function clickhouseCredits(
  report: ReportPlan, model: TouchModel, inRange: string, pageviews: string, add: (v: number, type: 'UInt64' | 'Float64') => string,
): string {
  const ranks = ['row_number() OVER (PARTITION BY money_id ORDER BY ts DESC, pageview_id DESC) AS from_last', ...RANKS_OF[model].map((c) => `${RANKS[c]} AS ${c}`)];
  const weight = touchWeightSql(model, { count: 'n', fromFirst: 'from_first', fromLast: 'from_last', lastNonDirect: 'last_non_direct', ageMicros: 'age' },
    () => add(report.halfLifeDays * MICROS_PER_DAY, 'Float64'), (x) => x);
  const touches = `SELECT r.money_id AS money_id, r.amount AS amount, x.ts AS ts, x.pageview_id AS pageview_id, x.channel_category AS channel_category,
          CAST(x.value AS Nullable(String)) AS v
        FROM (${inRange}) AS r INNER JOIN (${pageviews}) AS x ON x.profile = r.profile
        WHERE r.profile != 0 AND x.ts <= r.anchor AND x.ts >= r.anchor - toIntervalDay(${add(report.lookbackDays, 'UInt64')})`;
  const weighted = `SELECT *, intDiv(amount * w, sum(w) OVER (PARTITION BY money_id)) AS floor_share FROM (
        SELECT money_id, amount, v, from_last, toInt64(${weight}) AS w
        FROM (SELECT money_id, amount, v, ${ranks.join(', ')} FROM (${touches})))`;
  return `SELECT money_id, v, sum(floor_share + if(from_last = 1, amount - floor_total, 0)) AS share, 1 AS credited
      FROM (SELECT *, sum(floor_share) OVER (PARTITION BY money_id) AS floor_total FROM (${weighted}))
      WHERE w > 0
      GROUP BY money_id, v`;
}
