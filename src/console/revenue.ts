// The revenue report: revenue over time by channel (or another grouping), stacked, one currency
// at a time, with the table under it.

import { html } from 'htm/preact';
import { useMemo, useState } from 'preact/hooks';
import { type Audience, api, ApiError, type Definitions, type Money, type RevenueReport } from './api.js';
import { colorAt, StackedBars } from './chart.js';
import { OP_LABELS, opsFor, parseValue, takesValue } from './criteria.js';
import { day, ErrorNote, minorUnits, money, num, useLoad, valueOf } from './ui.js';

const GROUPS: [string, string][] = [
  ['channel_category', 'channel category'], ['channel', 'channel'], ['campaign', 'campaign'], ['medium', 'medium'],
  ['referrer_host', 'referrer'], ['landing_path', 'landing page'],
];

/** The attribution models (docs/reports.md); all but first touch split each payment over its lookback. */
export const MODELS: [string, string][] = [
  ['first_touch', 'first touch'], ['last_touch', 'last touch'], ['last_non_direct', 'last non-direct'],
  ['linear', 'linear'], ['position_based', 'position-based (40/20/40)'], ['time_decay', 'time decay'],
];

const isoDay = (d: Date) => d.toISOString().slice(0, 10);

interface TraitFilter { key: string; op: string; text: string }

