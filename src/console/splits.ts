// An audience's splits (decisions §14) on its page: each split's name, percent and the destinations
// it is pushed to; a split pushed nowhere is a holdout. Saving PATCHes the whole list; the API
// checks it (percents adding up to 100, every destination named) and its faults are shown here.

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { type Audience, api, ApiError } from './api.js';
import { TYPE_NAMES, type DestinationType } from './destination-form.js';
import { ErrorNote, valueOf } from './ui.js';

interface Row { name: string; percent: string; destinations: number[] }

const rowsOf = (a: Audience): Row[] => a.splits.map((s) => ({ name: s.name, percent: String(s.percent), destinations: s.destinations }));
const destinationName = (a: Audience, i: number) => `${TYPE_NAMES[a.destinations[i]!.type as DestinationType] ?? a.destinations[i]!.type} ${i + 1}`;
/** Hundredths, so 33.33 + 33.33 + 33.34 shows as 100. */
const total = (rows: Row[]) => Math.round(rows.reduce((s, r) => s + Number(r.percent || 0) * 100, 0)) / 100;

/** The API's field faults (`/splits/1/percent: …`), one per line. */
function Faults({ error }: { error: unknown }) {
  const faults = error instanceof ApiError ? (error.body as { errors?: { field: string; message: string }[] } | null)?.errors : undefined;
  if (!faults?.length) return html`<${ErrorNote} error=${error} />`;
  return html`<ul class="notice error" role="alert">${faults.map((f) => html`<li><code>${f.field}</code>: ${f.message}</li>`)}</ul>`;
}

export function Splits({ audience, path, onChange }: { audience: Audience; path: string; onChange: () => void }) {
  const [rows, setRows] = useState<Row[]>(() => rowsOf(audience));
  const [error, setError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  const edit = (i: number, change: Partial<Row>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));
  const toggle = (i: number, d: number) => edit(i, {
    destinations: rows[i]!.destinations.includes(d) ? rows[i]!.destinations.filter((x) => x !== d) : [...rows[i]!.destinations, d].sort(),
  });
  // A first pair: everything pushed to every destination but a 10 % holdout.
  const start = () => setRows([
    { name: 'treatment', percent: '90', destinations: audience.destinations.map((_, i) => i) },
    { name: 'holdout', percent: '10', destinations: [] },
  ]);
  const save = async (list: Row[]) => {
    setError(null);
    // Said here rather than asked of the API, which would refuse it naming /splits.
    if (list.length > 0 && total(list) !== 100) {
      setError(new Error(`The percents add up to ${total(list)} %; they must add up to 100 %.`));
      return;
    }
    setSaving(true);
    try {
      await api('PATCH', path, { splits: list.map((r) => ({ name: r.name, percent: Number(r.percent), destinations: r.destinations })) });
      setRows(list);
      onChange();
    } catch (err) {
      setError(err);
    } finally {
      setSaving(false);
    }
  };
  const sum = total(rows);

  return html`<section class="splits panel" aria-labelledby="splits-title">
    <div class="page-head"><h2 id="splits-title">Splits</h2>
      ${audience.splits.length > 0 && html`<a class="button" href=${`#/lift/${encodeURIComponent(audience.id)}`}>Lift report</a>`}</div>
    <p class="hint">Each member is placed in a split by a hash of its profile, the same split at every refresh. A split sent to no destination is a holdout: compare the others' revenue with it in the lift report.</p>
    ${rows.length === 0
      ? html`<p class="empty">No splits: every member goes to every destination. <button type="button" onClick=${start}>Add a holdout</button></p>`
      : html`<div class="table-wrap"><table>
        <caption class="sr-only">Splits</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Percent</th><th scope="col">Sent to</th><th scope="col">Role</th><th scope="col">Actions</th></tr></thead>
        <tbody>${rows.map((r, i) => html`<tr data-split=${i}>
          <td><input aria-label=${`Split ${i + 1} name`} value=${r.name} maxlength="100" onInput=${(e: Event) => edit(i, { name: valueOf(e) })} /></td>
          <td><input class="narrow" type="number" min="0.01" max="100" step="0.01" aria-label=${`Split ${i + 1} percent`} value=${r.percent}
            onInput=${(e: Event) => edit(i, { percent: valueOf(e) })} /></td>
          <td>${audience.destinations.length === 0 ? html`<span class="muted">no destinations</span>`
            : audience.destinations.map((_, d) => html`<label class="kv"><input type="checkbox" checked=${r.destinations.includes(d)}
              onChange=${() => toggle(i, d)} /> ${destinationName(audience, d)}</label>`)}</td>
          <td>${r.destinations.length === 0 ? html`<span class="badge">holdout</span>` : 'pushed'}</td>
          <td><button type="button" class="small danger" aria-label=${`Remove split ${r.name || i + 1}`}
            onClick=${() => setRows(rows.filter((_, j) => j !== i))}>Remove</button></td>
        </tr>`)}</tbody>
        <tfoot><tr><th scope="row">Total</th><td class=${sum === 100 ? '' : 'failure'} data-testid="split-total">${sum} %</td><td colspan="3"></td></tr></tfoot>
      </table></div>`}
    <div class="actions">
      ${rows.length > 0 && html`<button type="button" onClick=${() => setRows([...rows, { name: '', percent: '', destinations: [] }])}>Add split</button>`}
      <button type="button" class="primary" disabled=${saving} onClick=${() => save(rows)}>Save splits</button>
      ${audience.splits.length > 0 && html`<button type="button" class="danger" onClick=${() => save([])}>Remove all splits</button>`}
    </div>
    <${Faults} error=${error} />
  </section>`;
}
