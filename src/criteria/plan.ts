// Plan: a validated tree → set operations over leaf scans, with windows resolved against the
// evaluation time. Dialect-free: each SQL printer (sql.ts) walks the same plan.

import type {
  AudienceCriteria, Count, CriteriaNode, Leaf, PaymentEventKind, PaymentsEntity, Predicate, Window,
} from './schema.js';
import { isNegation, PAYLOAD_PREFIX } from './schema.js';

const DAY_MS = 86_400_000;

/** A closed-open or closed time range; unset ends are unbounded. */
export interface TimeRange {
  from?: Date;
  to?: Date;
  toExclusive: boolean;
}

/**
 * One scan of a table. Event and page-view rows match when they satisfy every predicate of at
 * least one group of `anyOf`: a leaf has one group; an `or` of leaves that differ only in their
 * filters becomes one scan with a group each (one pass over the table instead of several).
 */
export type LeafScan =
  | { table: 'events'; name: string; anyOf: Predicate[][]; range: TimeRange; count: Count | null; typed?: TypedPaths }
  | { table: 'pageviews'; anyOf: Predicate[][]; range: TimeRange; count: Count | null }
  | { table: 'payment_events'; kind: PaymentEventKind; range: TimeRange }
  | { table: 'subscriptions' | 'invoices'; predicates: Predicate[] }
  /** Persons by their current traits (predicates on `traits.<path>`). */
  | { table: 'persons'; predicates: Predicate[] };

/** The JSON types a payload value has, as typed storage keeps them apart. */
export type ScalarKind = 'string' | 'number' | 'boolean';

/**
 * Payload paths of one event name that a store keeps typed beside the JSON (store/duckdb/typed.ts):
 * per path and JSON type, the slot holding exactly the rows' values of that type at that path
 * (absent on rows where the value is of another type, absent or null). A printer may read a
 * predicate's value type from its slot instead of parsing the JSON; anything else reads the JSON.
 */
export type TypedPaths = Readonly<Record<string, Readonly<Partial<Record<ScalarKind, number>>>>>;

/** Sets of profiles. `count: null` on a scan means at least once. */
export type SetPlan =
  | { kind: 'scan'; scan: LeafScan }
  | { kind: 'intersect'; inputs: SetPlan[] }
  | { kind: 'union'; inputs: SetPlan[] }
  | { kind: 'except'; input: SetPlan; minus: SetPlan[] };

export function resolveWindow(window: Window, at: Date): TimeRange {
  switch (window.kind) {
    case 'ever':
      return { toExclusive: false };
    case 'last_n_days':
      return { from: new Date(at.getTime() - window.n * DAY_MS), to: at, toExclusive: false };
    case 'between':
      return { from: window.from, to: window.to, toExclusive: window.toExclusive };
  }
}

/** Counts that every profile with one matching row satisfies: read as a plain DISTINCT. */
function atLeastOnce(count: Count | null): boolean {
  if (count === null) return true;
  if (count.op === '>=') return count.value <= 1;
  return (count.op === '>' || count.op === '!=') && count.value === 0;
}

function scanOf(leaf: Leaf, at: Date, positive: boolean): LeafScan {
  if ('occurrence' in leaf) {
    const range = resolveWindow(leaf.occurrence.window, at);
    // A did_not leaf subtracts those who did it at least once; its count is null by validation.
    const count = positive && !atLeastOnce(leaf.occurrence.count) ? leaf.occurrence.count : null;
    return leaf.source === 'product_event'
      ? { table: 'events', name: leaf.name, anyOf: [leaf.filter], range, count }
      : { table: 'pageviews', anyOf: [leaf.filter], range, count };
  }
  if ('event' in leaf) return { table: 'payment_events', kind: leaf.event, range: resolveWindow(leaf.window, at) };
  if (leaf.source === 'person') return { table: 'persons', predicates: leaf.filter };
  const table: Record<PaymentsEntity, 'subscriptions' | 'invoices'> = { subscription: 'subscriptions', invoice: 'invoices' };
  return { table: table[leaf.entity], predicates: leaf.predicate };
}

