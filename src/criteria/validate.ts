// Validation: raw JSON → typed criteria, or every fault in document order (docs/criteria.md).
// Faults of a node come first (missing fields, anchoring), then its keys in the order written.

import { type CriteriaError, type CriteriaErrorCode, type CriteriaWarning, pointer } from './errors.js';
import { normalizeHost } from './host.js';
import type { Breakdown } from './plan.js';
import {
  type AudienceCriteria, type CountOp, type CriteriaNode, type FieldSpec, type Leaf, type Occurrence,
  type PaymentsEntity, type Predicate, type PredicateOp, type PropertyCatalog, type Scalar, type Window,
  COUNT_OPS, OPS_BY_TYPE, PAGEVIEW_FIELDS, PAYLOAD_PREFIX, PAYMENT_EVENT_KINDS, PAYMENTS_FIELDS, PREDICATE_OPS, TRAITS_PREFIX,
} from './schema.js';

export type ValidationResult =
  | { ok: true; criteria: AudienceCriteria; warnings: CriteriaWarning[] }
  | { ok: false; errors: CriteriaError[] };

type Json = Record<string, unknown>;

/** A location in the envelope, kept as a chain of keys and printed as a JSON Pointer only on error. */
type Path = { readonly parent: Path; readonly key: string | number } | null;

const step = (parent: Path, key: string | number): Path => ({ parent, key });

function render(path: Path): string {
  return path ? pointer(render(path.parent), path.key) : '';
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Json, k: string) => Object.prototype.hasOwnProperty.call(o, k);
const isScalar = (v: unknown): v is Scalar =>
  typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

export const MAX_WINDOW_DAYS = 3650;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const DAY_MS = 86_400_000;

/** Nodes on the path from the root (depth 1) to a leaf, at most. */
export const MAX_DEPTH = 32;
/** Nodes (branches, leaves, and whatever sits where a node should) in one tree, at most. */
export const MAX_NODES = 1000;
/** Faults reported for one tree: the first ones in document order (a body of faults stays small). */
export const MAX_ERRORS = 100;

/** Positive in the anchoring sense: neither a `not` node nor a `did_not` leaf. */
function isPositiveRaw(node: unknown): boolean {
  if (!isObject(node)) return false;
  if (!has(node, 'source') && node.op === 'not') return false;
  return !(isObject(node.occurrence) && node.occurrence.op === 'did_not');
}

/** Typed columns, or the JSON paths seen (untyped, keys written `<prefix><path>`). */
type Whitelist = { fields: Record<string, FieldSpec> } | { prefix: string; paths: ReadonlySet<string> | undefined };

const PAGEVIEW_FIELD_LIST = Object.keys(PAGEVIEW_FIELDS).join(', ');

interface Parent {
  op: 'and' | 'or' | 'not';
  hasPositiveChild: boolean;
}

class Validator {
  readonly errors: CriteriaError[] = [];
  readonly warnings: CriteriaWarning[] = [];
  private nodes = 0;

  constructor(private readonly catalog: PropertyCatalog) {}

  fail(code: CriteriaErrorCode, path: Path, message: string): undefined {
    if (this.errors.length < MAX_ERRORS) this.errors.push({ code, path: render(path), message });
    return undefined;
  }

  envelope(raw: unknown): AudienceCriteria | undefined {
    let doc = raw;
    if (typeof doc === 'string') {
      try {
        doc = JSON.parse(doc);
      } catch {
        return this.fail('invalid_envelope', null, 'criteria_json is a string that is not valid JSON');
      }
    }
    if (doc === undefined) {
      return this.fail('invalid_envelope', null, 'criteria_json is missing: send the tree wrapped as { "criteria_json": { "version": 1, "root": node } }');
    }
    if (!isObject(doc)) {
      return this.fail('invalid_envelope', null, 'criteria must be an object { "version": 1, "root": node }');
    }
    if (!has(doc, 'version')) this.fail('invalid_envelope', step(null, 'version'), 'version is required');
    if (!has(doc, 'root')) this.fail('invalid_envelope', step(null, 'root'), 'root is required');
    let root: CriteriaNode | undefined;
    for (const key of Object.keys(doc)) {
      if (key === 'version') {
        if (doc.version !== 1) this.fail('version_unsupported', step(null, 'version'), 'criteria version must be the integer 1');
      } else if (key === 'root') {
        root = this.node(doc.root, step(null, 'root'), null, 1);
      } else {
        this.fail('invalid_envelope', step(null, key), `unexpected key "${key}": the envelope holds only version and root`);
      }
    }
    return root && { version: 1, root };
  }

