// An audience's destinations: each with its settings (never its credentials), its last delivery
// (added, removed, skipped, errors), Send now, edit and remove; and a form to add one. Saving
// PATCHes the whole list, the other destinations by id without credentials, so theirs are kept.

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Delivery, type PublicDestination } from './api.js';
import { DestinationForm, type DestinationType, TYPE_NAMES } from './destination-form.js';
import { ErrorNote, num, StatusBadge, useLoad, when } from './ui.js';

/** A destination as sent back: its shown settings and id; credentials left out are kept. */
const kept = (d: PublicDestination): Record<string, unknown> => ({ ...d });

const SETTINGS: Record<string, string> = {
  url: 'URL', audience_id: 'Audience', customer_id: 'Customer', user_list_id: 'List', login_customer_id: 'Manager', api: 'API',
};

function Settings({ d }: { d: PublicDestination }) {
  const consent = d.consent as { ad_user_data?: string; ad_personalization?: string } | undefined;
  return html`${Object.entries(SETTINGS).filter(([key]) => typeof d[key] === 'string').map(([key, label]) => html`<span class="kv">${label}: ${d[key] as string}</span>`)}
    ${consent && html`<span class="kv">Consent: ad user data ${consent.ad_user_data}, ad personalization ${consent.ad_personalization}</span>`}
    <span class="kv muted">credentials saved (write-only)</span>`;
}

function LastDelivery({ delivery }: { delivery: Delivery | undefined }) {
  if (!delivery) return html`<span class="muted">No delivery yet</span>`;
  const problems = delivery.attempts.filter((a) => a.error).slice(-3);
  return html`<${StatusBadge} status=${delivery.status} /> ${when(delivery.finished_at ?? delivery.created_at)}
    <span class="kv" data-testid="delivery-counts">added ${num(delivery.added)}, removed ${num(delivery.removed)}, skipped ${num(delivery.skipped)}</span>
    ${delivery.last_error && html`<p class="failure">${delivery.last_error}</p>`}
    ${problems.length > 0 && html`<ul class="attempt-errors">${problems.map((a) => html`<li>${a.request}: ${a.error}</li>`)}</ul>`}`;
}

export function Destinations({ path, destinations, version, onChange }: {
  path: string;
  destinations: PublicDestination[];
  version: string;
  onChange: () => void;
}) {
  const [tick, setTick] = useState(0);
  const log = useLoad((signal) => api<{ data: Delivery[] }>('GET', `${path}/deliveries?limit=50`, undefined, { signal }), [path, version, tick]);
  const [editing, setEditing] = useState<PublicDestination | 'new' | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [queued, setQueued] = useState<string | null>(null);
  const pending = log.data?.data.some((d) => d.status === 'pending') ?? false;
  // While a delivery is under way, its outcome is read again every two seconds.
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => setTick((n) => n + 1), 2000);
    return () => clearTimeout(timer);
  }, [pending, log.data]);

  const save = async (list: Record<string, unknown>[]) => {
    setError(null);
    try {
      await api('PATCH', path, { destinations: list });
      setEditing(null);
      onChange();
    } catch (err) {
      setError(err);
    }
  };
  const upsert = (input: Record<string, unknown>) => save(input.id
    ? destinations.map((d) => (d.id === input.id ? input : kept(d)))
    : [...destinations.map(kept), input]);
  const remove = (d: PublicDestination) => {
    if (confirm(`Remove the ${TYPE_NAMES[d.type as DestinationType] ?? d.type} destination? Its members stay on the platform.`)) {
      void save(destinations.filter((other) => other.id !== d.id).map(kept));
    }
  };
  const sendNow = async (d: PublicDestination) => {
    setError(null);
    try {
      await api('POST', `${path}/destinations/${encodeURIComponent(d.id)}/deliver`);
      setQueued(d.id);
      setTick((n) => n + 1);
    } catch (err) {
      setError(err);
    }
  };
  const lastOf = (id: string) => log.data?.data.find((d) => d.destination_id === id);

  return html`<section class="destinations" aria-labelledby="destinations-title">
    <div class="page-head"><h2 id="destinations-title">Destinations</h2>
      ${editing === null && html`<button type="button" onClick=${() => setEditing('new')}>Add destination</button>`}</div>
    <${ErrorNote} error=${error ?? log.error} />
    ${editing !== null && html`<${DestinationForm} editing=${editing === 'new' ? null : editing} onSave=${upsert} onCancel=${() => setEditing(null)} />`}
    ${destinations.length === 0 && editing === null && html`<p class="hint">None yet: add a webhook, a Meta custom audience or a Google Customer Match list.</p>`}
    ${destinations.length > 0 && html`<div class="table-wrap"><table><caption class="sr-only">Destinations</caption>
      <thead><tr><th scope="col">Destination</th><th scope="col">Settings</th><th scope="col">Last delivery</th><th scope="col">Actions</th></tr></thead>
      <tbody>${destinations.map((d) => html`<tr data-destination=${d.id}>
        <td>${TYPE_NAMES[d.type as DestinationType] ?? d.type}<br /><code class="muted">${d.id}</code></td>
        <td><${Settings} d=${d} /></td>
        <td><${LastDelivery} delivery=${lastOf(d.id)} />${queued === d.id && html`<p class="hint" role="status">Delivery queued.</p>`}</td>
        <td><div class="actions">
          <button type="button" class="small" onClick=${() => sendNow(d)}>Send now</button>
          <button type="button" class="small" onClick=${() => setEditing(d)}>Edit</button>
          <button type="button" class="small danger" onClick=${() => remove(d)}>Remove</button>
        </div></td>
      </tr>`)}</tbody></table></div>`}
  </section>`;
}
