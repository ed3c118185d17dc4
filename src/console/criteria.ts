// The criteria tree as the builder edits it: plain JSON, changed by path, so that whatever the
// JSON editor holds (even a tree the API rejects) stays editable and its faults find their node.
// The whitelists are the compiler's own (src/criteria/schema.ts), bundled in.

import {
  CHANNEL_CATEGORIES, COUNT_OPS, OPS_BY_TYPE, PAGEVIEW_FIELDS, PAYMENT_EVENT_KINDS, PAYMENTS_FIELDS, PREDICATE_OPS,
  type FieldSpec,
} from '../criteria/schema.js';
import type { CriteriaError } from './api.js';

export { CHANNEL_CATEGORIES, COUNT_OPS, PAGEVIEW_FIELDS, PAYMENT_EVENT_KINDS, PAYMENTS_FIELDS };

export type Obj = Record<string, unknown>;
export type Path = readonly (string | number)[];

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON Pointer, as the API writes error paths. */
export const pointer = (path: Path): string => path.map((k) => `/${String(k).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

export function getAt(doc: unknown, path: Path): unknown {
  let at = doc;
  for (const key of path) at = Array.isArray(at) || isObj(at) ? (at as Record<string | number, unknown>)[key] : undefined;
  return at;
}

/** A copy of `doc` with `value` at `path`; `undefined` removes the key (or the array element). */
export function setAt(doc: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const [key, ...rest] = path as [string | number, ...(string | number)[]];
  if (Array.isArray(doc) && typeof key === 'number') {
    const copy = [...doc];
    if (rest.length === 0 && value === undefined) copy.splice(key, 1);
    else copy[key] = setAt(copy[key], rest, value);
    return copy;
  }
  const copy: Obj = isObj(doc) ? { ...doc } : {};
  if (rest.length === 0 && value === undefined) delete copy[key];
  else copy[key] = setAt(copy[key], rest, value);
  return copy;
}

/** `obj` with key `from` renamed `to` (holding `value`), in the same place among its keys. */
export const renameKey = (obj: Obj, from: string, to: string, value: unknown = obj[from]): Obj =>
  Object.fromEntries(Object.entries(obj).map(([k, v]) => (k === from ? [to, value] : [k, v])));

export type NodeKind = 'and' | 'or' | 'not' | 'product_event' | 'pageview' | 'payments' | 'person' | 'unknown';

export function kindOf(node: unknown): NodeKind {
  if (!isObj(node)) return 'unknown';
  if (node.op === 'and' || node.op === 'or' || node.op === 'not') return node.op;
  if (node.source === 'product_event' || node.source === 'pageview' || node.source === 'payments' || node.source === 'person') return node.source;
  return 'unknown';
}

/** The pointers of every node of the tree under `root` (at `/root`). */
export function nodePointers(root: unknown, path: Path = ['root'], out: string[] = []): string[] {
  out.push(pointer(path));
  if (!isObj(root)) return out;
  if ((root.op === 'and' || root.op === 'or') && Array.isArray(root.children)) {
    root.children.forEach((child, i) => nodePointers(child, [...path, 'children', i], out));
  } else if (root.op === 'not' && root.child !== undefined) {
    nodePointers(root.child, [...path, 'child'], out);
  }
  return out;
}

/** Errors grouped by the node they belong to: the deepest node whose pointer starts the error's path. */
export function errorsByNode(errors: readonly CriteriaError[], root: unknown): Map<string, CriteriaError[]> {
  const nodes = nodePointers(root);
  const byNode = new Map<string, CriteriaError[]>();
  for (const error of errors) {
    // '$' paths (another notation) and envelope faults belong to the whole tree, shown at the root.
    const path = error.path.startsWith('/root') ? error.path : '/root';
    const owner = nodes.filter((n) => path === n || path.startsWith(`${n}/`)).sort((a, b) => b.length - a.length)[0] ?? '/root';
    byNode.set(owner, [...(byNode.get(owner) ?? []), error]);
  }
  return byNode;
}

export const DEFAULT_OCCURRENCE = { op: 'did', count: { op: '>=', value: 1 }, window: { kind: 'ever' } };

export type LeafKind = 'product_event' | 'pageview' | 'payments' | 'person';

export const LEAF_LABELS: Record<LeafKind, string> = {
  product_event: 'Product event',
  pageview: 'Page view',
  payments: 'Payment',
  person: 'Person trait',
};

export function newLeaf(kind: LeafKind, firstEvent = ''): Obj {
  switch (kind) {
    case 'product_event': return { source: 'product_event', name: firstEvent, filter: {}, occurrence: structuredClone(DEFAULT_OCCURRENCE) };
    case 'pageview': return { source: 'pageview', filter: {}, occurrence: structuredClone(DEFAULT_OCCURRENCE) };
    case 'payments': return { source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'ever' } } };
    case 'person': return { source: 'person', filter: {} };
  }
}

export const newCriteria = (): Obj => ({ version: 1, root: { op: 'and', children: [newLeaf('pageview')] } });

/** The type a filter key takes values of: a column's, or `json` for payload and trait paths (typed by the value). */
export type ValueType = FieldSpec['type'] | 'json';

export interface FieldInfo { type: ValueType; enum?: readonly string[] }

export function fieldInfo(source: string, key: string, entity?: unknown): FieldInfo {
  if (source === 'pageview') return PAGEVIEW_FIELDS[key] ?? { type: 'string' };
  if (source === 'payments') {
    const fields = entity === 'subscription' || entity === 'invoice' ? PAYMENTS_FIELDS[entity] : {};
    return fields[key] ?? { type: 'string' };
  }
  return { type: 'json' };
}

export const opsFor = (info: FieldInfo): readonly string[] => {
  const ops = info.type === 'json' ? PREDICATE_OPS : OPS_BY_TYPE[info.type];
  // An enumerated column compares whole values only.
  return info.enum ? ops.filter((op) => ['=', '!=', 'in', 'not_in', 'is_set', 'is_not_set'].includes(op)) : ops;
};

export const OP_LABELS: Record<string, string> = {
  '=': 'is', '!=': 'is not', '>': '>', '>=': '≥', '<': '<', '<=': '≤', in: 'is one of', not_in: 'is none of',
  contains: 'contains', not_contains: 'does not contain', starts_with: 'starts with', ends_with: 'ends with',
  is_set: 'is set', is_not_set: 'is not set',
};

export const takesValue = (op: unknown) => op !== 'is_set' && op !== 'is_not_set';
export const isList = (op: unknown) => op === 'in' || op === 'not_in';

const NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** A typed value from what was typed: numbers and booleans for payload and trait paths unless quoted. */
export function parseScalar(text: string, type: ValueType): unknown {
  const t = text.trim();
  if (type === 'number') return NUMBER.test(t) ? Number(t) : t;
  if (type === 'boolean') return t === 'true' ? true : t === 'false' ? false : t;
  if (type === 'string') return text;
  if (NUMBER.test(t)) return Number(t);
  if (t === 'true' || t === 'false') return t === 'true';
  if (/^".*"$/.test(t)) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      return t;
    }
  }
  return text;
}

export function parseValue(text: string, type: ValueType, op: unknown): unknown {
  if (isList(op)) return text.split(',').map((part) => part.trim()).filter((part) => part !== '').map((part) => parseScalar(part, type));
  return parseScalar(text, type);
}

export function formatScalar(value: unknown, type: ValueType): string {
  if (typeof value === 'string') {
    // A string that would read back as a number or a boolean is shown quoted.
    return type === 'json' && (NUMBER.test(value.trim()) || value === 'true' || value === 'false') ? JSON.stringify(value) : value;
  }
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

export const formatValue = (value: unknown, type: ValueType): string =>
  Array.isArray(value) ? value.map((v) => formatScalar(v, type)).join(', ') : formatScalar(value, type);

/** A predicate for `op`, keeping what can be kept of the previous value. */
export function withOp(pred: Obj, op: string): Obj {
  const value = pred.value;
  if (!takesValue(op)) return { op };
  if (isList(op)) return { op, value: Array.isArray(value) ? value : value === undefined || value === '' ? [] : [value] };
  return { op, value: Array.isArray(value) ? (value[0] ?? '') : (value ?? '') };
}

const unfilled = (pred: unknown) => isObj(pred) && takesValue(pred.op)
  && (pred.value === undefined || pred.value === '' || (Array.isArray(pred.value) && pred.value.length === 0));

/**
 * The tree as sent to the API: a filter row whose value box is still empty (a new "Add filter") is
 * left out until it is filled, rather than matching `path is ""` and no one.
 */
export function withoutUnfilled(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutUnfilled);
  if (!isObj(node)) return node;
  return Object.fromEntries(Object.entries(node).map(([key, value]) => {
    const predicates = (key === 'filter' || key === 'predicate') && isObj(value) && typeof node.source === 'string';
    return [key, predicates ? Object.fromEntries(Object.entries(value).filter(([, pred]) => !unfilled(pred))) : withoutUnfilled(value)];
  }));
}