  /**
   * The size limits come first: nothing past them is read, so the recursion stays within
   * MAX_DEPTH nodes however deep the JSON, and the work within MAX_NODES however wide.
   */
  node(raw: unknown, path: Path, parent: Parent | null, depth: number): CriteriaNode | undefined {
    if (this.nodes > MAX_NODES) return undefined;
    if (++this.nodes > MAX_NODES) {
      return this.fail('too_many_nodes', path, `a tree holds at most ${MAX_NODES} nodes; this is node ${MAX_NODES + 1}`);
    }
    if (depth > MAX_DEPTH) {
      return this.fail('too_deep', path, `nodes nest at most ${MAX_DEPTH} deep (the root is depth 1); this node is at depth ${depth}`);
    }
    if (!isObject(raw)) return this.fail('invalid_node', path, 'a node must be an object (a branch with op, or a leaf with source)');
    if (!isPositiveRaw(raw) && !(parent?.op === 'and' && parent.hasPositiveChild)) {
      this.fail('unanchored_negation', path,
        'a not node or did_not leaf must sit inside an and node with at least one positive sibling');
    }
    if (has(raw, 'source')) return this.leaf(raw, path);
    if (has(raw, 'op')) return this.branch(raw, path, depth);
    return this.fail('invalid_node', path, 'a node needs op (and, or, not) or source (product_event, pageview, payments, person)');
  }

  branch(raw: Json, path: Path, depth: number): CriteriaNode | undefined {
    const op = raw.op;
    if (op !== 'and' && op !== 'or' && op !== 'not') {
      return this.fail('invalid_node', step(path, 'op'), 'branch op must be one of and, or, not');
    }
    const childKey = op === 'not' ? 'child' : 'children';
    if (!has(raw, childKey)) this.fail('invalid_node', step(path, childKey), `${op} requires ${childKey}`);
    let children: (CriteriaNode | undefined)[] = [];
    let child: CriteriaNode | undefined;
    for (const key of Object.keys(raw)) {
      const at = step(path, key);
      if (key === 'op') continue;
      if (key !== childKey) {
        this.fail('invalid_node', at, `unexpected key "${key}" on an ${op} node`);
      } else if (op === 'not') {
        child = this.node(raw.child, at, { op, hasPositiveChild: false }, depth + 1);
      } else if (!Array.isArray(raw.children) || raw.children.length === 0) {
        this.fail('invalid_node', at, `${op} children must be a non-empty array of nodes`);
      } else {
        const list = raw.children;
        const parent: Parent = { op, hasPositiveChild: list.some(isPositiveRaw) };
        children = list.map((c, i) => this.node(c, step(at, i), parent, depth + 1));
      }
    }
    if (op === 'not') return child && { op, child };
    if (children.length === 0 || children.some((c) => !c)) return undefined;
    return { op, children: children as CriteriaNode[] };
  }

  leaf(raw: Json, path: Path): Leaf | undefined {
    switch (raw.source) {
      case 'product_event':
        return this.productEventLeaf(raw, path);
      case 'pageview':
        return this.pageviewLeaf(raw, path);
      case 'payments':
        return has(raw, 'event') || !has(raw, 'entity') ? this.paymentsEventLeaf(raw, path) : this.paymentsStateLeaf(raw, path);
      case 'person':
        return this.personLeaf(raw, path);
      default:
        return this.fail('invalid_node', step(path, 'source'), 'source must be one of product_event, pageview, payments, person');
    }
  }

  /**
   * Reports missing required keys, then unknown keys, and returns the known keys present in
   * document order for the caller to check (a loop, not callbacks: this runs per node).
   */
  keys(raw: Json, path: Path, kind: string, required: readonly string[], known: readonly string[]): string[] {
    for (const key of required) {
      if (!has(raw, key)) this.fail(key === 'window' ? 'invalid_window' : 'invalid_node', step(path, key), `${kind} requires ${key}`);
    }
    const present: string[] = [];
    for (const key of Object.keys(raw)) {
      if (known.includes(key)) present.push(key);
      else if (key !== 'source') this.fail('invalid_node', step(path, key), `unexpected key "${key}" on a ${kind}`);
    }
    return present;
  }

