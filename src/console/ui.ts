// Small pieces shared by the pages: formatting, notices, the hash router.

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { message } from './api.js';
import { minorDigits } from '../reports/money.js';

export const valueOf = (e: Event): string => (e.currentTarget as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement).value;

const numbers = new Intl.NumberFormat('en-US');
export const num = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : numbers.format(n));

// One date format on every page: `28 Nov 2026`, with `, 14:05 UTC` for an instant.
const dates = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeZone: 'UTC' });
const instants = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${instants.format(d)} UTC`;
}

/** A day (an ISO date, or the date of an instant) in the pages' date format. */
export function day(iso: string): string {
  const d = new Date(`${iso.slice(0, 10)}T00:00:00Z`);
  return Number.isNaN(d.getTime()) ? iso : dates.format(d);
}

/** Money in minor units of `currency`, with the decimals the payment processor counts in (JPY none; ISK two, unlike ISO 4217). */
export function money(minor: number | undefined, currency: string): string {
  const digits = minorUnits(currency);
  const format = new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase(), minimumFractionDigits: digits, maximumFractionDigits: digits });
  return format.format((minor ?? 0) / 10 ** digits);
}

export const minorUnits = minorDigits;

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return html`<p class="notice error" role="alert">${message(error)}</p>`;
}

export function StatusBadge({ status }: { status: string }) {
  return html`<span class=${`badge badge-${status}`}>${status}</span>`;
}

/** The hash route (`#/audiences/aud_1` → `/audiences/aud_1`), kept current. */
export function useRoute(): string {
  const read = () => location.hash.replace(/^#/, '') || '/builder';
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export const go = (route: string) => {
  location.hash = `#${route}`;
};

/** Runs `load` when `deps` change; the latest answer wins. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(controller.signal).then(
      (data) => { if (!controller.signal.aborted) setState({ data, error: null, loading: false }); },
      (error: unknown) => { if (!controller.signal.aborted) setState({ data: undefined, error, loading: false }); },
    );
    return () => controller.abort();
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((n) => n + 1) };
}
