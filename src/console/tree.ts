// The tree editor: one component per node kind, each editing the JSON at its own path, and each
// node showing the faults whose path points into it.

import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { CriteriaError, Definitions } from './api.js';
import {
  COUNT_OPS, fieldInfo, formatValue, getAt, isList, isObj, kindOf, LEAF_LABELS, type LeafKind, newLeaf, type Obj,
  OP_LABELS, opsFor, PAGEVIEW_FIELDS, parseValue, type Path, PAYMENT_EVENT_KINDS, PAYMENTS_FIELDS, pointer, renameKey, takesValue,
  withOp,
} from './criteria.js';
import { valueOf } from './ui.js';

export interface TreeContext {
  /** Replaces the value at `path` of the criteria (undefined removes it). */
  update(path: Path, value: unknown): void;
  /** Faults per node pointer. */
  byNode: Map<string, CriteriaError[]>;
  errors: readonly CriteriaError[];
  defs: Definitions;
}

/** Whether a fault points at `path` or inside it: the control gets aria-invalid. */
const invalidAt = (ctx: TreeContext, path: Path) => {
  const p = pointer(path);
  return ctx.errors.some((e) => e.path === p || e.path.startsWith(`${p}/`));
};

const KIND_LABELS: Record<string, string> = { ...LEAF_LABELS, and: 'Group', or: 'Group', not: 'Exclusion', unknown: 'Unrecognized node' };

interface NodeProps {
  node: unknown;
  path: Path;
  ctx: TreeContext;
  /** Removes this node from its parent; absent at the root. */
  onRemove?: () => void;
  /** This node sits in an `and` (so it can be excluded). */
  inAnd?: boolean;
}

export function NodeView(props: NodeProps) {
  const { node, path, ctx } = props;
  const kind = kindOf(node);
  const ptr = pointer(path);
  const errors = ctx.byNode.get(ptr) ?? [];
  const body = kind === 'and' || kind === 'or' ? html`<${Group} ...${props} />`
    : kind === 'not' ? html`<${Not} ...${props} />`
    : kind === 'unknown' ? html`<${Unknown} ...${props} />`
    : html`<${Leaf} ...${props} />`;
  return html`<div class=${`node node-${kind}${errors.length ? ' node-invalid' : ''}`} data-path=${ptr} tabindex="-1"
      role="group" aria-label=${`${KIND_LABELS[kind]} at ${ptr}`}>
    ${body}
    ${errors.length > 0 && html`<ul class="node-errors">
      ${errors.map((e) => html`<li><strong>${e.code}</strong> ${e.message}${e.path !== ptr ? html` <code>${e.path.slice(ptr.length + 1)}</code>` : ''}</li>`)}
    </ul>`}
  </div>`;
}

/** Exclude / include and remove, beside a node's title. */
function Toolbar({ node, path, ctx, onRemove, inAnd }: NodeProps) {
  const kind = kindOf(node);
  const canExclude = inAnd && kind !== 'not';
  return html`<span class="toolbar">
    ${canExclude && html`<button type="button" class="small" onClick=${() => ctx.update(path, { op: 'not', child: node })}
      title="Subtract the people who match this from the rest of the group">Exclude</button>`}
    ${kind === 'not' && html`<button type="button" class="small" onClick=${() => ctx.update(path, (node as Obj).child)}>Include instead</button>`}
    ${!onRemove && kind !== 'and' && kind !== 'or' && html`<button type="button" class="small"
      onClick=${() => ctx.update(path, { op: 'and', children: [node] })}>Wrap in a group</button>`}
    ${onRemove && html`<button type="button" class="small danger" onClick=${onRemove} aria-label=${`Remove ${KIND_LABELS[kind]!.toLowerCase()}`}>Remove</button>`}
  </span>`;
}

function Group(props: NodeProps) {
  const { node, path, ctx } = props;
  const group = node as Obj;
  const children = Array.isArray(group.children) ? group.children : [];
  const firstEvent = ctx.defs.events[0]?.name ?? '';
  const add = (child: unknown) => ctx.update([...path, 'children'], [...children, child]);
  return html`
    <div class="node-head">
      <label>Match people in <select aria-label="Match" value=${group.op} onChange=${(e: Event) => ctx.update([...path, 'op'], valueOf(e))}
        aria-invalid=${invalidAt(ctx, [...path, 'op'])}>
        <option value="and">all</option><option value="or">any</option>
      </select> of these</label>
      <${Toolbar} ...${props} />
    </div>
    <ol class="children">
      ${children.map((child, i) => html`<li key=${i}><${NodeView} node=${child} path=${[...path, 'children', i]} ctx=${ctx}
        inAnd=${group.op === 'and'} onRemove=${() => ctx.update([...path, 'children', i], undefined)} /></li>`)}
    </ol>
    <div class="add" role="group" aria-label="Add a condition">
      <span>Add</span>
      ${(Object.keys(LEAF_LABELS) as LeafKind[]).map((kind) => html`<button type="button" class="small"
        onClick=${() => add(newLeaf(kind, firstEvent))}>${LEAF_LABELS[kind]}</button>`)}
      <button type="button" class="small" onClick=${() => add({ op: group.op === 'and' ? 'or' : 'and', children: [newLeaf('pageview')] })}>Group</button>
    </div>`;
}

