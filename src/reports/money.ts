// Amounts in minor units, as the payment processor counts them, shown in major units with their
// currency (the exponents are Stripe's: criteria/currency.ts).

import { minorDigits } from '../criteria/currency.js';

export { minorDigits };

/** `15700, "usd"` → `157.00 USD`; exact for any safe integer (no floating point division). */
export function majorUnits(minor: number, currency: string): string {
  const digits = minorDigits(currency);
  const scale = 10n ** BigInt(digits);
  const abs = BigInt(Math.abs(minor));
  const fraction = digits === 0 ? '' : `.${(abs % scale).toString().padStart(digits, '0')}`;
  return `${minor < 0 ? '-' : ''}${(abs / scale).toLocaleString('en-US')}${fraction} ${currency.toUpperCase()}`;
}