  productEventLeaf(raw: Json, path: Path): Leaf | undefined {
    let name: string | undefined;
    let filter: Predicate[] | undefined = [];
    let occurrence: Occurrence | undefined;
    for (const key of this.keys(raw, path, 'product_event leaf', ['name', 'occurrence'], ['name', 'filter', 'occurrence'])) {
      const at = step(path, key);
      if (key === 'name') {
        if (typeof raw.name === 'string' && raw.name.length >= 1 && raw.name.length <= 200) {
          name = raw.name;
          // Valid (the events may come later), but a typo would silently count no one.
          if (this.catalog.eventNames && !this.catalog.eventNames.has(name) && this.warnings.length < MAX_ERRORS) {
            this.warnings.push({ code: 'unknown_event', path: render(at), message: `no event named "${name}" has been received in this workspace yet: the leaf matches no one until one is` });
          }
        } else this.fail('invalid_node', at, 'name must be an event name of 1 to 200 characters');
      } else if (key === 'filter') {
        const paths = typeof raw.name === 'string' ? this.catalog.events.get(raw.name) : undefined;
        filter = this.predicates(raw.filter, at, { prefix: PAYLOAD_PREFIX, paths }, 'payload.<path> with a property path seen on this event name');
      } else {
        occurrence = this.occurrence(raw.occurrence, at);
      }
    }
    return name !== undefined && filter && occurrence ? { source: 'product_event', name, filter, occurrence } : undefined;
  }

  pageviewLeaf(raw: Json, path: Path): Leaf | undefined {
    let filter: Predicate[] | undefined = [];
    let occurrence: Occurrence | undefined;
    for (const key of this.keys(raw, path, 'pageview leaf', ['occurrence'], ['filter', 'occurrence'])) {
      const at = step(path, key);
      if (key === 'filter') filter = this.predicates(raw.filter, at, { fields: PAGEVIEW_FIELDS }, PAGEVIEW_FIELD_LIST);
      else occurrence = this.occurrence(raw.occurrence, at);
    }
    return filter && occurrence ? { source: 'pageview', filter, occurrence } : undefined;
  }

  personLeaf(raw: Json, path: Path): Leaf | undefined {
    let filter: Predicate[] | undefined = [];
    for (const key of this.keys(raw, path, 'person leaf', [], ['filter'])) filter = this.traitFilter(raw[key], step(path, key));
    return filter && { source: 'person', filter };
  }

  /** A person leaf's filter: predicates on `traits.<path>` of the workspace's trait definitions. */
  traitFilter(raw: unknown, path: Path): Predicate[] | undefined {
    return this.predicates(raw, path, { prefix: TRAITS_PREFIX, paths: this.catalog.traits },
      'traits.<path> with a trait path seen on this workspace\'s persons');
  }

  paymentsEventLeaf(raw: Json, path: Path): Leaf | undefined {
    let event: (typeof PAYMENT_EVENT_KINDS)[number] | undefined;
    let window: Window | undefined;
    for (const key of this.keys(raw, path, 'payments event leaf', ['event', 'occurrence'], ['event', 'occurrence'])) {
      const at = step(path, key);
      if (key === 'event') {
        event = PAYMENT_EVENT_KINDS.find((k) => k === raw.event);
        if (!event) this.fail('invalid_value', at, `event must be one of ${PAYMENT_EVENT_KINDS.join(', ')}`);
        continue;
      }
      const occ = raw.occurrence;
      if (!isObject(occ)) {
        this.fail('invalid_node', at, 'occurrence must be an object { window }');
        continue;
      }
      for (const inner of this.keys(occ, at, 'payments event occurrence', ['window'], ['op', 'count', 'window'])) {
        const p = step(at, inner);
        if (inner === 'op') this.fail('unknown_op', p, 'a payments event occurrence takes no op: it means at least once');
        else if (inner === 'count') this.fail('invalid_count', p, 'a payments event occurrence takes no count');
        else window = this.window(occ.window, p);
      }
    }
    return event && window ? { source: 'payments', event, window } : undefined;
  }