function Not(props: NodeProps) {
  const { node, path, ctx } = props;
  return html`
    <div class="node-head"><span class="node-title">Exclude people who match</span><${Toolbar} ...${props} /></div>
    <${NodeView} node=${(node as Obj).child} path=${[...path, 'child']} ctx=${ctx} onRemove=${props.onRemove} />`;
}

function Unknown(props: NodeProps) {
  return html`<div class="node-head"><span class="node-title">A node the builder does not know: edit it in the JSON</span>
    <${Toolbar} ...${props} /></div>`;
}

function Leaf(props: NodeProps) {
  const { node, path, ctx } = props;
  const leaf = node as Obj;
  const kind = kindOf(leaf) as LeafKind;
  const firstEvent = ctx.defs.events[0]?.name ?? '';
  return html`
    <div class="node-head">
      <label>Condition <select aria-label="Condition" value=${kind} onChange=${(e: Event) => ctx.update(path, newLeaf(valueOf(e) as LeafKind, firstEvent))}>
        ${(Object.keys(LEAF_LABELS) as LeafKind[]).map((k) => html`<option value=${k}>${LEAF_LABELS[k]}</option>`)}
      </select></label>
      <${Toolbar} ...${props} />
    </div>
    ${kind === 'product_event' && html`<${ProductEvent} leaf=${leaf} path=${path} ctx=${ctx} />`}
    ${kind === 'pageview' && html`
      <${Occurrence} occurrence=${leaf.occurrence} path=${[...path, 'occurrence']} ctx=${ctx} what="viewed a page" />
      <${Filters} source="pageview" filter=${leaf.filter} path=${[...path, 'filter']} ctx=${ctx} keys=${Object.keys(PAGEVIEW_FIELDS)} />`}
    ${kind === 'payments' && html`<${Payments} leaf=${leaf} path=${path} ctx=${ctx} />`}
    ${kind === 'person' && html`<${Filters} source="person" filter=${leaf.filter} path=${[...path, 'filter']} ctx=${ctx}
      keys=${ctx.defs.traits.map((t) => `traits.${t}`)} empty="No traits seen yet: send some with POST /v1/persons." />`}`;
}

interface LeafProps { leaf: Obj; path: Path; ctx: TreeContext }

function ProductEvent({ leaf, path, ctx }: LeafProps) {
  const name = typeof leaf.name === 'string' ? leaf.name : '';
  const known = ctx.defs.events.find((e) => e.name === name);
  const listId = `events-${pointer(path).replaceAll('/', '-')}`;
  return html`
    <div class="row">
      <label>Event <input aria-label="Event" value=${name} list=${listId} size="16" aria-invalid=${invalidAt(ctx, [...path, 'name'])}
        onInput=${(e: Event) => ctx.update([...path, 'name'], valueOf(e))} /></label>
      <datalist id=${listId}>${ctx.defs.events.map((e) => html`<option value=${e.name} />`)}</datalist>
      ${name && !known && html`<span class="hint">not seen in this workspace yet</span>`}
    </div>
    <${Occurrence} occurrence=${leaf.occurrence} path=${[...path, 'occurrence']} ctx=${ctx} what="did it" />
    <${Filters} source="product_event" filter=${leaf.filter} path=${[...path, 'filter']} ctx=${ctx}
      keys=${(known?.paths ?? []).map((p) => `payload.${p}`)} empty=${name ? 'No properties seen on this event.' : 'Pick an event first.'} />`;
}

const PAYMENT_LABELS: Record<string, string> = {
  first_paid_invoice: 'Paid a first invoice',
  subscription_canceled: 'Canceled a subscription',
  refund_issued: 'Was refunded',
  'entity:subscription': 'Has a subscription where…',
  'entity:invoice': 'Has an invoice where…',
};

