// The CLI report's amounts: minor units shown in major units with the currency, with Stripe's
// exponents (docs.stripe.com/currencies: zero-decimal, three-decimal, and ISK kept at two decimals).

import { describe, expect, it } from 'vitest';
import { majorUnits } from '../src/reports/money.js';

describe('majorUnits', () => {
  it('shows cents as dollars with the currency', () => {
    expect(majorUnits(15_700, 'usd')).toBe('157.00 USD');
    expect(majorUnits(5, 'eur')).toBe('0.05 EUR');
    expect(majorUnits(0, 'gbp')).toBe('0.00 GBP');
  });

  it('keeps a zero-decimal currency whole and a three-decimal one at three decimals', () => {
    expect(majorUnits(500, 'jpy')).toBe('500 JPY');
    expect(majorUnits(5_120, 'bhd')).toBe('5.120 BHD');
  });

  it('reads ISK as Stripe sends it: two decimals, 100 is one króna', () => {
    expect(majorUnits(10_000, 'isk')).toBe('100.00 ISK');
  });

  it('groups thousands, signs negatives and stays exact up to the largest safe integer', () => {
    expect(majorUnits(-123_456_789, 'usd')).toBe('-1,234,567.89 USD');
    expect(majorUnits(Number.MAX_SAFE_INTEGER, 'usd')).toBe('90,071,992,547,409.91 USD');
  });
});

describe('the console\'s money', () => {
  it('uses the same exponents: ISK and HUF at two decimals as Stripe sends them, JPY whole, USD in cents', async () => {
    const { money } = await import('../src/console/ui.js');
    expect(money(10_000, 'isk')).toBe('ISK\u00a0100.00');
    expect(money(123_456, 'huf')).toBe('HUF\u00a01,234.56');
    expect(money(500, 'jpy')).toBe('¥500');
    expect(money(15_700, 'usd')).toBe('$157.00');
  });
});
