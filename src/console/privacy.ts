// The privacy page (decisions §12): the workspace's requests with their status and counts, newest
// first, and a form to submit one. Requests under way are read again every few seconds.

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type PrivacyList, type PrivacyRequest } from './api.js';
import { ErrorNote, num, StatusBadge, useLoad, valueOf, when } from './ui.js';

const TYPES: [PrivacyRequest['type'], string][] = [
  ['delete', 'Delete'], ['suppress', 'Suppress'], ['suppress_and_delete', 'Suppress and delete'], ['unsuppress', 'Unsuppress'],
];
const KINDS: [string, string][] = [['email', 'Emails'], ['external_id', 'User ids'], ['visitor_id', 'Visitor ids']];
const UNDER_WAY_MS = 2000;

export function Privacy() {
  const list = useLoad((signal) => api<PrivacyList>('GET', '/v1/privacy/requests?limit=50', undefined, { signal }), []);
  const underWay = list.data?.data.some((r) => r.status === 'pending' || r.status === 'running') ?? false;
  useEffect(() => {
    if (!underWay) return;
    const timer = setTimeout(list.reload, UNDER_WAY_MS);
    return () => clearTimeout(timer);
  }, [list.data]);
  return html`<section aria-labelledby="privacy-title">
    <h1 id="privacy-title">Privacy</h1>
    <${RequestForm} onSubmitted=${list.reload} />
    <h2>Requests</h2>
    <${ErrorNote} error=${list.error} />
    ${list.data && list.data.data.length === 0 && html`<p class="empty">No request yet.</p>`}
    ${list.data && list.data.data.length > 0 && html`<div class="table-wrap"><table>
      <caption class="sr-only">Privacy requests, newest first</caption>
      <thead><tr><th scope="col">Submitted</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Identifiers</th>
        <th scope="col">Persons</th><th scope="col">Events</th><th scope="col">Page views</th><th scope="col">Customers</th><th scope="col">Finished</th></tr></thead>
      <tbody>${list.data.data.map((r) => html`<tr>
        <td>${when(r.created_at)}</td><td>${r.type}</td>
        <td><${StatusBadge} status=${r.status} />${r.error && html` <span class="danger">${r.error}</span>`}</td>
        <td>${num(r.identifiers.length)}</td><td>${num(r.counts.persons)}</td><td>${num(r.counts.events)}</td>
        <td>${num(r.counts.pageviews)}</td><td>${num(r.counts.customers)}</td><td>${when(r.finished_at)}</td>
      </tr>`)}</tbody>
    </table></div>`}
    <p class="hint">Only a SHA-256 of each identifier is kept. A deleted payer's payments stay, without email or person, attributed as before.</p>
  </section>`;
}

function RequestForm({ onSubmitted }: { onSubmitted: () => void }) {
  const [type, setType] = useState<PrivacyRequest['type']>('delete');
  const [kind, setKind] = useState('email');
  const [values, setValues] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [sent, setSent] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setSent(null);
    const identifiers = values.split('\n').map((v) => v.trim()).filter((v) => v !== '').map((v) => ({ [kind]: v }));
    if (type !== 'unsuppress' && type !== 'suppress' && !confirm(`Delete everything stored about ${identifiers.length} ${identifiers.length === 1 ? 'person' : 'people'}? This cannot be undone.`)) return;
    try {
      const accepted = await api<{ id: string }>('POST', '/v1/privacy/requests', { type, identifiers });
      setSent(accepted.id);
      setValues('');
      onSubmitted();
    } catch (err) {
      setError(err);
    }
  };
  return html`<form class="panel" onSubmit=${submit} aria-labelledby="privacy-form-title">
    <h2 id="privacy-form-title">New request</h2>
    <div class="row">
      <label>Type <select value=${type} onChange=${(e: Event) => setType(valueOf(e) as PrivacyRequest['type'])}>
        ${TYPES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select></label>
      <label>Identifiers <select value=${kind} onChange=${(e: Event) => setKind(valueOf(e))}>
        ${KINDS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select></label>
    </div>
    <label>One per line (up to 5,000)<br /><textarea rows="4" cols="40" value=${values} onInput=${(e: Event) => setValues(valueOf(e))} required></textarea></label>
    <div class="actions"><button type="submit" class="primary">Submit request</button></div>
    <${ErrorNote} error=${error} />
    ${sent && html`<p class="notice" role="status">Request ${sent} submitted.</p>`}
  </form>`;
}