function Payments({ leaf, path, ctx }: LeafProps) {
  const current = typeof leaf.entity === 'string' ? `entity:${leaf.entity}` : String(leaf.event ?? '');
  const choose = (value: string) => ctx.update(path, value.startsWith('entity:')
    ? { source: 'payments', entity: value.slice('entity:'.length), predicate: {} }
    : { source: 'payments', event: value, occurrence: isObj(leaf.occurrence) ? leaf.occurrence : { window: { kind: 'ever' } } });
  const entity = leaf.entity;
  return html`
    <div class="row">
      <label>Payment <select aria-label="Payment" value=${current} onChange=${(e: Event) => choose(valueOf(e))}
        aria-invalid=${invalidAt(ctx, [...path, 'event']) || invalidAt(ctx, [...path, 'entity'])}>
        ${[...PAYMENT_EVENT_KINDS, 'entity:subscription', 'entity:invoice'].map((v) => html`<option value=${v}>${PAYMENT_LABELS[v]}</option>`)}
        ${!(current in PAYMENT_LABELS) && html`<option value=${current}>${current || '(none)'}</option>`}
      </select></label>
    </div>
    ${'event' in leaf && html`<${Window} window=${getAt(leaf, ['occurrence', 'window'])} path=${[...path, 'occurrence', 'window']} ctx=${ctx} />`}
    ${'entity' in leaf && html`<${Filters} source="payments" entity=${entity} filter=${leaf.predicate} path=${[...path, 'predicate']} ctx=${ctx}
      keys=${entity === 'subscription' || entity === 'invoice' ? Object.keys(PAYMENTS_FIELDS[entity]) : []} />`}`;
}

function Occurrence({ occurrence, path, ctx, what }: { occurrence: unknown; path: Path; ctx: TreeContext; what: string }) {
  const occ = isObj(occurrence) ? occurrence : {};
  const count = isObj(occ.count) ? occ.count : null;
  const setOp = (op: string) => ctx.update(path, op === 'did_not'
    ? { op, count: null, window: occ.window }
    : { op, count: { op: '>=', value: 1 }, window: occ.window });
  return html`
    <div class="row">
      <label>People who <select aria-label="Occurrence" value=${occ.op} onChange=${(e: Event) => setOp(valueOf(e))} aria-invalid=${invalidAt(ctx, [...path, 'op'])}>
        <option value="did">did</option><option value="did_not">did not</option>
      </select> (${what})</label>
      ${occ.op === 'did' && html`<span class="count" role="group" aria-label="How many times">
        <select aria-label="Count comparison" value=${count?.op ?? '>='} aria-invalid=${invalidAt(ctx, [...path, 'count'])}
          onChange=${(e: Event) => ctx.update([...path, 'count'], { op: valueOf(e), value: count?.value ?? 1 })}>
          ${COUNT_OPS.map((op) => html`<option value=${op}>${OP_LABELS[op] === 'is' ? '=' : OP_LABELS[op]}</option>`)}
        </select>
        <input type="number" min="0" step="1" class="narrow" aria-label="Times" value=${count?.value ?? 1}
          aria-invalid=${invalidAt(ctx, [...path, 'count'])}
          onInput=${(e: Event) => ctx.update([...path, 'count'], { op: count?.op ?? '>=', value: valueOf(e) === '' ? '' : Number(valueOf(e)) })} />
        times</span>`}
    </div>
    <${Window} window=${occ.window} path=${[...path, 'window']} ctx=${ctx} />`;
}

function Window({ window, path, ctx }: { window: unknown; path: Path; ctx: TreeContext }) {
  const win = isObj(window) ? window : {};
  const today = new Date().toISOString().slice(0, 10);
  const setKind = (kind: string) => ctx.update(path, kind === 'last_n_days' ? { kind, n: 30 }
    : kind === 'between' ? { kind, from: today, to: today } : { kind });
  const bad = invalidAt(ctx, path);
  return html`<div class="row">
    <label>When <select aria-label="When" value=${win.kind} onChange=${(e: Event) => setKind(valueOf(e))} aria-invalid=${bad}>
      <option value="ever">at any time</option>
      <option value="last_n_days">in the last days…</option>
      <option value="between">between dates…</option>
    </select></label>
    ${win.kind === 'last_n_days' && html`<label>Days <input aria-label="Days" type="number" min="1" max="3650" class="narrow" value=${win.n as number}
      aria-invalid=${bad} onInput=${(e: Event) => ctx.update([...path, 'n'], valueOf(e) === '' ? '' : Number(valueOf(e)))} /></label>`}
    ${win.kind === 'between' && html`
      <label>From <input aria-label="From" type="date" value=${String(win.from ?? '').slice(0, 10)} aria-invalid=${bad}
        onInput=${(e: Event) => ctx.update([...path, 'from'], valueOf(e))} /></label>
      <label>To <input aria-label="To" type="date" value=${String(win.to ?? '').slice(0, 10)} aria-invalid=${bad}
        onInput=${(e: Event) => ctx.update([...path, 'to'], valueOf(e))} /></label>`}
  </div>`;
}

interface FiltersProps {
  source: string;
  entity?: unknown;
  filter: unknown;
  path: Path;
  ctx: TreeContext;
  /** The keys this leaf may filter on. */
  keys: string[];
  empty?: string;
}

