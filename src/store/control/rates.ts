// The workspace's exchange rates (decisions §14): per day and currency, how much of the currency
// one EUR buys (the ECB's reference rates). A load overwrites the days and currencies it holds; the
// analytical engine keeps a copy where its queries cannot read this table in place (RatesMirror).

import { stringifyWellFormed } from '../../well-formed.js';
import type { ControlTx } from './store.js';

export interface ExchangeRate {
  /** `YYYY-MM-DD`. */
  day: string;
  /** Lowercase ISO 4217 code. */
  currency: string;
  perEur: number;
}

/** The copy of the rates an analytical engine keeps when it cannot read the control table in place (ClickHouse). */
export interface RatesMirror {
  exchangeRates(ws: string, rates: ExchangeRate[]): Promise<void>;
}

/** Rows bound as one JSON parameter per statement, in chunks of this many. */
const CHUNK = 20_000;

export async function writeRates({ control: tx, mirror }: { control: ControlTx; mirror: RatesMirror }, ws: string, rates: ExchangeRate[]): Promise<void> {
  for (let i = 0; i < rates.length; i += CHUNK) {
    const chunk = rates.slice(i, i + CHUNK);
    const json = stringifyWellFormed(chunk.map((r) => ({ day: r.day, currency: r.currency, per_eur: String(r.perEur) })));
    await tx.run(`INSERT INTO exchange_rates (workspace_id, currency, day, per_eur)
      SELECT $1, r.currency, CAST(r.day AS DATE), CAST(r.per_eur AS FLOAT8) FROM ${tx.dialect.jsonRows('$2', 'r', { day: 'text', currency: 'text', per_eur: 'text' })}
      ON CONFLICT (workspace_id, currency, day) DO UPDATE SET per_eur = excluded.per_eur`, [ws, json]);
  }
  await mirror.exchangeRates(ws, rates);
}

/** The days the workspace's rates cover, and their currencies; null days when it has none. */
export async function ratesSummary(tx: Pick<ControlTx, 'all'>, ws: string): Promise<{ first: string | null; last: string | null; currencies: number }> {
  const rows = await tx.all(`SELECT CAST(min(day) AS TEXT) AS first, CAST(max(day) AS TEXT) AS last, count(DISTINCT currency) AS currencies
    FROM exchange_rates WHERE workspace_id = $1`, [ws]);
  const r = rows[0] ?? {};
  return { first: (r.first as string | null) ?? null, last: (r.last as string | null) ?? null, currencies: Number(r.currencies ?? 0) };
}