function planNode(node: CriteriaNode, at: Date): SetPlan {
  if (!('op' in node)) return { kind: 'scan', scan: scanOf(node, at, true) };
  switch (node.op) {
    case 'or':
      return flatten('union', mergeScans(node.children.map((c) => planNode(c, at))));
    case 'not':
      // Only reachable through an anchored parent `and`, which subtracts it (see below).
      return planNode(node.child, at);
    case 'and': {
      const positives = node.children.filter((c) => !isNegation(c)).map((c) => planNode(c, at));
      const minus = node.children.filter(isNegation).map((c): SetPlan =>
        'op' in c && c.op === 'not' ? planNode(c.child, at) : { kind: 'scan', scan: scanOf(c as Leaf, at, false) });
      const input = flatten('intersect', positives);
      return minus.length === 0 ? input : { kind: 'except', input, minus };
    }
  }
}

/** Merges union inputs that scan the same rows (table, event name, window, at least once) but for filters. */
function mergeScans(inputs: SetPlan[]): SetPlan[] {
  const out: SetPlan[] = [];
  const merged = new Map<string, { anyOf: Predicate[][] }>();
  for (const input of inputs) {
    const scan = input.kind === 'scan' ? input.scan : null;
    if (!scan || (scan.table !== 'events' && scan.table !== 'pageviews') || scan.count !== null) {
      out.push(input);
      continue;
    }
    const key = JSON.stringify([scan.table, 'name' in scan ? scan.name : null, scan.range]);
    const existing = merged.get(key);
    if (existing) {
      existing.anyOf.push(...scan.anyOf);
    } else {
      const copy = { ...scan, anyOf: [...scan.anyOf] };
      merged.set(key, copy);
      out.push({ kind: 'scan', scan: copy });
    }
  }
  return out;
}

function flatten(kind: 'union' | 'intersect', inputs: SetPlan[]): SetPlan {
  const flat = inputs.flatMap((p) => (p.kind === kind ? p.inputs : [p]));
  return flat.length === 1 ? flat[0]! : { kind, inputs: flat };
}

/** Plans a validated criteria tree at evaluation time `at`. */
export function planCriteria(criteria: AudienceCriteria, at: Date): SetPlan {
  return planNode(criteria.root, at);
}

/**
 * A deterministic sample of profiles: those whose hash (salted) modulo `modulus` is below `keep`,
 * a fraction keep / modulus of every set. Taking it inside every leaf gives exactly the sampled
 * part of the plan's set, since set operations commute with a filter on the profile.
 */
export interface Sample {
  modulus: number;
  keep: number;
  salt: number;
}

export const sampleFraction = (sample: Sample): number => sample.keep / sample.modulus;

/**
 * What a breakdown groups an audience's profiles by: the first touch's channel_category (as
 * `first_touch_channel` shows it: `Non-attributed` without a page view), a trait's current value
 * (its JSON scalar as text), or the status of the profile's latest subscription or invoice.
 */
export type Breakdown =
  | { kind: 'first_touch_channel' }
  | { kind: 'trait'; path: string }
  | { kind: 'payments_status'; entity: PaymentsEntity };

/** Rows a breakdown answers: the most frequent values, the rest as `(other)`. */
export const BREAKDOWN_TOP = 20;

/** The first-touch value of a profile without a page view (decisions §10, `first_touch_channel`). */
export const NON_ATTRIBUTED = 'Non-attributed';

/**
 * The plan with each event scan's typed paths (`typedOf(name)`, undefined when none are ready).
 * A physical annotation: the rows a plan selects are the same with or without it.
 */
export function withTypedPaths(plan: SetPlan, typedOf: (name: string) => TypedPaths | undefined): SetPlan {
  switch (plan.kind) {
    case 'scan': {
      const scan = plan.scan;
      if (scan.table !== 'events') return plan;
      const all = typedOf(scan.name);
      const typed: Record<string, Partial<Record<ScalarKind, number>>> = {};
      for (const predicate of scan.anyOf.flat()) {
        const path = predicate.field.slice(PAYLOAD_PREFIX.length);
        if (all && Object.hasOwn(all, path)) typed[path] = all[path]!;
      }
      return Object.keys(typed).length > 0 ? { kind: 'scan', scan: { ...scan, typed } } : plan;
    }
    case 'intersect':
    case 'union':
      return { kind: plan.kind, inputs: plan.inputs.map((p) => withTypedPaths(p, typedOf)) };
    case 'except':
      return { kind: 'except', input: withTypedPaths(plan.input, typedOf), minus: plan.minus.map((p) => withTypedPaths(p, typedOf)) };
  }
}