export function Revenue({ defs }: { defs: Definitions }) {
  const today = new Date();
  const [from, setFrom] = useState(isoDay(new Date(today.getTime() - 89 * 86_400_000)));
  const [to, setTo] = useState(isoDay(today));
  const [interval, setIntervalOf] = useState<'day' | 'week' | 'month'>('week');
  const [model, setModel] = useState('first_touch');
  const [lookback, setLookback] = useState('90');
  const [halfLife, setHalfLife] = useState('7');
  const [groupBy, setGroupBy] = useState('channel_category');
  const [filters, setFilters] = useState<TraitFilter[]>([]);
  const [audienceId, setAudienceId] = useState('');
  const [currency, setCurrency] = useState<string | null>(null);
  // Every amount converted to one currency at its day's exchange rate (rates loaded with `audiences rates load`).
  const [convertTo, setConvertTo] = useState('');
  const audiences = useLoad((signal) => api<{ data: Audience[] }>('GET', '/v1/audiences', undefined, { signal }), []);

  const filter = Object.fromEntries(filters.filter((f) => f.key).map((f) => [f.key,
    takesValue(f.op) ? { op: f.op, value: parseValue(f.text, 'json', f.op) } : { op: f.op }]));
  // The API's `to` is exclusive; the page's is the last day shown.
  const body = {
    from, to: isoDay(new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000)), interval, group_by: groupBy, model,
    ...(model !== 'first_touch' ? { lookback_days: Number(lookback) } : {}),
    ...(model === 'time_decay' ? { half_life_days: Number(halfLife) } : {}),
    ...(Object.keys(filter).length ? { filter } : {}),
    ...(audienceId ? { audience_id: audienceId } : {}),
    ...(/^[a-z]{3}$/i.test(convertTo) ? { currency: convertTo.toLowerCase() } : {}),
  };
  const request = JSON.stringify(body);
  const report = useLoad((signal) => api<RevenueReport>('POST', '/v1/reports/revenue', body, { signal }), [request]);
  const data = report.data;
  // By default the currency with the most revenue, not the alphabetically first.
  const currencies = data ? byRevenue(data) : [];
  const shown = data && (currency && currencies.includes(currency) ? currency : currencies[0]);

  const traitKeys = defs.traits.map((t) => `traits.${t}`);
  const setFilter = (i: number, change: Partial<TraitFilter>) => setFilters(filters.map((f, j) => (j === i ? { ...f, ...change } : f)));

  return html`<section aria-labelledby="revenue-title">
    <h1 id="revenue-title">Revenue</h1>
    <form class="controls panel" onSubmit=${(e: Event) => e.preventDefault()}>
      <label>From <input type="date" value=${from} max=${to} onChange=${(e: Event) => setFrom(valueOf(e))} /></label>
      <label>To <input type="date" value=${to} min=${from} onChange=${(e: Event) => setTo(valueOf(e))} /></label>
      <label>Interval <select value=${interval} onChange=${(e: Event) => setIntervalOf(valueOf(e) as typeof interval)}>
        <option value="day">day</option><option value="week">week</option><option value="month">month</option>
      </select></label>
      <label>Attribution <select value=${model} onChange=${(e: Event) => setModel(valueOf(e))}>
        ${MODELS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
      </select></label>
      ${model !== 'first_touch' && html`<label>Lookback (days) <input type="number" min="1" max="3650" step="1" value=${lookback}
        onChange=${(e: Event) => setLookback(valueOf(e))} /></label>`}
      ${model === 'time_decay' && html`<label>Half-life (days) <input type="number" min="1" max="3650" step="any" value=${halfLife}
        onChange=${(e: Event) => setHalfLife(valueOf(e))} /></label>`}
      <label>Group by <select value=${groupBy} onChange=${(e: Event) => setGroupBy(valueOf(e))}>
        ${GROUPS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
        ${traitKeys.map((k) => html`<option value=${k}>trait ${k.slice('traits.'.length)}</option>`)}
      </select></label>
      <label>People <select value=${audienceId} onChange=${(e: Event) => setAudienceId(valueOf(e))}>
        <option value="">everyone</option>
        ${(audiences.data?.data ?? []).map((a) => html`<option value=${a.id}>${a.name}</option>`)}
      </select></label>
      <fieldset class="filters">
        <legend>Trait filters</legend>
        ${filters.map((f, i) => html`<div class="row filter">
          <select aria-label="Trait" value=${f.key} onChange=${(e: Event) => setFilter(i, { key: valueOf(e) })}>
            ${traitKeys.map((k) => html`<option value=${k}>${k}</option>`)}
          </select>
          <select aria-label="Comparison" value=${f.op} onChange=${(e: Event) => setFilter(i, { op: valueOf(e) })}>
            ${opsFor({ type: 'json' }).map((op) => html`<option value=${op}>${OP_LABELS[op]}</option>`)}
          </select>
          ${takesValue(f.op) && html`<input aria-label="Value" value=${f.text} onChange=${(e: Event) => setFilter(i, { text: valueOf(e) })} />`}
          <button type="button" class="small danger" aria-label=${`Remove filter ${f.key}`} onClick=${() => setFilters(filters.filter((_, j) => j !== i))}>×</button>
        </div>`)}
        ${traitKeys.length > 0
          ? html`<button type="button" class="small" onClick=${() => setFilters([...filters, { key: traitKeys[0]!, op: '=', text: '' }])}>Add trait filter</button>`
          : html`<p class="hint">No traits seen yet.</p>`}
      </fieldset>
      <label>Convert to <input size="4" maxlength="3" placeholder="e.g. usd" value=${convertTo} aria-describedby="convert-hint"
        onChange=${(e: Event) => setConvertTo(valueOf(e).trim())} /></label>
      <p id="convert-hint" class="hint">A currency code: each amount at its day's exchange rate. Empty: figures per currency.</p>
      ${data && data.currencies.length > 1 && html`<label>Currency <select value=${shown} onChange=${(e: Event) => setCurrency(valueOf(e))}>
        ${currencies.map((c) => html`<option value=${c}>${c.toUpperCase()}</option>`)}
      </select></label>`}
    </form>
    ${report.error && html`<${ErrorNote} error=${report.error instanceof ApiError && report.error.status === 404
      ? new Error('This server has no revenue report yet (POST /v1/reports/revenue answered 404).') : report.error} />`}
    ${report.loading && html`<p class="hint">Loading…</p>`}
    ${data && data.hit_limit && html`<p class="notice warn">The report ran past its time budget: figures may be partial.</p>`}
    ${data && (shown ? html`<${Report} report=${data} currency=${shown} />` : html`<p class="empty">No revenue in this period.</p>`)}
  </section>`;
}

