// The audience builder: the tree beside its JSON (either edits the other), a debounced
// validate-and-estimate on every edit, and save as a new audience or over an existing one.

import { html } from 'htm/preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type Audience, api, ApiError, type BreakdownRow, type CompileAnswer, type CriteriaError, type Definitions, message } from './api.js';
import { errorsByNode, isObj, newCriteria, type Path, setAt, withoutUnfilled } from './criteria.js';
import { NodeView, type TreeContext } from './tree.js';
import { ErrorNote, go, num, valueOf } from './ui.js';

const ESTIMATE_DELAY_MS = 300;
const CADENCES = ['15m', '1h', '6h', '1d', '7d'];

const pretty = (v: unknown) => JSON.stringify(v, null, 2);

export function Builder({ audienceId, defs }: { audienceId?: string; defs: Definitions }) {
  const [criteria, setCriteria] = useState<unknown>(newCriteria);
  const [jsonText, setJsonText] = useState(() => pretty(criteria));
  const [jsonError, setJsonError] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [refreshEvery, setRefreshEvery] = useState('1h');
  const [loadError, setLoadError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<unknown>(null);
  const [breakdown, setBreakdown] = useState('');
  const estimate = useEstimate(criteria, breakdown);
  const [saveErrors, setSaveErrors] = useState<CriteriaError[] | null>(null);

  useEffect(() => {
    if (!audienceId) return;
    api<Audience>('GET', `/v1/audiences/${encodeURIComponent(audienceId)}`).then((a) => {
      setCriteria(a.criteria_json);
      setJsonText(pretty(a.criteria_json));
      setName(a.name);
      setRefreshEvery(a.refresh_every);
    }, setLoadError);
  }, [audienceId]);

  const fromTree = (next: unknown) => {
    setCriteria(next);
    setJsonText(pretty(next));
    setJsonError(null);
    setSaveErrors(null);
  };
  const fromJson = (text: string) => {
    setJsonText(text);
    try {
      setCriteria(JSON.parse(text));
      setJsonError(null);
      setSaveErrors(null);
    } catch (err) {
      setJsonError(message(err));
    }
  };

  const errors = saveErrors ?? (estimate.answer?.valid === false ? estimate.answer.errors : []);
  const root = isObj(criteria) ? criteria.root : undefined;
  const ctx: TreeContext = useMemo(() => ({
    update: (path: Path, value: unknown) => fromTree(setAt(criteria, path, value)),
    byNode: errorsByNode(errors, root),
    errors,
    defs,
  }), [criteria, errors, defs]);

  const save = async (e: Event) => {
    e.preventDefault();
    setSaving(true);
    setSaveError(null);
    try {
      const body = { name, criteria_json: withoutUnfilled(criteria), refresh_every: refreshEvery };
      const saved = audienceId
        ? await api<Audience>('PATCH', `/v1/audiences/${encodeURIComponent(audienceId)}`, body)
        : await api<Audience>('POST', '/v1/audiences', body);
      go(`/audiences/${saved.id}`);
    } catch (err) {
      const body = err instanceof ApiError ? err.body as { errors?: CriteriaError[] } | null : null;
      if (body?.errors) setSaveErrors(body.errors);
      setSaveError(err);
    } finally {
      setSaving(false);
    }
  };

  return html`<section class="builder" aria-labelledby="builder-title">
    <h1 id="builder-title">${audienceId ? `Edit audience ${name}` : 'New audience'}</h1>
    <${ErrorNote} error=${loadError} />
    <div class="builder-grid">
      <div class="tree panel">
        <h2>Conditions</h2>
        ${root === undefined
          ? html`<p class="notice error">This criteria has no root node: fix it in the JSON.</p>`
          : html`<${NodeView} node=${root} path=${['root']} ctx=${ctx} />`}
      </div>
      <div class="side">
        <${EstimatePanel} state=${estimate} errors=${errors} breakdown=${breakdown} setBreakdown=${setBreakdown} defs=${defs} />
        <form class="panel save" onSubmit=${save}>
          <h2>Save</h2>
          <label>Name <input required maxlength="200" value=${name} onInput=${(e: Event) => setName(valueOf(e))} /></label>
          <label>Refresh every <select value=${refreshEvery} onChange=${(e: Event) => setRefreshEvery(valueOf(e))}>
            ${[...new Set([...CADENCES, refreshEvery])].map((c) => html`<option value=${c}>${c}</option>`)}
          </select></label>
          <button type="submit" class="primary" disabled=${saving}>${audienceId ? 'Save changes' : 'Save audience'}</button>
          <${ErrorNote} error=${saveError} />
        </form>
        <div class="panel json">
          <label for="criteria-json"><h2>Criteria JSON</h2></label>
          <textarea id="criteria-json" spellcheck="false" rows="18" value=${jsonText} aria-invalid=${jsonError !== null}
            aria-describedby="json-status" onInput=${(e: Event) => fromJson(valueOf(e))}></textarea>
          <p id="json-status" class=${jsonError ? 'notice error' : 'hint'}>${jsonError ? `Not JSON: ${jsonError}` : 'Edits here update the tree, and the other way round.'}</p>
        </div>
      </div>
    </div>
  </section>`;
}

interface EstimateState { answer: CompileAnswer | null; pending: boolean; error: unknown }

/** Validates and estimates `criteria` a moment after the last edit; an answer for an older tree is dropped. */
function useEstimate(criteria: unknown, breakdown: string): EstimateState {
  // Pending from the render of an edit on (not from its effect), until the answer for this very tree.
  const [state, setState] = useState<{ answer: CompileAnswer | null; error: unknown; for: unknown }>({ answer: null, error: null, for: undefined });
  const latest = useRef(0);
  const request = useMemo(() => ({ criteria, breakdown }), [criteria, breakdown]);
  useEffect(() => {
    const id = ++latest.current;
    const controller = new AbortController();
    const timer = setTimeout(() => {
      api<CompileAnswer>('POST', '/v1/audiences/compile', { criteria_json: withoutUnfilled(criteria), ...(breakdown ? { breakdown } : {}) }, { signal: controller.signal })
        .then((answer) => { if (id === latest.current) setState({ answer, error: null, for: request }); },
          (error: unknown) => { if (id === latest.current && !controller.signal.aborted) setState((s) => ({ ...s, error, for: request })); });
    }, ESTIMATE_DELAY_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [request]);
  return { answer: state.answer, error: state.error, pending: state.for !== request };
}

function focusNode(path: string) {
  const nodes = [...document.querySelectorAll<HTMLElement>('.node[data-path]')];
  const owner = nodes.filter((n) => path === n.dataset.path || path.startsWith(`${n.dataset.path}/`))
    .sort((a, b) => b.dataset.path!.length - a.dataset.path!.length)[0];
  owner?.focus();
}

function EstimatePanel({ state, errors, breakdown, setBreakdown, defs }: {
  state: EstimateState; errors: CriteriaError[]; breakdown: string; setBreakdown: (b: string) => void; defs: Definitions;
}) {
  const { answer, pending, error } = state;
  const estimate = answer?.estimated_count;
  const approximate = estimate?.approximate;
  return html`<div class="panel estimate" aria-busy=${pending}>
    <h2>Estimate ${pending && html`<span class="hint">updating…</span>`}</h2>
    <div aria-live="polite" data-testid="estimate">
      ${answer?.valid && estimate && html`
        ${estimate.count !== null
          ? html`<p class="big"><span data-testid="count">${num(estimate.count)}</span> <span class="unit">people</span></p>`
          : approximate
            ? html`<p class="big"><span data-testid="approximate">≈ ${num(approximate.count)}</span> <span class="unit">people</span></p>
                <p class="hint" data-testid="interval">between ${num(approximate.low)} and ${num(approximate.high)}
                  (from a ${Math.round(approximate.sample_fraction * 1000) / 10}% sample)</p>`
            : html`<p class="big">— <span class="unit">too large to count in time</span></p>`}
        ${estimate.hit_limit && html`<p class="notice warn" data-testid="over-budget">Over the estimate budget: the exact count is
          computed when the audience refreshes. Narrow the criteria for an exact estimate.</p>`}
        <p class="facts"><span data-testid="windowed">${answer.is_time_windowed ? 'Time-windowed: membership changes as days pass' : 'Not time-windowed'}</span></p>
        ${answer.warnings && html`<ul class="notice warn warning-list" data-testid="warnings">
          ${answer.warnings.map((w) => html`<li><button type="button" class="link" onClick=${() => focusNode(w.path)}>
            <strong>${w.code}</strong> at <code>${w.path}</code></button>: ${w.message}</li>`)}
        </ul>`}`}
      ${answer && !answer.valid && html`<p class="notice error" data-testid="invalid">${errors.length} problem${errors.length === 1 ? '' : 's'} to fix</p>`}
    </div>
    ${errors.length > 0 && html`<ul class="error-list">
      ${errors.map((e) => html`<li><button type="button" class="link" onClick=${() => focusNode(e.path)}>
        <strong>${e.code}</strong> at <code>${e.path || '/'}</code></button>: ${e.message}</li>`)}
    </ul>`}
    <${ErrorNote} error=${error} />
    <label>Break down by <select value=${breakdown} onChange=${(e: Event) => setBreakdown(valueOf(e))}>
      <option value="">nothing</option>
      <option value="channel_category">first-touch channel</option>
      <option value="subscription.status">subscription status</option>
      ${defs.traits.map((t) => html`<option value=${`traits.${t}`}>trait ${t}</option>`)}
    </select></label>
    ${breakdown && answer?.valid && html`<${Breakdown} rows=${answer.breakdown} />`}
  </div>`;
}

function Breakdown({ rows }: { rows: BreakdownRow[] | null | undefined }) {
  if (rows === undefined) return html`<p class="hint">This server does not break estimates down yet.</p>`;
  if (rows === null || rows.length === 0) return html`<p class="hint">No breakdown for this estimate.</p>`;
  const max = Math.max(1, ...rows.map((r) => r.count));
  return html`<table class="breakdown"><caption class="sr-only">Estimate by value</caption>
    <thead><tr><th scope="col">Value</th><th scope="col">People</th></tr></thead>
    <tbody>${rows.map((r) => html`<tr><td>${r.value ?? '(none)'}</td>
      <td><span class="bar" style=${{ width: `${(100 * r.count) / max}%` }}></span>${num(r.count)}</td></tr>`)}</tbody>
  </table>`;
}
