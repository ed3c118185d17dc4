// The revenue report's `currency` on DuckDB (criteria/currency.ts): each money row at its day's
// rate per EUR, the last one published within RATE_LOOKBACK_DAYS (ASOF joins on the workspace's
// exchange_rates), converted to the report's currency in minor units.

import { convertedSql, minorScaleSql, RATE_BASE, RATE_LOOKBACK_DAYS } from '../currency.js';

/**
 * `money`'s rows (money_id, customer_id, ts, amount as raw_amount, currency as raw_currency, is_payment) with their `day`,
 * `from_scale` (10^digits of their currency) and rates: `from_rate` of their currency, `to_rate` of `target` (a bound parameter), and whether each was found.
 */
export function duckdbRated(money: string, target: string, w: string, add: (v: string | number) => string): string {
  const [base, lookback] = [add(RATE_BASE), add(RATE_LOOKBACK_DAYS)];
  const rates = `(SELECT currency, day, per_eur FROM exchange_rates WHERE workspace_id = ${w})`;
  return `SELECT m.money_id, m.customer_id, m.ts, m.amount AS raw_amount, m.currency AS raw_currency, m.is_payment, m.day,
      ${minorScaleSql('m.currency')} AS from_scale,
      CASE WHEN m.currency = ${base} THEN 1.0 ELSE f.per_eur END AS from_rate, CASE WHEN m.to_currency = ${base} THEN 1.0 ELSE t.per_eur END AS to_rate,
      m.currency = ${base} OR coalesce(f.day >= m.day - CAST(${lookback} AS INTEGER), false) AS from_rated,
      m.to_currency = ${base} OR coalesce(t.day >= m.day - CAST(${lookback} AS INTEGER), false) AS to_rated
    FROM (SELECT *, CAST(ts AS DATE) AS day, ${target} AS to_currency FROM (${money})) m
      ASOF LEFT JOIN ${rates} f ON f.currency = m.currency AND m.day >= f.day
      ASOF LEFT JOIN ${rates} t ON t.currency = m.to_currency AND m.day >= t.day`;
}

/** The money rows in `target` (a bound parameter; `targetScale` its 10^digits): a row without a rate reads 0 (the report refuses a range holding one). */
export function duckdbConverted(money: string, target: string, targetScale: string, w: string, add: (v: string | number) => string): string {
  const amount = convertedSql('raw_amount', 'from_rate', 'from_scale', 'to_rate', targetScale);
  return `SELECT money_id, customer_id, ts, CAST(CASE WHEN from_rated AND to_rated THEN ${amount} ELSE 0 END AS BIGINT) AS amount,
      CAST(${target} AS VARCHAR) AS currency, is_payment
    FROM (${duckdbRated(money, target, w, add)})`;
}

/** The earliest row of [from, to) lacking a rate: `{ currency, day }`, the currency whose rate is missing. */
export function duckdbMissingRate(money: string, target: string, from: string, to: string, w: string, add: (v: string | number) => string): string {
  return `SELECT CASE WHEN from_rated THEN ${target} ELSE raw_currency END AS currency, strftime(day, '%Y-%m-%d') AS day
    FROM (${duckdbRated(money, target, w, add)})
    WHERE ts >= ${from} AND ts < ${to} AND NOT (from_rated AND to_rated)
    ORDER BY day, 1 LIMIT 1`;
}