  paymentsStateLeaf(raw: Json, path: Path): Leaf | undefined {
    let entity: PaymentsEntity | undefined;
    let predicate: Predicate[] | undefined = [];
    const rawEntity = raw.entity;
    const fields = rawEntity === 'subscription' || rawEntity === 'invoice' ? PAYMENTS_FIELDS[rawEntity] : undefined;
    for (const key of this.keys(raw, path, 'payments state leaf', ['entity'], ['entity', 'predicate'])) {
      const at = step(path, key);
      if (key === 'entity') {
        if (fields) entity = rawEntity as PaymentsEntity;
        else if (rawEntity === 'customer') this.fail('version_unsupported', at, 'the customer entity needs a later criteria version');
        else this.fail('invalid_value', at, 'entity must be subscription or invoice');
      } else if (fields) {
        // Predicate fields are the entity's own: with no known entity (customer is a later
        // version's) there is nothing to check them against, and the entity's error says why.
        predicate = this.predicates(raw.predicate, at, { fields }, Object.keys(fields).join(', '));
      }
    }
    return entity && predicate ? { source: 'payments', entity, predicate } : undefined;
  }

  occurrence(raw: unknown, path: Path): Occurrence | undefined {
    if (!isObject(raw)) return this.fail('invalid_node', path, 'occurrence must be an object { op, count, window }');
    const op = raw.op === 'did' || raw.op === 'did_not' ? raw.op : undefined;
    let count: Occurrence['count'] | undefined = null;
    let window: Window | undefined;
    const required = ['op', 'window'];
    if (op === 'did') required.splice(1, 0, 'count');
    for (const key of required) {
      if (has(raw, key)) continue;
      if (key === 'count') this.fail('invalid_count', step(path, key), 'did requires count { op, value } (null means at least once)');
      else this.fail(key === 'window' ? 'invalid_window' : 'invalid_node', step(path, key), `occurrence requires ${key}`);
    }
    for (const key of Object.keys(raw)) {
      const at = step(path, key);
      if (key === 'op') {
        if (!op) this.fail('unknown_op', at, 'occurrence op must be did or did_not');
      } else if (key === 'count') {
        count = op === 'did_not' ? this.negatedCount(raw.count, at) : this.count(raw.count, at);
      } else if (key === 'window') {
        window = this.window(raw.window, at);
      } else {
        this.fail('invalid_node', at, `unexpected key "${key}" on an occurrence`);
      }
    }
    if (!op || count === undefined || !window) return undefined;
    return { op, count: op === 'did' ? count ?? { op: '>=', value: 1 } : null, window };
  }

  negatedCount(raw: unknown, path: Path): null | undefined {
    return raw === null ? null : this.fail('invalid_count', path, 'did_not takes no count (null or absent)');
  }

  count(raw: unknown, path: Path): Occurrence['count'] | undefined {
    if (raw === null) return null;
    if (!isObject(raw)) return this.fail('invalid_count', path, 'count must be { op, value } or null');
    let op: CountOp | undefined;
    let value: number | undefined;
    if (!has(raw, 'op')) this.fail('invalid_count', step(path, 'op'), 'count requires op');
    if (!has(raw, 'value')) this.fail('invalid_count', step(path, 'value'), 'count requires value');
    for (const key of Object.keys(raw)) {
      const at = step(path, key);
      if (key === 'op') {
        op = COUNT_OPS.find((o) => o === raw.op);
        if (!op) this.fail('unknown_op', at, `count op must be one of ${COUNT_OPS.join(' ')}`);
      } else if (key === 'value') {
        if (Number.isSafeInteger(raw.value) && (raw.value as number) >= 0) value = raw.value as number;
        else this.fail('invalid_count', at, 'count value must be a non-negative integer');
      } else {
        this.fail('invalid_count', at, `unexpected key "${key}" on a count`);
      }
    }
    return op && value !== undefined ? { op, value } : undefined;
  }

  window(raw: unknown, path: Path): Window | undefined {
    if (!isObject(raw) || typeof raw.kind !== 'string') {
      return this.fail('invalid_window', path, 'window must be { kind: ever | last_n_days | between, … }');
    }
    const extra = (allowed: string[]) => {
      for (const key of Object.keys(raw)) {
        if (key !== 'kind' && !allowed.includes(key)) {
          this.fail('invalid_window', step(path, key), `unexpected key "${key}" on a ${raw.kind} window`);
        }
      }
    };
    switch (raw.kind) {
      case 'ever':
        extra([]);
        return { kind: 'ever' };
      case 'last_n_days': {
        const n = raw.n;
        const ok = Number.isSafeInteger(n) && (n as number) >= 1 && (n as number) <= MAX_WINDOW_DAYS;
        if (!ok) this.fail('invalid_window', step(path, 'n'), `n must be an integer from 1 to ${MAX_WINDOW_DAYS}`);
        extra(['n']);
        return ok ? { kind: 'last_n_days', n: n as number } : undefined;
      }
      case 'between': {
        const from = this.instant(raw.from, step(path, 'from'), false);
        const to = this.instant(raw.to, step(path, 'to'), true);
        extra(['from', 'to']);
        if (!from || !to) return undefined;
        const empty = to.dateOnly ? from.at >= to.at : from.at > to.at;
        if (empty) return this.fail('invalid_window', path, 'from must not be after to');
        return { kind: 'between', from: new Date(from.at), to: new Date(to.at), toExclusive: to.dateOnly };
      }
      default:
        return this.fail('invalid_window', step(path, 'kind'), 'window kind must be ever, last_n_days or between');
    }
  }

