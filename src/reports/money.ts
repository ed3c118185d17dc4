// Amounts in minor units, as the payment processor counts them, shown in major units with their
// currency. The exponent is Stripe's, not ISO 4217's: Stripe keeps ISK and HUF at two decimals
// (docs.stripe.com/currencies, "Zero-decimal", "Three-decimal" and "Special cases").

const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** The decimals of a currency's minor unit (2 unless Stripe says otherwise). */
export const minorDigits = (currency: string): number => {
  const c = currency.toLowerCase();
  return ZERO_DECIMAL.has(c) ? 0 : THREE_DECIMAL.has(c) ? 3 : 2;
};

/** `15700, "usd"` → `157.00 USD`; exact for any safe integer (no floating point division). */
export function majorUnits(minor: number, currency: string): string {
  const digits = minorDigits(currency);
  const scale = 10n ** BigInt(digits);
  const abs = BigInt(Math.abs(minor));
  const fraction = digits === 0 ? '' : `.${(abs % scale).toString().padStart(digits, '0')}`;
  return `${minor < 0 ? '-' : ''}${(abs / scale).toLocaleString('en-US')}${fraction} ${currency.toUpperCase()}`;
}
