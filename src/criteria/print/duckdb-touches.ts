// The revenue report's per-payment models on DuckDB (criteria/attribution.ts): each money row of
// `in_range` (a payment, or a refund anchored at the customer's latest payment at or before it)
// split over the page views of its profile in the lookback before its anchor (a deleted payer's:
// its frozen touches). CTEs over `in_range`.

import { closedSharesSql, MICROS_PER_DAY, RANKS_OF, type RankedTouch, type TouchModel, type TouchRank, touchWeightSql } from '../attribution.js';
import type { ReportPlan } from '../report.js';

/**
 * The window columns each model reads, all from one sort of each money row's touches, latest first
 * (`o`; `m` the whole money row): every model reads from_last, the remainder's touch.
 */
const RANKS: Record<TouchRank, string> = {
  n: 'count(*) OVER m',
  from_first: 'count(*) OVER m - row_number() OVER o + 1',
  // 1 for the latest non-Direct touch (a running count of them reaching 1 there), else the latest when all are Direct.
  // The frame's window spelled out: DuckDB 1.5 drops the partition of `(o ROWS …)`.
  last_non_direct: `CASE WHEN channel_category <> 'Direct' AND count(*) FILTER (WHERE channel_category <> 'Direct')
          OVER (PARTITION BY money_key ORDER BY ts DESC, pageview_id DESC ROWS UNBOUNDED PRECEDING) = 1 THEN 1
        WHEN row_number() OVER o = 1 AND count(*) FILTER (WHERE channel_category <> 'Direct') OVER m = 0 THEN 1 ELSE 2 END`,
  age: 'epoch_us(max(ts) OVER m) - epoch_us(ts)',
};

/** `in_range.anchor`: the payment's own time; a refund's latest payment at or before it (else its own). */
export const DUCKDB_ANCHOR = `CASE WHEN is_payment THEN ts ELSE coalesce(max(ts) FILTER (WHERE is_payment)
      OVER (PARTITION BY customer_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), ts) END AS anchor`;

/** CTEs ending in `credits (money_key, v, share)`: the shares of each money row with a touch, per touch value. */
export function duckdbCredits(report: ReportPlan, model: TouchModel, column: string, w: string, add: (v: number) => string): string[] {
  const lookback = add(report.lookbackDays);
  const touch: RankedTouch = { count: 'n', fromFirst: 'from_first', fromLast: 'from_last', lastNonDirect: 'last_non_direct', ageMicros: 'age' };
  const closed = closedSharesSql(model, touch, 'amount', (a, b) => `((${a}) // (${b}))`);
  const read = new Set<TouchRank>([...RANKS_OF[model], ...(closed ? ['n' as const] : [])]);
  const ranks = ['row_number() OVER o AS from_last', ...[...read].map((c) => `${RANKS[c]} AS ${c}`)];
  const weight = touchWeightSql(model, touch, () => `CAST(${add(report.halfLifeDays * MICROS_PER_DAY)} AS DOUBLE)`, (x) => `CAST(${x} AS BIGINT)`);
  const ranked = `SELECT money_key, amount, v, ${ranks.join(', ')} FROM touches WINDOW m AS (PARTITION BY money_key), o AS (m ORDER BY ts DESC, pageview_id DESC)`;
  // The shares in one pass where the weights' sums have a closed form; else two window sums.
  const credits = closed
    ? [`credits AS (
    SELECT money_key, v, sum(amount * w // total + CASE WHEN from_last = 1 THEN amount - floors ELSE 0 END) AS share
    FROM (SELECT money_key, amount, v, from_last, ${weight} AS w, ${closed.total} AS total, ${closed.floors} AS floors FROM (${ranked}))
    WHERE w > 0
    GROUP BY money_key, v
  )`]
    : [`weighted AS (
    SELECT *, amount * w // sum(w) OVER (PARTITION BY money_key) AS floor_share FROM (
      SELECT money_key, amount, v, from_last, ${weight} AS w FROM (${ranked}))
  )`,
    `credits AS (
    SELECT money_key, v, sum(floor_share + CASE WHEN from_last = 1 THEN amount - floor_total ELSE 0 END) AS share
    FROM (SELECT *, sum(floor_share) OVER (PARTITION BY money_key) AS floor_total FROM weighted)
    WHERE w > 0
    GROUP BY money_key, v
  )`];
  return [
    `touches AS (
    SELECT r.money_key, r.amount, pv.ts, pv.pageview_id, pv.channel_category, ${column} AS v
    FROM in_range r
      JOIN (SELECT visitor_key, coalesce(person_key, -visitor_key) AS profile FROM visitors WHERE workspace_id = ${w}) vs ON vs.profile = r.profile
      JOIN pageviews pv ON pv.workspace_id = ${w} AND pv.visitor_key = vs.visitor_key
    WHERE pv.ts <= r.anchor AND pv.ts >= r.anchor - to_days(CAST(${lookback} AS INTEGER))
    UNION ALL
    SELECT r.money_key, r.amount, pv.ts, pv.pageview_id, pv.channel_category, ${column}
    FROM in_range r JOIN frozen_touches pv ON pv.workspace_id = ${w} AND pv.profile = r.profile
    WHERE pv.ts <= r.anchor AND pv.ts >= r.anchor - to_days(CAST(${lookback} AS INTEGER))
  )`,
    ...credits,
  ];
}