function Filters({ source, entity, filter, path, ctx, keys, empty }: FiltersProps) {
  const entries = isObj(filter) ? Object.entries(filter) : [];
  const unused = keys.find((k) => !entries.some(([key]) => key === k));
  const add = () => {
    if (unused === undefined) return;
    const info = fieldInfo(source, unused, entity);
    ctx.update([...path, unused], { op: opsFor(info)[0], value: info.enum?.[0] ?? '' });
  };
  return html`<fieldset class="filters">
    <legend>${source === 'payments' ? 'Where' : source === 'person' ? 'Traits' : 'Where'}</legend>
    ${entries.map(([key, pred]) => html`<${FilterRow} key=${key} source=${source} entity=${entity} field=${key} pred=${pred}
      path=${[...path, key]} ctx=${ctx} keys=${keys} rename=${(to: string) => ctx.update(path, renameKey(filter as Obj, key, to, retype(source, entity, pred, to)))} />`)}
    ${keys.length === 0 && entries.length === 0 && empty ? html`<p class="hint">${empty}</p>` : ''}
    ${unused !== undefined && html`<button type="button" class="small" onClick=${add}>Add filter</button>`}
  </fieldset>`;
}

/** A predicate carried over to another field: its op when that field takes it, a value of the field's kind. */
function retype(source: string, entity: unknown, pred: unknown, to: string): Obj {
  const p = isObj(pred) ? pred : {};
  const info = fieldInfo(source, to, entity);
  const ops = opsFor(info);
  const op = ops.includes(p.op as string) ? String(p.op) : ops[0]!;
  if (!takesValue(op)) return { op };
  if (info.enum) return { op, value: isList(op) ? [info.enum[0]] : info.enum[0] };
  return { op, value: p.value ?? '' };
}

function FilterRow({ source, entity, field, pred, path, ctx, keys, rename }: {
  source: string; entity?: unknown; field: string; pred: unknown; path: Path; ctx: TreeContext; keys: string[]; rename: (to: string) => void;
}) {
  const p = isObj(pred) ? pred : {};
  const info = fieldInfo(source, field, entity);
  const ops = opsFor(info);
  const options = keys.includes(field) ? keys : [field, ...keys];
  return html`<div class="row filter">
    <select aria-label="Field" value=${field} aria-invalid=${ctx.errors.some((e) => e.path === pointer(path))}
      onChange=${(e: Event) => rename(valueOf(e))}>
      ${options.map((k) => html`<option value=${k}>${k}</option>`)}
    </select>
    <select aria-label="Comparison" value=${p.op} aria-invalid=${invalidAt(ctx, [...path, 'op'])}
      onChange=${(e: Event) => ctx.update(path, withOp(p, valueOf(e)))}>
      ${(ops.includes(p.op as string) ? ops : [String(p.op), ...ops]).map((op) => html`<option value=${op}>${OP_LABELS[op] ?? op}</option>`)}
    </select>
    ${takesValue(p.op) && html`<${ValueInput} info=${info} op=${p.op} value=${p.value} invalid=${invalidAt(ctx, [...path, 'value'])}
      onChange=${(value: unknown) => ctx.update([...path, 'value'], value)} />`}
    <button type="button" class="small danger" aria-label=${`Remove filter ${field}`} onClick=${() => ctx.update(path, undefined)}>×</button>
  </div>`;
}

/** A value box that keeps what is typed (`1.` stays `1.`) while the tree holds the typed value. */
function ValueInput({ info, op, value, invalid, onChange }: {
  info: ReturnType<typeof fieldInfo>; op: unknown; value: unknown; invalid: boolean; onChange: (v: unknown) => void;
}) {
  const [text, setText] = useState(() => formatValue(value, info.type));
  useEffect(() => {
    if (JSON.stringify(parseValue(text, info.type, op)) !== JSON.stringify(value)) setText(formatValue(value, info.type));
  }, [value, op]);
  if (info.enum && !isList(op)) {
    const values = info.enum.includes(value as string) ? info.enum : [String(value ?? ''), ...info.enum];
    return html`<select aria-label="Value" value=${value} aria-invalid=${invalid} onChange=${(e: Event) => onChange(valueOf(e))}>
      ${values.map((v) => html`<option value=${v}>${v}</option>`)}
    </select>`;
  }
  const placeholder = isList(op) ? (info.enum ? info.enum.slice(0, 2).join(', ') : 'a, b, c') : info.type === 'json' ? 'text, 42, true or "42"' : '';
  return html`<input aria-label="Value" value=${text} placeholder=${placeholder} aria-invalid=${invalid}
    onInput=${(e: Event) => {
      setText(valueOf(e));
      onChange(parseValue(valueOf(e), info.type, op));
    }} />`;
}