  /** An ISO date or datetime as epoch ms; a date-only upper bound becomes the next midnight. */
  instant(raw: unknown, path: Path, upper: boolean): { at: number; dateOnly: boolean } | undefined {
    const text = typeof raw === 'string' ? raw.trim() : '';
    const date = DATE_ONLY.exec(text);
    const datetime = date ? null : DATE_TIME.exec(text);
    const parts = date ?? datetime;
    if (parts) {
      const [y, m, d] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
      const day = Date.UTC(y, m - 1, d);
      const real = new Date(day);
      if (real.getUTCFullYear() === y && real.getUTCMonth() === m - 1 && real.getUTCDate() === d) {
        if (date) return { at: upper ? day + DAY_MS : day, dateOnly: true };
        const zoned = text.replace(' ', 'T').replace(/([+-]\d{2})(\d{2})$/, '$1:$2');
        const at = Date.parse(datetime?.[7] ? zoned : `${zoned}Z`);
        const [h, min, sec] = [Number(parts[4]), Number(parts[5]), Number(parts[6] ?? 0)];
        if (Number.isFinite(at) && h < 24 && min < 60 && sec < 60) return { at, dateOnly: false };
      }
    }
    return this.fail('invalid_window', path, 'must be an ISO 8601 date (2026-01-31) or datetime (2026-01-31T12:00:00Z)');
  }

  /**
   * A filter or payments predicate map over a whitelist: typed `fields`, or JSON paths seen (the
   * payload paths of an event name, the workspace's trait paths).
   */
  predicates(raw: unknown, path: Path, whitelist: Whitelist, allowed: string): Predicate[] | undefined {
    if (raw === null || raw === undefined) return [];
    if (!isObject(raw)) return this.fail('invalid_node', path, 'must be an object mapping fields to { op, value }');
    const out: Predicate[] = [];
    let ok = true;
    for (const key of Object.keys(raw)) {
      const at = step(path, key);
      const spec = 'fields' in whitelist
        ? (Object.hasOwn(whitelist.fields, key) ? whitelist.fields[key] : undefined)
        : key.startsWith(whitelist.prefix) && whitelist.paths?.has(key.slice(whitelist.prefix.length)) ? 'json' as const : undefined;
      if (!spec) {
        ok = this.fail('unknown_field', at, `unknown field "${key}": allowed are ${allowed}`) ?? false;
        continue;
      }
      const predicate = this.predicate(key, raw[key], at, spec);
      if (predicate) out.push(predicate);
      else ok = false;
    }
    return ok ? out : undefined;
  }

  predicate(field: string, raw: unknown, path: Path, spec: FieldSpec | 'json'): Predicate | undefined {
    if (!isObject(raw)) return this.fail('invalid_node', path, 'a predicate must be an object { op, value }');
    if (!has(raw, 'op')) return this.fail('invalid_node', step(path, 'op'), 'a predicate requires op');
    const op = PREDICATE_OPS.find((o) => o === raw.op);
    const typed = spec === 'json' ? undefined : spec;
    let result: Predicate | undefined;
    for (const key of Object.keys(raw)) {
      const at = step(path, key);
      if (key === 'op') {
        if (!op) this.fail('unknown_op', at, `op must be one of ${PREDICATE_OPS.join(', ')}`);
        else if (typed && !OPS_BY_TYPE[typed.type].includes(op)) {
          this.fail('unknown_op', at, `op ${op} does not apply to the ${typed.type} field ${field}`);
        } else if (op === 'is_set' || op === 'is_not_set') {
          result = { field, op };
        }
      } else if (key !== 'value') {
        this.fail('invalid_node', at, `unexpected key "${key}" on a predicate`);
      } else if (op && (!typed || OPS_BY_TYPE[typed.type].includes(op))) {
        const value = this.value(op, raw.value, at, typed);
        if (value !== undefined) result = { field, op, value };
      }
    }
    if (op && op !== 'is_set' && op !== 'is_not_set' && !has(raw, 'value')) {
      return this.fail('invalid_value', step(path, 'value'), `op ${op} requires a value`);
    }
    return result;
  }

