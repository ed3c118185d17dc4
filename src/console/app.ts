// The console's shell: the key gate, the navigation and the pages.

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Definitions, forgetKey, storedKey, storeKey, type Workspace } from './api.js';
import { AudienceDetail, AudienceList } from './audiences.js';
import { Builder } from './builder.js';
import { Lift } from './lift.js';
import { People } from './people.js';
import { Privacy } from './privacy.js';
import { Revenue } from './revenue.js';
import { ErrorNote, useRoute, valueOf } from './ui.js';

const NO_DEFINITIONS: Definitions = { events: [], traits: [] };

export function App() {
  const [workspace, setWorkspace] = useState<Workspace | null>(null);
  const [checking, setChecking] = useState(storedKey() !== null);
  useEffect(() => {
    if (!storedKey()) return;
    api<Workspace>('GET', '/v1/workspace').then(setWorkspace, () => forgetKey()).finally(() => setChecking(false));
  }, []);
  if (checking) return html`<p class="hint center">Loading…</p>`;
  if (!workspace) return html`<${KeyGate} onWorkspace=${setWorkspace} />`;
  return html`<${Console} workspace=${workspace} onSignOut=${() => { forgetKey(); setWorkspace(null); }} />`;
}

function KeyGate({ onWorkspace }: { onWorkspace: (w: Workspace) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const candidate = key.trim();
    if (!candidate.startsWith('sk_')) {
      setError(new Error('A secret key starts with sk_ (a publishable pk_ key cannot read audiences).'));
      return;
    }
    try {
      const workspace = await api<Workspace>('GET', '/v1/workspace', undefined, { key: candidate });
      storeKey(candidate);
      onWorkspace(workspace);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? new Error('This key is not known to this service.') : err);
    }
  };
  return html`<main class="gate">
    <form class="panel" onSubmit=${submit}>
      <h1>Audiences console</h1>
      <p>Enter the workspace's secret key. It stays in this browser tab (session storage) and goes only to this service's API.</p>
      <label>Secret key <input type="password" autocomplete="off" spellcheck="false" placeholder="sk_…" value=${key}
        onInput=${(e: Event) => setKey(valueOf(e))} required /></label>
      <button type="submit" class="primary">Open the console</button>
      <${ErrorNote} error=${error} />
      <p class="hint">The first start of the service printed the key. The API reference is at <a href="/docs">/docs</a>.</p>
    </form>
  </main>`;
}

const NAV: [string, string][] = [['/builder', 'Builder'], ['/audiences', 'Audiences'], ['/people', 'People'], ['/revenue', 'Revenue'], ['/privacy', 'Privacy'], ['/lift', 'Lift']];

function Console({ workspace, onSignOut }: { workspace: Workspace; onSignOut: () => void }) {
  const route = useRoute();
  const [defs, setDefs] = useState<Definitions>(NO_DEFINITIONS);
  const [defsError, setDefsError] = useState<unknown>(null);
  // Definitions again on each page change: new events may have arrived.
  useEffect(() => {
    api<Definitions>('GET', '/v1/definitions').then(setDefs, setDefsError);
  }, [route]);
  const section = `/${route.split('/')[1] ?? ''}`;
  const audience = /^\/audiences\/([^/]+)(\/edit)?$/.exec(route);
  const page = audience?.[2] ? html`<${Builder} key=${route} audienceId=${decodeURIComponent(audience[1]!)} defs=${defs} />`
    : audience ? html`<${AudienceDetail} key=${route} id=${decodeURIComponent(audience[1]!)} />`
    : section === '/audiences' ? html`<${AudienceList} />`
    : section === '/people' ? html`<${People} />`
    : section === '/revenue' ? html`<${Revenue} defs=${defs} />`
    : section === '/privacy' ? html`<${Privacy} />`
    : section === '/lift' ? html`<${Lift} audienceId=${route.split('/')[2] ? decodeURIComponent(route.split('/')[2]!) : null} />`
    : html`<${Builder} key="new" defs=${defs} />`;
  return html`
    <a class="skip" href="#main" onClick=${(e: Event) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
    <header class="top">
      <span class="brand">Audiences</span>
      <nav aria-label="Console">
        <ul>${NAV.map(([href, label]) => html`<li><a href=${`#${href}`} aria-current=${section === href ? 'page' : undefined}>${label}</a></li>`)}</ul>
      </nav>
      <span class="workspace" title=${workspace.id}>${workspace.name}</span>
      <button type="button" class="small" onClick=${onSignOut}>Forget key</button>
    </header>
    <main id="main" tabindex="-1">
      <${ErrorNote} error=${defsError} />
      ${page}
    </main>`;
}
