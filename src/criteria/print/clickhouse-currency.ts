// The revenue report's `currency` on ClickHouse, as DuckDB's (print/duckdb-currency.ts): ASOF joins
// on the copy of the workspace's exchange rates (read FINAL); a join miss reads the column defaults
// (rate 0, day 1970-01-01), so a rate counts only when positive and recent enough.

import { convertedSql, minorScaleSql, RATE_BASE, RATE_LOOKBACK_DAYS } from '../currency.js';

/** The money rows with their `day` and rates, as duckdbRated (no output named as an input column: ClickHouse reads a select's aliases in it). `rates`: the exchange_rates table (qualified). */
export function clickhouseRated(money: string, target: string, w: string, rates: string, add: (v: string | number) => string): string {
  const [base, lookback] = [add(RATE_BASE), add(RATE_LOOKBACK_DAYS)];
  const table = `(SELECT currency, day, per_eur FROM ${rates} FINAL WHERE workspace_id = ${w})`;
  const found = (r: string) => `ifNull(${r}.per_eur > 0 AND ${r}.day >= subtractDays(m.day, ${lookback}), 0)`;
  return `SELECT m.money_id AS money_id, m.customer_id AS customer_id, m.ts AS ts, m.amount AS raw_amount, m.currency AS raw_currency,
      m.is_payment AS is_payment, m.day AS day, ${minorScaleSql('m.currency')} AS from_scale,
      if(m.currency = ${base}, 1., f.per_eur) AS from_rate, if(m.to_currency = ${base}, 1., t.per_eur) AS to_rate,
      m.currency = ${base} OR ${found('f')} AS from_rated, m.to_currency = ${base} OR ${found('t')} AS to_rated
    FROM (SELECT *, toDate(ts) AS day, ${target} AS to_currency FROM (${money})) AS m
      ASOF LEFT JOIN ${table} AS f ON f.currency = m.currency AND m.day >= f.day
      ASOF LEFT JOIN ${table} AS t ON t.currency = m.to_currency AND m.day >= t.day`;
}

export function clickhouseConverted(money: string, target: string, targetScale: string, w: string, rates: string, add: (v: string | number) => string): string {
  const amount = convertedSql('raw_amount', 'from_rate', 'from_scale', 'to_rate', targetScale);
  return `SELECT money_id, customer_id, ts, toInt64(if(from_rated AND to_rated, ${amount}, 0)) AS amount, ${target} AS currency, is_payment
    FROM (${clickhouseRated(money, target, w, rates, add)})`;
}

export function clickhouseMissingRate(money: string, target: string, from: string, to: string, w: string, rates: string, add: (v: string | number) => string): string {
  return `SELECT if(from_rated, ${target}, raw_currency) AS currency, toString(day) AS day
    FROM (${clickhouseRated(money, target, w, rates, add)})
    WHERE ts >= ${from} AND ts < ${to} AND NOT (from_rated AND to_rated)
    ORDER BY day, currency LIMIT 1`;
}
