// The ECB's euro foreign exchange reference rates as published in CSV (eurofxref-hist.csv, and the
// daily eurofxref.csv): a header `Date,USD,JPY,…` (often with a trailing comma), then a line per
// working day, newest first, each rate the units of the currency one EUR buys, `N/A` (or empty)
// where the ECB published none that day (a currency it no longer quotes, or not yet).

import type { ExchangeRate } from '../store/control/rates.js';

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

export class RatesFileError extends Error {}

/** `2025-11-28`, or the daily file's `28 November 2025`; null when it is neither (or no such day). */
function dayOf(text: string): string | null {
  let iso: string | null = /^\d{4}-\d{2}-\d{2}$/.test(text) ? text : null;
  const spelled = /^(\d{1,2}) ([A-Za-z]+) (\d{4})$/.exec(text);
  const month = spelled ? MONTHS.indexOf(spelled[2]!.toLowerCase()) : -1;
  if (spelled && month >= 0) iso = `${spelled[3]}-${String(month + 1).padStart(2, '0')}-${spelled[1]!.padStart(2, '0')}`;
  const at = iso === null ? NaN : Date.parse(`${iso}T00:00:00Z`);
  return !Number.isNaN(at) && new Date(at).toISOString().slice(0, 10) === iso ? iso : null;
}

/** The rates of the file; a line that is not the format names its number. */
export function parseEcbRates(text: string): ExchangeRate[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const header = lines[0]!.split(',').map((h) => h.trim());
  if (header[0] !== 'Date') throw new RatesFileError('line 1: expected the ECB header Date,USD,JPY,… (eurofxref-hist.csv)');
  const currencies = header.slice(1).map((code, i) => {
    if (code !== '' && !/^[A-Z]{3}$/.test(code)) throw new RatesFileError(`line 1, column ${i + 2}: "${code}" is not a currency code`);
    return code.toLowerCase();
  });
  // A day twice keeps its last line's rates (one row per day and currency).
  const rates = new Map<string, ExchangeRate>();
  lines.slice(1).forEach((line, i) => {
    if (line.trim() === '') return;
    const cells = line.split(',').map((c) => c.trim());
    const day = dayOf(cells[0]!);
    if (day === null) throw new RatesFileError(`line ${i + 2}: "${cells[0]}" is not a date`);
    currencies.forEach((currency, c) => {
      const cell = cells[c + 1] ?? '';
      if (currency === '' || cell === '' || cell === 'N/A') return;
      const perEur = Number(cell);
      if (!/^\d+(\.\d+)?$/.test(cell) || !(perEur > 0)) throw new RatesFileError(`line ${i + 2}, ${currency.toUpperCase()}: "${cell}" is not a rate`);
      rates.set(`${day} ${currency}`, { day, currency, perEur });
    });
  });
  return [...rates.values()];
}
