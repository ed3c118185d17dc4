// The revenue report's `currency` (decisions §14): each amount at its day's rate of the workspace's
// exchange rates, loaded from the ECB's CSV (the eurofxref-hist.csv layout: header with a trailing
// comma, newest day first, N/A where a currency has no rate), cross rates through EUR, minor units
// with Stripe's exponents; a weekend takes Friday's rate; a day without a rate is a 400 naming it.
// Figures checked against a plain TypeScript conversion of the same payments.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minorDigits } from '../src/criteria/currency.js';
import { parseEcbRates, RatesFileError } from '../src/reports/rates.js';
import { type ExchangeRate, writeRates } from '../src/store/control/rates.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { deliver, invoice, notification } from './support/stripe.js';

// Rates per EUR in the ECB's layout (values of the kind the ECB publishes; 2025-09-05 is a Friday).
const ECB_CSV = `Date,USD,JPY,BGN,CYP,GBP,KWD,
2025-09-05,1.1717,172.81,1.9558,N/A,0.86793,0.3578,
2025-09-04,1.1645,172.27,1.9558,N/A,0.8668,0.3557,
2025-09-03,1.1652,172.46,1.9558,N/A,0.8688,0.3561,
`;

const s = (iso: string) => Date.parse(iso) / 1000;
/** Payments: [time, amount in minor units, currency]. A Saturday's GBP, a zero-decimal JPY, a three-decimal KWD, EUR itself. */
const PAYMENTS: [string, number, string][] = [
  ['2025-09-03T12:00:00Z', 10_000, 'usd'], ['2025-09-04T08:00:00Z', 5_000, 'jpy'], ['2025-09-05T23:59:59Z', 1_234, 'eur'],
  ['2025-09-06T12:00:00Z', 2_599, 'gbp'], ['2025-09-07T12:00:00Z', 12_345, 'kwd'],
];

/** The rate of `currency` on `day`: the last published on or before it (EUR is 1). */
function rateOn(rates: ExchangeRate[], currency: string, day: string): number {
  if (currency === 'eur') return 1;
  const found = rates.filter((r) => r.currency === currency && r.day <= day).sort((a, b) => (a.day < b.day ? 1 : -1))[0];
  if (!found) throw new Error(`no rate of ${currency} on ${day}`);
  return found.perEur;
}

/** The reference: amount · to · 10^to_digits / (from · 10^from_digits), to the nearest minor unit, halves up. */
function converted(amount: number, from: string, to: string, day: string, rates: ExchangeRate[]): number {
  return Math.floor(amount * rateOn(rates, to, day) * 10 ** minorDigits(to) / (rateOn(rates, from, day) * 10 ** minorDigits(from)) + 0.5);
}

describe('the ECB rates file', () => {
  it('reads each day and currency with a rate, none for N/A, lowercase codes', () => {
    const rates = parseEcbRates(ECB_CSV);
    expect(rates).toHaveLength(15);
    expect(rates).toContainEqual({ day: '2025-09-05', currency: 'gbp', perEur: 0.86793 });
    expect(rates.some((r) => r.currency === 'cyp')).toBe(false);
  });

  it('refuses what is not the ECB\'s layout, naming the line', () => {
    expect(() => parseEcbRates('day,USD\n2025-01-01,1.1')).toThrow(RatesFileError);
    expect(() => parseEcbRates('Date,USD,\n2025-13-01,1.1,')).toThrow(/line 2: "2025-13-01" is not a date/);
    expect(() => parseEcbRates('Date,USD,\n2025-01-02,-1,')).toThrow(/line 2, USD: "-1" is not a rate/);
  });
});

describe.each(ENGINES_WITH_POSTGRES)('revenue in one currency on %s', (engine) => {
  let t: TestApp;
  const rates = parseEcbRates(ECB_CSV);

  // A budget no report of this file reaches on a loaded machine: the figures are what is tested here.
  // One workspace for the file's tests (they read it; the last one adds a payment).
  beforeAll(async () => {
    t = await startTestApp({ engine, budgetMs: 60_000 });
    await t.stores.analytics.unit((work) => writeRates(work, t.ws.workspace_id, rates));
    for (const [i, [at, amount, currency]] of PAYMENTS.entries()) {
      const paid = invoice('cus_x', { id: `in_${i}`, amount, currency, created: s(at), paid_at: s(at) });
      const res = await deliver(t, notification('invoice.paid', paid, s(at)));
      expect(res.statusCode, res.body).toBe(200);
    }
  });
  afterAll(() => t.close());

  const report = (body: Record<string, unknown>) =>
    t.post('/v1/reports/revenue', { from: '2025-09-01', to: '2025-09-08', interval: 'day', group_by: 'channel_category', ...body });

  it('converts each payment at its day\'s rate, a weekend at Friday\'s, as the reference does, into USD and into JPY', async () => {
    for (const to of ['usd', 'jpy']) {
      const res = await report({ currency: to.toUpperCase() });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.currencies).toEqual([to]);
      const byDay = Object.fromEntries(body.rows.map((r: { bucket: string; revenue: Record<string, number> }) => [r.bucket, r.revenue[to]]));
      const expected = Object.fromEntries(PAYMENTS.map(([at, amount, from]) => [at.slice(0, 10), converted(amount, from, to, at.slice(0, 10), rates)]));
      expect(byDay).toEqual(expected);
      expect(body.totals.revenue).toEqual({ [to]: Object.values(expected).reduce((a, b) => a + b, 0) });
    }
  });

  it('a model splitting payments keeps the converted totals', async () => {
    const first = await report({ currency: 'usd' });
    const linear = await report({ currency: 'usd', model: 'linear' });
    expect(linear.json().totals).toEqual(first.json().totals);
  });

  it('without currency, figures stay per currency', async () => {
    const res = await report({});
    expect(res.json().currencies).toEqual(['eur', 'gbp', 'jpy', 'kwd', 'usd']);
  });

  it('refuses a currency that is not a three-letter code', async () => {
    const res = await report({ currency: 'dollars' });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].field).toBe('/currency');
  });

  it('a day past the last rate (more than a week) is a 400 naming the currency and the day', async () => {
    const late = invoice('cus_x', { id: 'in_late', amount: 500, currency: 'gbp', created: s('2025-09-20T10:00:00Z'), paid_at: s('2025-09-20T10:00:00Z') });
    expect((await deliver(t, notification('invoice.paid', late, s('2025-09-20T10:00:00Z')))).statusCode).toBe(200);
    const res = await report({ currency: 'usd', to: '2025-09-30' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/currency', message: expect.stringMatching(/GBP on 2025-09-20/) }] });
    // The report's own currency without a rate names it: CHF was never loaded.
    const chf = await report({ currency: 'chf' });
    expect(chf.statusCode).toBe(400);
    expect(chf.json().errors[0].message).toMatch(/CHF on 2025-09-03/);
    expect((await report({ currency: 'usd' })).statusCode).toBe(200);
  });
});
