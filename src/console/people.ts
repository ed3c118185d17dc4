// The people lookup: who paid, how their payments link to a visitor, and their first-touch channel;
// a person can be deleted from here (a privacy request, decisions §12).

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api, type MergeAnswer, type PeoplePage, type Person } from './api.js';
import { MergeInto } from './merge.js';
import { ErrorNote, valueOf } from './ui.js';

export function People() {
  const [q, setQ] = useState('');
  const [people, setPeople] = useState<Person[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const [merging, setMerging] = useState<Person | null>(null);
  const [merged, setMerged] = useState<MergeAnswer | null>(null);
  const [deleted, setDeleted] = useState<string | null>(null);

  /** A delete request by the person's user id, else its email (the identifiers a request takes). */
  const remove = async (p: Person) => {
    const identifier = p.external_id !== null ? { external_id: p.external_id } : { email: p.email! };
    if (!confirm(`Delete ${p.email ?? p.external_id} and everything stored about them? Their payments stay, without email or person. This cannot be undone.`)) return;
    setError(null);
    try {
      const accepted = await api<{ id: string }>('POST', '/v1/privacy/requests', { type: 'delete', identifiers: [identifier] });
      setDeleted(accepted.id);
      setPeople((people ?? []).filter((q) => q !== p));
    } catch (err) {
      setError(err);
    }
  };

  const load = async (cursor?: string) => {
    setLoading(true);
    setError(null);
    try {
      const page = await api<PeoplePage>('GET', `/people?q=${encodeURIComponent(q)}&limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      setPeople(cursor ? [...(people ?? []), ...page.data] : page.data);
      setNext(page.next_cursor);
    } catch (err) {
      setError(err);
    } finally {
      setLoading(false);
    }
  };

  return html`<section aria-labelledby="people-title">
    <h1 id="people-title">People</h1>
    <form class="search" role="search" onSubmit=${(e: Event) => { e.preventDefault(); void load(); }}>
      <label>Email, user id, name or customer id <input type="search" value=${q} onInput=${(e: Event) => setQ(valueOf(e))} /></label>
      <button type="submit" class="primary" disabled=${loading}>Look up</button>
    </form>
    <${ErrorNote} error=${error} />
    ${deleted && html`<p class="notice" role="status">Deletion requested (${deleted}): its progress is on the <a href="#/privacy">Privacy</a> page.</p>`}
    ${people && people.length === 0 && html`<p class="empty">Nobody matches “${q}”.</p>`}
    ${people && people.length > 0 && html`<div class="table-wrap"><table>
      <caption class="sr-only">People matching ${q}</caption>
      <thead><tr><th scope="col">Email</th><th scope="col">User id</th><th scope="col">Name</th><th scope="col">Customers</th>
        <th scope="col">Link state</th><th scope="col">First-touch channel</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${people.map((p) => html`<tr>
        <td>${p.email ?? ''}</td><td>${p.external_id ?? ''}</td><td>${p.name ?? ''}</td>
        <td>${p.customer_ids.map((c) => html`<code class="kv">${c}</code>`)}</td>
        <td>${p.link_state ?? '—'}</td>
        <td><span class=${p.first_touch_channel === 'Non-attributed' ? 'muted' : 'channel'}>${p.first_touch_channel}</span></td>
        <td>${p.person_id && html`<button type="button" class="small" onClick=${() => { setMerged(null); setMerging(p); }}>Merge into…</button>`}
          ${p.person_id !== null && (p.external_id !== null || p.email !== null)
          && html`<button type="button" class="small danger" onClick=${() => remove(p)}>Delete this person</button>`}</td>
      </tr>`)}</tbody>
    </table></div>`}
    ${merging && html`<${MergeInto} key=${merging.person_id} person=${merging} onDone=${(answer: MergeAnswer | null) => {
      setMerging(null);
      setMerged(answer);
      if (answer) void load();
    }} />`}
    ${merged && html`<p class="notice" role="status">Merged: ${merged.moved.visitors} visitors and ${merged.moved.customers} payment customers moved to ${merged.person_id}.</p>`}
    ${next && html`<button type="button" onClick=${() => load(next)} disabled=${loading}>More</button>`}
    <p class="hint">A payer still Non-attributed minutes after checkout means the payment metadata (tr_user_id, tr_visitor_id) is not arriving.</p>
  </section>`;
}
