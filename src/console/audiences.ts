// Saved audiences: the list, and one audience with its members (paged, exports), destinations
// (destinations.ts), splits (splits.ts), delivery log and a refresh-now button.

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { type Audience, api, type Delivery, download, type SnapshotMember } from './api.js';
import { Destinations } from './destinations.js';
import { Splits } from './splits.js';
import { ErrorNote, go, num, StatusBadge, useLoad, when } from './ui.js';

export function AudienceList() {
  const { data, error, loading } = useLoad((signal) => api<{ data: Audience[] }>('GET', '/v1/audiences', undefined, { signal }), []);
  return html`<section aria-labelledby="list-title">
    <div class="page-head">
      <h1 id="list-title">Audiences</h1>
      <a class="button primary" href="#/builder">New audience</a>
    </div>
    <${ErrorNote} error=${error} />
    ${loading && !data && html`<p class="hint">Loading…</p>`}
    ${data && data.data.length === 0 && html`<p class="empty">No audiences yet. <a href="#/builder">Build the first one.</a></p>`}
    ${data && data.data.length > 0 && html`<div class="table-wrap"><table>
      <caption class="sr-only">Saved audiences</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col" class="num">Members</th>
        <th scope="col">Last refresh</th><th scope="col">Next refresh</th><th scope="col">Failure</th></tr></thead>
      <tbody>${data.data.map((a) => html`<tr>
        <td><a href=${`#/audiences/${a.id}`}>${a.name}</a></td>
        <td><${StatusBadge} status=${a.status} /></td>
        <td class="num">${num(a.member_count)}</td>
        <td>${when(a.last_refreshed_at)}</td>
        <td>${when(a.next_refresh_at)}</td>
        <td class="failure">${a.last_error ?? ''}</td>
      </tr>`)}</tbody>
    </table></div>`}
  </section>`;
}

const PAGE_SIZE = 50;
/** How often an audience waiting for its refresh (saved, or its criteria changed) is asked for again. */
const POLL_MS = 1000;

export function AudienceDetail({ id }: { id: string }) {
  const path = `/v1/audiences/${encodeURIComponent(id)}`;
  const audience = useLoad((signal) => api<Audience>('GET', path, undefined, { signal }), [id]);
  const [refreshing, setRefreshing] = useState(false);
  const [actionError, setActionError] = useState<unknown>(null);
  const [version, setVersion] = useState(0);
  // Pending until the scheduler refreshes it: asked again until the refresh is done.
  const settling = audience.data?.status === 'pending' || audience.data?.status === 'refreshing';
  useEffect(() => {
    if (!settling) return;
    const timer = setTimeout(audience.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [settling, audience.data]);

  const refresh = async () => {
    setRefreshing(true);
    setActionError(null);
    try {
      await api<Audience>('POST', `${path}/refresh`);
      audience.reload();
      setVersion((v) => v + 1);
    } catch (err) {
      setActionError(err);
    } finally {
      setRefreshing(false);
    }
  };
  const remove = async () => {
    if (!confirm('Delete this audience, its snapshots and delivery log?')) return;
    try {
      await api('DELETE', path);
      go('/audiences');
    } catch (err) {
      setActionError(err);
    }
  };

  const a = audience.data;
  if (!a) return html`<section><${ErrorNote} error=${audience.error} />${audience.loading && html`<p class="hint">Loading…</p>`}</section>`;
  return html`<section aria-labelledby="audience-title">
    <div class="page-head">
      <h1 id="audience-title">${a.name}</h1>
      <div class="actions">
        <button type="button" class="primary" onClick=${refresh} disabled=${refreshing}>${refreshing ? 'Refreshing…' : 'Refresh now'}</button>
        <a class="button" href=${`#/audiences/${a.id}/edit`}>Edit criteria</a>
        <button type="button" class="danger" onClick=${remove}>Delete</button>
      </div>
    </div>
    <${ErrorNote} error=${actionError} />
    <dl class="facts-grid">
      <div><dt>Status</dt><dd><${StatusBadge} status=${a.status} /></dd></div>
      <div><dt>Members</dt><dd data-testid="member-count">${num(a.member_count)}</dd></div>
      <div><dt>Last refresh</dt><dd>${when(a.last_refreshed_at)}</dd></div>
      <div><dt>Next refresh</dt><dd>${when(a.next_refresh_at)}</dd></div>
      <div><dt>Refreshes every</dt><dd>${a.refresh_every}</dd></div>
      <div><dt>Time-windowed</dt><dd>${a.is_time_windowed ? 'yes' : 'no'}</dd></div>
    </dl>
    ${a.last_error && html`<p class="notice error">Last refresh failed: ${a.last_error}</p>`}
    <${Members} path=${path} id=${a.id} version=${`${version}:${a.last_refreshed_at}`} />
    <${Destinations} path=${path} destinations=${a.destinations} version=${`${version}:${a.updated_at}`}
      onChange=${() => { audience.reload(); setVersion((v) => v + 1); }} />
    <${Splits} key=${a.updated_at} audience=${a} path=${path} onChange=${() => { audience.reload(); setVersion((v) => v + 1); }} />
    <${Deliveries} path=${path} version=${version} />
  </section>`;
}

function Members({ path, id, version }: { path: string; id: string; version: string }) {
  // The cursors of the pages before this one, to go back.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad((signal) => api<{ data: SnapshotMember[]; next_cursor: string | null }>('GET',
    `${path}/members?limit=${PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, undefined, { signal }), [cursor, version]);
  const [exportError, setExportError] = useState<unknown>(null);
  const exportAs = (format: string) => download(`${path}/members?format=${format}`, `${id}.${format}`).then(() => setExportError(null), setExportError);
  const first = (cursors.length - 1) * PAGE_SIZE;
  const split = page.data?.data.some((m) => m.split !== undefined) ?? false;
  return html`<div class="members">
    <div class="page-head">
      <h2>Members</h2>
      <div class="actions" role="group" aria-label="Export members">
        ${['csv', 'parquet', 'arrow'].map((f) => html`<button type="button" onClick=${() => exportAs(f)}>Export ${f === 'csv' ? 'CSV' : f === 'arrow' ? 'Arrow' : 'Parquet'}</button>`)}
      </div>
    </div>
    <${ErrorNote} error=${exportError ?? page.error} />
    ${page.data && page.data.data.length === 0 && html`<p class="empty">No members in the current snapshot${cursor ? ' page' : ' (refresh to compute one)'}.</p>`}
    ${page.data && page.data.data.length > 0 && html`<div class="table-wrap"><table>
      <caption class="sr-only">Members ${first + 1} to ${first + page.data.data.length}</caption>
      <thead><tr><th scope="col">Person</th><th scope="col">External id</th><th scope="col">Email</th><th scope="col">Visitor</th>${split && html`<th scope="col">Split</th>`}</tr></thead>
      <tbody>${page.data.data.map((m) => html`<tr><td><code>${m.person_id ?? '—'}</code></td><td>${m.external_id ?? ''}</td>
        <td>${m.email ?? ''}</td><td><code>${m.visitor_id ?? ''}</code></td>${split && html`<td>${m.split}</td>`}</tr>`)}</tbody>
    </table></div>`}
    <div class="pager">
      <button type="button" disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Previous</button>
      <span>${page.data ? `${page.data.data.length === 0 ? 0 : first + 1}–${first + page.data.data.length}` : ''}</span>
      <button type="button" disabled=${!page.data?.next_cursor} onClick=${() => setCursors([...cursors, page.data!.next_cursor!])}>Next</button>
    </div>
  </div>`;
}

function Deliveries({ path, version }: { path: string; version: number }) {
  const log = useLoad((signal) => api<{ data: Delivery[] }>('GET', `${path}/deliveries?limit=20`, undefined, { signal }), [path, version]);
  return html`<h2>Delivery log</h2>
    <${ErrorNote} error=${log.error} />
    ${log.data && log.data.data.length === 0 && html`<p class="hint">Nothing delivered yet.</p>`}
    ${log.data && log.data.data.length > 0 && html`<div class="table-wrap"><table><caption class="sr-only">Deliveries</caption>
      <thead><tr><th scope="col">When</th><th scope="col">Destination</th><th scope="col">Status</th><th scope="col" class="num">Pages</th>
        <th scope="col" class="num">Attempts</th><th scope="col">Last error</th></tr></thead>
      <tbody>${log.data.data.map((d) => html`<tr><td>${when(d.created_at)}</td><td><code>${d.destination_id}</code></td>
        <td><${StatusBadge} status=${d.status} /></td><td class="num">${d.pages_delivered}</td><td class="num">${d.attempts.length}</td>
        <td class="failure">${d.last_error ?? ''}</td></tr>`)}</tbody>
    </table></div>`}`;
}