/** The starts of the buckets from `from` (inclusive) to `to` (exclusive), in UTC: weeks from Monday, months from the 1st. */
export function bucketsBetween(from: string, to: string, interval: RevenueReport['interval']): string[] {
  const d = new Date(from);
  const end = new Date(to).getTime();
  if (Number.isNaN(d.getTime()) || Number.isNaN(end)) return [];
  d.setUTCHours(0, 0, 0, 0);
  if (interval === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  if (interval === 'month') d.setUTCDate(1);
  const out: string[] = [];
  while (d.getTime() < end && out.length < 1000) {
    out.push(isoDay(d));
    if (interval === 'day') d.setUTCDate(d.getUTCDate() + 1);
    else if (interval === 'week') d.setUTCDate(d.getUTCDate() + 7);
    else d.setUTCMonth(d.getUTCMonth() + 1);
  }
  return out;
}

/** The report's currencies, the one with the most revenue first. */
function byRevenue(report: RevenueReport): string[] {
  const total = (c: string) => report.totals?.revenue[c] ?? report.rows.reduce((s, r) => s + (r.revenue[c] ?? 0), 0);
  return [...report.currencies].sort((a, b) => total(b) - total(a) || (a < b ? -1 : 1));
}

/** Groups without a value and payers without a touch: two greys told apart, never a palette colour. */
const NEUTRAL: Record<string, string> = { '(none)': '#767676', 'Non-attributed': '#2b2b2b' };

function Report({ report, currency }: { report: RevenueReport; currency: string }) {
  const amount = (m: Money | undefined) => m?.[currency] ?? 0;
  const major = 10 ** minorUnits(currency);
  // Only the rows with money in this currency: a group that had none is not listed.
  const rows = useMemo(() => report.rows.filter((r) => amount(r.revenue) !== 0 || amount(r.refunds) !== 0), [report, currency]);
  const { buckets, series } = useMemo(() => {
    // Every bucket of the range, those without money too, so the bars sit on an even time axis.
    const buckets = [...new Set([...bucketsBetween(report.from, report.to, report.interval), ...rows.map((r) => r.bucket.slice(0, 10))])].sort();
    const totals = new Map<string, number>();
    for (const r of rows) totals.set(r.group ?? '(none)', (totals.get(r.group ?? '(none)') ?? 0) + amount(r.revenue));
    const groups = [...totals.keys()].sort((a, b) => totals.get(b)! - totals.get(a)!);
    let next = 0;
    const series = groups.map((g) => ({
      label: g,
      color: NEUTRAL[g] ?? colorAt(next++),
      values: buckets.map((b) => rows.filter((r) => r.bucket.slice(0, 10) === b && (r.group ?? '(none)') === g).reduce((s, r) => s + amount(r.revenue), 0) / major),
    }));
    return { buckets, series };
  }, [rows]);
  const byBucket = useMemo(() => {
    const out = new Map<string, RevenueReport['rows']>();
    for (const r of rows) out.set(r.bucket, [...(out.get(r.bucket) ?? []), r]);
    return [...out];
  }, [rows]);
  const fmt = (v: number) => money(Math.round(v * major), currency);
  return html`
    <${StackedBars} buckets=${buckets} series=${series} format=${fmt} formatBucket=${day}
      label=${`Revenue in ${currency.toUpperCase()} per ${report.interval} by ${report.group_by.replace('_', ' ')}`} />
    <div class="table-wrap"><table class="revenue">
      <caption>Revenue in ${currency.toUpperCase()} per ${report.interval} by ${report.group_by}, ${report.model.replace('_', ' ')} attribution</caption>
      <thead><tr><th scope="col">${report.interval}</th><th scope="col">${report.group_by}</th><th scope="col" class="num">Revenue</th>
        <th scope="col" class="num">Refunds</th><th scope="col" class="num">Refund count</th><th scope="col" class="num">Paying customers</th>
        <th scope="col" class="num">New paying</th></tr></thead>
      ${byBucket.map(([bucket, group]) => html`<tbody class="bucket">${group.map((r, i) => html`<tr>
        ${i === 0 && html`<th scope="rowgroup" rowspan=${group.length}>${day(bucket)}</th>`}<td>${r.group ?? '(none)'}</td>
        <td class="num">${money(amount(r.revenue), currency)}</td><td class="num">${money(amount(r.refunds), currency)}</td>
        <td class="num">${num(r.refund_count)}</td><td class="num">${num(r.paying_customers)}</td><td class="num">${num(r.new_paying_customers)}</td></tr>`)}
      </tbody>`)}
      ${report.totals && html`<tfoot><tr><th scope="row" colspan="2">Total</th>
        <td class="num">${money(amount(report.totals.revenue), currency)}</td><td class="num">${money(amount(report.totals.refunds), currency)}</td>
        <td class="num">${num(report.totals.refund_count)}</td><td class="num">${num(report.totals.paying_customers)}</td>
        <td class="num">${num(report.totals.new_paying_customers)}</td></tr></tfoot>`}
    </table></div>`;
}

