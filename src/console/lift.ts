// The lift report (POST /v1/reports/lift, docs/reports.md): an audience's splits side by side, their
// revenue per member, and each one's difference from the holdout with its 95 % interval.

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { type Audience, api, type LiftReport } from './api.js';
import { MODELS } from './revenue.js';
import { ErrorNote, go, money, num, useLoad, valueOf } from './ui.js';

const isoDay = (d: Date) => d.toISOString().slice(0, 10);
const ALL_REVENUE = '';

export function Lift({ audienceId }: { audienceId: string | null }) {
  const today = new Date();
  const [from, setFrom] = useState(isoDay(new Date(today.getTime() - 89 * 86_400_000)));
  const [to, setTo] = useState(isoDay(today));
  const [model, setModel] = useState(ALL_REVENUE);
  const [lookback, setLookback] = useState('90');
  const [halfLife, setHalfLife] = useState('7');
  const [convertTo, setConvertTo] = useState('');
  const [currency, setCurrency] = useState<string | null>(null);
  const audiences = useLoad((signal) => api<{ data: Audience[] }>('GET', '/v1/audiences', undefined, { signal }), []);
  const withSplits = (audiences.data?.data ?? []).filter((a) => a.splits.length > 0);
  const chosen = audienceId ?? withSplits[0]?.id ?? null;

  const body = chosen && {
    audience_id: chosen, from, to: isoDay(new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000)),
    ...(model ? { model } : {}),
    ...(model && model !== 'first_touch' ? { lookback_days: Number(lookback) } : {}),
    ...(model === 'time_decay' ? { half_life_days: Number(halfLife) } : {}),
    ...(/^[a-z]{3}$/i.test(convertTo) ? { currency: convertTo.toLowerCase() } : {}),
  };
  const report = useLoad((signal) => (body ? api<LiftReport>('POST', '/v1/reports/lift', body, { signal }) : Promise.resolve(null)), [JSON.stringify(body)]);
  const data = report.data;
  const shown = data && (currency && data.currencies.includes(currency) ? currency : data.currencies[0]);

  return html`<section aria-labelledby="lift-title">
    <h1 id="lift-title">Lift</h1>
    <form class="controls panel" onSubmit=${(e: Event) => e.preventDefault()}>
      <label>Audience <select value=${chosen ?? ''} onChange=${(e: Event) => go(`/lift/${encodeURIComponent(valueOf(e))}`)}>
        ${withSplits.map((a) => html`<option value=${a.id}>${a.name}</option>`)}
      </select></label>
      <label>From <input type="date" value=${from} max=${to} onChange=${(e: Event) => setFrom(valueOf(e))} /></label>
      <label>To <input type="date" value=${to} min=${from} onChange=${(e: Event) => setTo(valueOf(e))} /></label>
      <label>Revenue <select value=${model} onChange=${(e: Event) => setModel(valueOf(e))}>
        <option value=${ALL_REVENUE}>all of the members' payments</option>
        ${MODELS.map(([v, l]) => html`<option value=${v}>attributed, ${l}</option>`)}
      </select></label>
      ${model && model !== 'first_touch' && html`<label>Lookback (days) <input type="number" min="1" max="3650" step="1" value=${lookback}
        onChange=${(e: Event) => setLookback(valueOf(e))} /></label>`}
      ${model === 'time_decay' && html`<label>Half-life (days) <input type="number" min="1" max="3650" step="any" value=${halfLife}
        onChange=${(e: Event) => setHalfLife(valueOf(e))} /></label>`}
      <label>Convert to <input size="4" maxlength="3" placeholder="e.g. usd" value=${convertTo} onChange=${(e: Event) => setConvertTo(valueOf(e).trim())} /></label>
      ${data && data.currencies.length > 1 && html`<label>Currency <select value=${shown} onChange=${(e: Event) => setCurrency(valueOf(e))}>
        ${data.currencies.map((c) => html`<option value=${c}>${c.toUpperCase()}</option>`)}
      </select></label>`}
    </form>
    ${audiences.data && withSplits.length === 0 && html`<p class="empty">No audience has splits yet: add a holdout on an audience's page.</p>`}
    <${ErrorNote} error=${report.error ?? audiences.error} />
    ${report.loading && html`<p class="hint">Loading…</p>`}
    ${data && data.hit_limit && html`<p class="notice warn">The report ran past its time budget: no figures.</p>`}
    ${data && !data.hit_limit && html`<${LiftTable} report=${data} currency=${shown ?? null} />`}
  </section>`;
}

function LiftTable({ report, currency }: { report: LiftReport; currency: string | null }) {
  const amount = (m: Record<string, number>) => money(currency ? m[currency] ?? 0 : 0, currency ?? 'usd');
  const what = report.model ? `revenue attributed by ${report.model.replace(/_/g, ' ')}` : 'all of the members\' revenue';
  return html`<div class="table-wrap"><table class="lift">
    <caption>Snapshot ${report.snapshot_id}: ${what}${currency ? ` in ${currency.toUpperCase()}` : ''}, each split against the holdout ${report.holdout ?? '(none)'}; 95 % interval by Welch's standard error</caption>
    <thead><tr><th scope="col">Split</th><th scope="col" class="num">Percent</th><th scope="col" class="num">Members</th><th scope="col" class="num">Paying members</th>
      <th scope="col" class="num">Revenue</th><th scope="col" class="num">Revenue per member</th><th scope="col" class="num">Difference from holdout</th><th scope="col">95 % interval</th></tr></thead>
    <tbody>${report.splits.map((s) => {
      const d = currency ? s.difference?.[currency] : undefined;
      return html`<tr data-split=${s.name}><th scope="row">${s.name}${s.holdout ? html` <span class="badge">holdout</span>` : ''}</th>
        <td class="num">${s.percent} %</td><td class="num">${num(s.members)}</td><td class="num">${num(s.paying_members)}</td>
        <td class="num">${amount(s.revenue)}</td><td class="num">${amount(s.revenue_per_member)}</td>
        <td class="num">${d ? money(d.estimate, currency!) : '—'}</td><td>${d ? `${money(d.low, currency!)} to ${money(d.high, currency!)}` : ''}</td></tr>`;
    })}</tbody>
  </table></div>
  ${currency === null && html`<p class="empty">No revenue in this period.</p>`}`;
}
