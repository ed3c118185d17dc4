// "Merge into…" on a person of the people lookup: name the person to merge into, read the preview
// of what moves (and whether both have a user id, which needs force), then merge. A merge cannot be
// undone, which the panel says before the button.

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api, type MergeAnswer, type MergePreview, type Person } from './api.js';
import { ErrorNote, num, valueOf } from './ui.js';

const KINDS: [string, string][] = [['email', 'Email'], ['external_id', 'User id'], ['person_id', 'Person id']];

const label = (p: { email: string | null; external_id: string | null; person_id: string | null }) => p.email ?? p.external_id ?? p.person_id ?? '';

export function MergeInto({ person, onDone }: { person: Person; onDone: (answer: MergeAnswer | null) => void }) {
  const [kind, setKind] = useState('email');
  const [value, setValue] = useState('');
  const [preview, setPreview] = useState<MergePreview | null>(null);
  const [force, setForce] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const body = () => ({ from: { person_id: person.person_id }, into: { [kind]: value.trim() }, ...(force ? { force: true } : {}) });

  const run = async (work: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const look = (e: Event) => {
    e.preventDefault();
    void run(async () => setPreview(await api<MergePreview>('POST', '/v1/persons/merge/preview', body())));
  };
  const merge = () => run(async () => onDone(await api<MergeAnswer>('POST', '/v1/persons/merge', body())));
  const changed = (set: (v: string) => void) => (e: Event) => {
    set(valueOf(e));
    setPreview(null);
  };

  return html`<section class="panel merge" aria-labelledby="merge-title">
    <h2 id="merge-title">Merge ${label(person)} into…</h2>
    <form class="search" onSubmit=${look}>
      <label>Into the person with <select value=${kind} onChange=${changed(setKind)}>
        ${KINDS.map(([k, name]) => html`<option value=${k}>${name}</option>`)}</select></label>
      <label>Value <input value=${value} onInput=${changed(setValue)} required /></label>
      <button type="submit" disabled=${busy}>Preview</button>
      <button type="button" onClick=${() => onDone(null)}>Cancel</button>
    </form>
    <${ErrorNote} error=${error} />
    ${preview && html`<div data-testid="merge-preview">
      <p>Moves <strong>${num(preview.moves.visitors)} visitors</strong> (with their page views and events) and${' '}
        <strong>${num(preview.moves.customers)} payment customers</strong> (with their revenue) to ${label(preview.into)}; its traits win${' '}
        over those of ${label(preview.from)}, whose identifiers name it from then on.</p>
      ${preview.needs_force && html`<label class="notice warn"><input type="checkbox" checked=${force}
        onChange=${(e: Event) => setForce((e.currentTarget as HTMLInputElement).checked)} /> Both have a user id: merge them anyway</label>`}
      <p class="danger">A merge cannot be undone.</p>
      <button type="button" class="primary" disabled=${busy || (preview.needs_force && !force)} onClick=${merge}>Merge into ${label(preview.into)}</button>
    </div>`}
  </section>`;
}
