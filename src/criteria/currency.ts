// Currencies as the payment processor counts them (minor units with Stripe's exponents, not ISO
// 4217's: Stripe keeps ISK and HUF at two decimals; docs.stripe.com/currencies, "Zero-decimal",
// "Three-decimal" and "Special cases"), and the revenue report's conversion at a day's exchange rate
// (decisions §14), printed alike by both dialects: the rates are per EUR (the ECB's reference
// rates), a day without one (a weekend, a holiday) takes the last published within RATE_LOOKBACK_DAYS.

export const ZERO_DECIMAL = ['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf'] as const;
export const THREE_DECIMAL = ['bhd', 'jod', 'kwd', 'omr', 'tnd'] as const;

/** The decimals of a currency's minor unit (2 unless Stripe says otherwise). */
export const minorDigits = (currency: string): number => {
  const c = currency.toLowerCase();
  return (ZERO_DECIMAL as readonly string[]).includes(c) ? 0 : (THREE_DECIMAL as readonly string[]).includes(c) ? 3 : 2;
};

/** A day's rate is the last published at most this many days before it (the ECB's longest closures are four days). */
export const RATE_LOOKBACK_DAYS = 7;

/** The base of the rates: 1 EUR is worth `per_eur` of a currency. */
export const RATE_BASE = 'eur';

const list = (codes: readonly string[]) => codes.map((c) => `'${c}'`).join(', ');

/** `10^digits` of the currency in `column` (lowercase), as SQL both dialects read (the lists are constants, never input). */
export const minorScaleSql = (column: string): string =>
  `CASE WHEN ${column} IN (${list(ZERO_DECIMAL)}) THEN 1 WHEN ${column} IN (${list(THREE_DECIMAL)}) THEN 1000 ELSE 100 END`;

/**
 * An amount in minor units of one currency in minor units of another, both at their rates per EUR:
 * `amount · to_rate · 10^to_digits / (from_rate · 10^from_digits)`, rounded to the nearest minor
 * unit, halves up (amounts are never negative). The same operations in the same order on both
 * engines, so both round alike.
 */
export const convertedSql = (amount: string, fromRate: string, fromScale: string, toRate: string, toScale: string): string =>
  `floor(${amount} * ${toRate} * ${toScale} / (${fromRate} * ${fromScale}) + 0.5)`;