  value(op: PredicateOp, raw: unknown, path: Path, spec: FieldSpec | undefined): Scalar | Scalar[] | undefined {
    if (op === 'is_set' || op === 'is_not_set') {
      return raw === null ? undefined : this.fail('invalid_value', path, `${op} takes no value`);
    }
    if (op === 'in' || op === 'not_in') {
      if (!Array.isArray(raw) || raw.length === 0) return this.fail('invalid_value', path, `${op} takes a non-empty array`);
      const items = raw.map((item, i) => this.scalar(op, item, step(path, i), spec));
      return items.every((i) => i !== undefined) ? (items as Scalar[]) : undefined;
    }
    return this.scalar(op, raw, path, spec);
  }

  scalar(op: PredicateOp, raw: unknown, path: Path, spec: FieldSpec | undefined): Scalar | undefined {
    if (!isScalar(raw)) return this.fail('invalid_value', path, 'value must be a string, number or boolean');
    const textual = op === 'contains' || op === 'not_contains' || op === 'starts_with' || op === 'ends_with';
    const ordered = op === '>' || op === '>=' || op === '<' || op === '<=';
    if (textual && typeof raw !== 'string') return this.fail('invalid_value', path, `${op} takes a string`);
    if (ordered && typeof raw === 'boolean') return this.fail('invalid_value', path, `${op} takes a number or a string`);
    if (!spec) return raw;
    if (typeof raw !== spec.type) return this.fail('invalid_value', path, `value must be a ${spec.type}`);
    if (typeof raw !== 'string') return raw;
    if (spec.enum && !textual && !ordered && !spec.enum.includes(raw)) {
      return this.fail('invalid_value', path, `value must be one of ${spec.enum.join(', ')}`);
    }
    return spec.host && !textual && !ordered ? normalizeHost(raw) : raw;
  }
}

export function validateCriteria(raw: unknown, catalog: PropertyCatalog): ValidationResult {
  const v = new Validator(catalog);
  const criteria = v.envelope(raw);
  if (v.errors.length > 0 || !criteria) {
    return { ok: false, errors: v.errors.length > 0 ? v.errors : [{ code: 'invalid_envelope', path: '', message: 'invalid criteria' }] };
  }
  return { ok: true, criteria, warnings: v.warnings };
}

/** What `breakdown` may name: every kind of Breakdown, spelled as the caller writes it. */
export const BREAKDOWN_NAMES = ['channel_category', 'traits.<key>', 'subscription.status', 'invoice.status'] as const;

/** A breakdown as written (`channel_category`, `traits.plan`, `subscription.status`), or why not. */
export function parseBreakdown(raw: string, catalog: PropertyCatalog): Breakdown | { code: CriteriaErrorCode; message: string } {
  if (raw === 'channel_category') return { kind: 'first_touch_channel' };
  if (raw === 'subscription.status') return { kind: 'payments_status', entity: 'subscription' };
  if (raw === 'invoice.status') return { kind: 'payments_status', entity: 'invoice' };
  if (raw.startsWith(TRAITS_PREFIX)) {
    const path = raw.slice(TRAITS_PREFIX.length);
    if (catalog.traits.has(path)) return { kind: 'trait', path };
    return { code: 'unknown_field', message: `no person has shown the trait "${path}"` };
  }
  return { code: 'unknown_field', message: `breakdown must be one of ${BREAKDOWN_NAMES.join(', ')}` };
}

/**
 * A trait filter outside a tree (the revenue report's `filter`): exactly a person leaf's filter,
 * with its codes, its faults at JSON Pointers under `/<key>` of the request body.
 */
export function validateTraitFilter(raw: unknown, catalog: PropertyCatalog, key: string): { ok: true; predicates: Predicate[] } | { ok: false; errors: CriteriaError[] } {
  const v = new Validator(catalog);
  const predicates = v.traitFilter(raw, step(null, key));
  return predicates && v.errors.length === 0 ? { ok: true, predicates } : { ok: false, errors: v.errors };
}
