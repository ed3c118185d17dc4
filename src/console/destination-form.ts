// The form of one destination (decisions §9): a webhook, a Meta custom audience or a Google
// Customer Match list. Credentials are write-only: on an edit their fields start empty, and left
// empty they are kept (the destination is sent with its id and without them).

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { PublicDestination } from './api.js';
import { valueOf } from './ui.js';

export type DestinationType = 'webhook' | 'meta_custom_audience' | 'google_customer_match';

export const TYPE_NAMES: Record<DestinationType, string> = {
  webhook: 'Webhook',
  meta_custom_audience: 'Meta custom audience',
  google_customer_match: 'Google Customer Match',
};

type Fields = Record<string, string>;

const initial = (d: PublicDestination | null): Fields => {
  const consent = (d?.consent ?? {}) as { ad_user_data?: string; ad_personalization?: string };
  const text = (key: string) => (typeof d?.[key] === 'string' ? d[key] as string : '');
  return {
    url: text('url'), audience_id: text('audience_id'), customer_id: text('customer_id'), user_list_id: text('user_list_id'),
    login_customer_id: text('login_customer_id'), api: text('api') || 'data_manager',
    ad_user_data: consent.ad_user_data ?? 'GRANTED', ad_personalization: consent.ad_personalization ?? 'GRANTED',
    require_consent: d?.require_consent === true ? 'true' : '',
    secret: '', access_token: '', client_id: '', client_secret: '', refresh_token: '', developer_token: '',
  };
};

/** The destination as the API takes it: credentials only when typed, the id when it is an edit. */
function toInput(type: DestinationType, f: Fields, id: string | undefined): Record<string, unknown> {
  const given = (entries: [string, string][]) => Object.fromEntries(entries.filter(([, v]) => v.trim() !== '').map(([k, v]) => [k, v.trim()]));
  const base = { type, ...(id ? { id } : {}) };
  if (type === 'webhook') return { ...base, url: f.url!.trim(), ...given([['secret', f.secret!]]) };
  const consentRule = f.require_consent === 'true' ? { require_consent: true } : {};
  if (type === 'meta_custom_audience') return { ...base, ...consentRule, audience_id: f.audience_id!.trim(), ...given([['access_token', f.access_token!]]) };
  const oauth = given([['client_id', f.client_id!], ['client_secret', f.client_secret!], ['refresh_token', f.refresh_token!]]);
  return {
    ...base, ...consentRule, api: f.api, customer_id: f.customer_id!.trim(), user_list_id: f.user_list_id!.trim(),
    ...given([['login_customer_id', f.login_customer_id!]]),
    ...(Object.keys(oauth).length > 0 ? { oauth } : {}),
    ...(f.api === 'google_ads' ? given([['developer_token', f.developer_token!]]) : {}),
    consent: { ad_user_data: f.ad_user_data, ad_personalization: f.ad_personalization },
  };
}

export function DestinationForm({ editing, onSave, onCancel }: {
  editing: PublicDestination | null;
  onSave: (input: Record<string, unknown>) => Promise<void>;
  onCancel: () => void;
}) {
  const [type, setType] = useState<DestinationType>((editing?.type as DestinationType | undefined) ?? 'webhook');
  const [f, setF] = useState<Fields>(() => initial(editing));
  const [saving, setSaving] = useState(false);
  const set = (key: string) => (e: Event) => setF({ ...f, [key]: valueOf(e) });
  const saved = editing ? 'saved; leave empty to keep it' : '';
  const text = (key: string, label: string, opts: { required?: boolean; hint?: string; inputmode?: string } = {}) => html`<label>${label}
    <input value=${f[key]} onInput=${set(key)} required=${opts.required ?? true} inputmode=${opts.inputmode} placeholder=${opts.hint ?? ''} /></label>`;
  const secret = (key: string, label: string) => html`<label>${label}
    <input type="password" autocomplete="off" spellcheck=${false} value=${f[key]} onInput=${set(key)} required=${!editing} placeholder=${saved} /></label>`;
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaving(true);
    try {
      await onSave(toInput(type, f, editing?.id));
    } finally {
      setSaving(false);
    }
  };
  const consent = (key: string, label: string) => html`<label>${label}
    <select aria-label=${label} value=${f[key]} onChange=${set(key)}><option value="GRANTED">Granted</option><option value="DENIED">Denied</option></select></label>`;
  const requireConsent = html`<label class="check"><input type="checkbox" aria-label="Only members who granted ads consent"
    checked=${f.require_consent === 'true'} onChange=${(e: Event) => setF({ ...f, require_consent: (e.target as HTMLInputElement).checked ? 'true' : '' })} />
    Only members whose <code>$consent.ads</code> is true (otherwise all but those whose it is false)</label>`;
  return html`<form class="panel destination-form" onSubmit=${submit} aria-label=${editing ? 'Edit destination' : 'New destination'}>
    <label>Type <select aria-label="Type" value=${type} disabled=${editing !== null} onChange=${(e: Event) => setType(valueOf(e) as DestinationType)}>
      ${Object.entries(TYPE_NAMES).map(([value, name]) => html`<option value=${value}>${name}</option>`)}</select></label>
    ${type === 'webhook' && html`<div class="row">${text('url', 'URL', { hint: 'https://…' })}${secret('secret', 'Signing secret')}</div>`}
    ${type === 'meta_custom_audience' && html`<div class="row">${text('audience_id', 'Custom audience id', { inputmode: 'numeric' })}
      ${secret('access_token', 'Access token')}</div>${requireConsent}`}
    ${type === 'google_customer_match' && html`
      <div class="row"><label>API <select aria-label="API" value=${f.api} onChange=${set('api')}>
        <option value="data_manager">Data Manager API</option><option value="google_ads">Google Ads API (allowlisted accounts)</option></select></label>
        ${text('customer_id', 'Customer id', { hint: '123-456-7890' })}${text('user_list_id', 'User list id', { inputmode: 'numeric' })}
        ${text('login_customer_id', 'Manager account id', { required: false, hint: 'optional' })}</div>
      <div class="row">${secret('client_id', 'OAuth client id')}${secret('client_secret', 'OAuth client secret')}${secret('refresh_token', 'Refresh token')}
        ${f.api === 'google_ads' && secret('developer_token', 'Developer token')}</div>
      <div class="row">${consent('ad_user_data', 'Ad user data consent')}${consent('ad_personalization', 'Ad personalization consent')}</div>
      <p class="hint" data-testid="consent-hint">Consent is sent to Google with every member without a <code>$consent.ads</code> trait of its own; for people in the EEA, Google drops members whose consent is not granted.</p>
      ${requireConsent}`}
    ${editing && html`<p class="hint">Credentials are never shown again: fields left empty keep the saved ones.</p>`}
    <div class="actions"><button type="submit" class="primary" disabled=${saving}>${saving ? 'Saving…' : 'Save destination'}</button>
      <button type="button" onClick=${onCancel}>Cancel</button></div>
  </form>`;
}
