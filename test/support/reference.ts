// Reference evaluator: the criteria semantics of docs/criteria.md in plain TypeScript, row by row.
// It is the oracle the property test holds the compiled SQL to, so it favours obviousness over
// speed and shares nothing with src/criteria beyond the AST types.

import type {
  AudienceCriteria, Count, CriteriaNode, PageviewLeaf, PaymentsEventLeaf,
  PaymentsStateLeaf, PersonLeaf, Predicate, PredicateOp, ProductEventLeaf, Scalar, Window,
} from '../../src/criteria/schema.js';
import type {
  Dataset, EventRow, InvoiceRow, PageviewRow, PaymentEventRow, SubscriptionRow,
} from '../../src/store/layout.js';

const DAY_MS = 86_400_000;

/** Profile key of a person. */
export function personProfile(personId: string): string {
  return personId;
}

/** Profile key of a visitor not linked to any person. */
export function anonymousProfile(visitorId: string): string {
  return `v:${visitorId}`;
}

export function referenceProfiles(ds: Dataset, criteria: AudienceCriteria, at: Date): Set<string> {
  if (isNegation(criteria.root)) throw new Error('unanchored negation at the root');
  return evaluate(indexDataset(ds), criteria.root, at.getTime());
}

export function referenceCount(ds: Dataset, criteria: AudienceCriteria, at: Date): number {
  return referenceProfiles(ds, criteria, at).size;
}

// ---------------------------------------------------------------------------------------------
// Ownership: every row resolved once to the profile it belongs to (null = nobody).

interface Owned<R> {
  row: R;
  profile: string | null;
}

interface Index {
  /** Every person with its current traits (parsed); anonymous profiles have none. */
  persons: { profile: string; traits: unknown }[];
  events: Owned<EventRow & { props: unknown }>[];
  pageviews: Owned<PageviewRow>[];
  subscriptions: Owned<SubscriptionRow>[];
  invoices: Owned<InvoiceRow>[];
  paymentEvents: Owned<PaymentEventRow>[];
}

// Keyed by identity: a dataset must not be mutated after its first evaluation.
const indexes = new WeakMap<Dataset, Index>();

function indexDataset(ds: Dataset): Index {
  const cached = indexes.get(ds);
  if (cached) return cached;

  const linkedPerson = new Map<string, string | null>();
  for (const v of ds.visitors) linkedPerson.set(v.visitor_id, v.person_id);

  const visitorProfile = (visitorId: string): string => {
    const personId = linkedPerson.get(visitorId);
    return personId != null ? personProfile(personId) : anonymousProfile(visitorId);
  };

  const customerProfile = new Map<string, string | null>();
  for (const c of ds.customers) {
    let profile: string | null = null;
    if (c.person_id !== null) profile = personProfile(c.person_id);
    else if (c.visitor_id !== null) profile = visitorProfile(c.visitor_id);
    customerProfile.set(c.customer_id, profile);
  }
  const byCustomer = <R extends { customer_id: string }>(row: R): Owned<R> =>
    ({ row, profile: customerProfile.get(row.customer_id) ?? null });

  const index: Index = {
    persons: ds.persons.map((p) => ({ profile: personProfile(p.person_id), traits: p.traits === null ? undefined : parseJson(p.traits) })),
    events: ds.events.map((e) => {
      let profile: string | null = null;
      if (e.person_id !== null) profile = personProfile(e.person_id);
      else if (e.visitor_id !== null) profile = visitorProfile(e.visitor_id);
      return { row: { ...e, props: parseJson(e.properties) }, profile };
    }),
    pageviews: ds.pageviews.map((p) => ({ row: p, profile: visitorProfile(p.visitor_id) })),
    subscriptions: ds.subscriptions.map(byCustomer),
    invoices: ds.invoices.map(byCustomer),
    paymentEvents: ds.payment_events.map(byCustomer),
  };
  indexes.set(ds, index);
  return index;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Tree

function isNegation(node: CriteriaNode): boolean {
  if ('op' in node) return node.op === 'not';
  return 'occurrence' in node && node.occurrence.op === 'did_not';
}

function evaluate(ix: Index, node: CriteriaNode, atMs: number): Set<string> {
  if ('op' in node) {
    switch (node.op) {
      case 'and': return evaluateAnd(ix, node.children, atMs);
      case 'or': {
        const union = new Set<string>();
        for (const child of node.children) {
          if (isNegation(child)) throw new Error('unanchored negation under or');
          for (const p of evaluate(ix, child, atMs)) union.add(p);
        }
        return union;
      }
      case 'not': throw new Error('unanchored not');
    }
  }
  if ('occurrence' in node) {
    if (node.occurrence.op === 'did_not') throw new Error('unanchored did_not');
    return occurrenceProfiles(ix, node, node.occurrence.count, atMs);
  }
  if ('event' in node) return paymentsEventProfiles(ix, node, atMs);
  if (node.source === 'person') return personProfiles(ix, node);
  return paymentsStateProfiles(ix, node);
}

function evaluateAnd(ix: Index, children: CriteriaNode[], atMs: number): Set<string> {
  const positives = children.filter((c) => !isNegation(c));
  const negatives = children.filter(isNegation);
  const [first, ...rest] = positives;
  if (first === undefined) throw new Error('and without a positive child');

  let result = evaluate(ix, first, atMs);
  for (const child of rest) {
    const set = evaluate(ix, child, atMs);
    result = new Set([...result].filter((p) => set.has(p)));
  }
  for (const child of negatives) {
    for (const p of negatedSet(ix, child, atMs)) result.delete(p);
  }
  return result;
}

/** What a negative child subtracts: a not's child, or a did_not leaf read as "did at least once". */
function negatedSet(ix: Index, child: CriteriaNode, atMs: number): Set<string> {
  if ('op' in child && child.op === 'not') return evaluate(ix, child.child, atMs);
  if ('occurrence' in child) return occurrenceProfiles(ix, child, null, atMs);
  throw new Error('not a negation');
}

// ---------------------------------------------------------------------------------------------
// Leaves

/** Profiles whose number of matching rows `c` satisfies `count` (null = at least once) and c >= 1. */
function occurrenceProfiles(
  ix: Index, leaf: ProductEventLeaf | PageviewLeaf, count: Count | null, atMs: number,
): Set<string> {
  const window = leaf.occurrence.window;
  const counts = new Map<string, number>();
  const tally = (profile: string | null): void => {
    if (profile !== null) counts.set(profile, (counts.get(profile) ?? 0) + 1);
  };

  if (leaf.source === 'product_event') {
    for (const { row, profile } of ix.events) {
      if (row.event_name !== leaf.name || !inWindow(row.ts, window, atMs)) continue;
      if (leaf.filter.every((p) => matches(jsonValue(row.props, PAYLOAD, p.field), p))) tally(profile);
    }
  } else {
    for (const { row, profile } of ix.pageviews) {
      if (!inWindow(row.ts, window, atMs)) continue;
      if (leaf.filter.every((p) => matches(pageviewValue(row, p.field), p))) tally(profile);
    }
  }

  const result = new Set<string>();
  for (const [profile, c] of counts) {
    if (c >= 1 && (count === null || compareCount(c, count))) result.add(profile);
  }
  return result;
}

function compareCount(c: number, { op, value }: Count): boolean {
  switch (op) {
    case '>=': return c >= value;
    case '>': return c > value;
    case '=': return c === value;
    case '<=': return c <= value;
    case '<': return c < value;
    case '!=': return c !== value;
  }
}

function paymentsEventProfiles(ix: Index, leaf: PaymentsEventLeaf, atMs: number): Set<string> {
  const result = new Set<string>();
  for (const { row, profile } of ix.paymentEvents) {
    if (profile !== null && row.kind === leaf.event && inWindow(row.ts, leaf.window, atMs)) {
      result.add(profile);
    }
  }
  return result;
}

function paymentsStateProfiles(ix: Index, leaf: PaymentsStateLeaf): Set<string> {
  const result = new Set<string>();
  const add = <R>(rows: Owned<R>[], value: (row: R, field: string) => unknown): void => {
    for (const { row, profile } of rows) {
      if (profile !== null && leaf.predicate.every((p) => matches(value(row, p.field), p))) {
        result.add(profile);
      }
    }
  };
  if (leaf.entity === 'subscription') add(ix.subscriptions, subscriptionValue);
  else add(ix.invoices, invoiceValue);
  return result;
}

function personProfiles(ix: Index, leaf: PersonLeaf): Set<string> {
  const result = new Set<string>();
  for (const { profile, traits } of ix.persons) {
    if (leaf.filter.every((p) => matches(jsonValue(traits, TRAITS, p.field), p))) result.add(profile);
  }
  return result;
}

function inWindow(ts: Date, window: Window, atMs: number): boolean {
  const t = ts.getTime();
  switch (window.kind) {
    case 'ever': return true;
    case 'last_n_days': return atMs - window.n * DAY_MS <= t && t <= atMs;
    case 'between': {
      const to = window.to.getTime();
      return window.from.getTime() <= t && (window.toExclusive ? t < to : t <= to);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Field values (undefined = absent)

const PAYLOAD = 'payload.';
const TRAITS = 'traits.';

/** The value at `<prefix>a.b` of a JSON document: `doc.a.b`, absent where a step is not an object. */
function jsonValue(doc: unknown, prefix: string, field: string): unknown {
  if (!field.startsWith(prefix)) throw new Error(`not a ${prefix} field: ${field}`);
  let value: unknown = doc;
  for (const step of field.slice(prefix.length).split('.')) {
    if (!isPlainObject(value) || !Object.hasOwn(value, step)) return undefined;
    value = value[step];
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pageviewValue(row: PageviewRow, field: string): unknown {
  switch (field) {
    case 'path': return row.path;
    case 'host': return row.host;
    case 'channel': return row.channel;
    case 'channel_category': return row.channel_category;
    case 'medium': return row.medium;
    case 'campaign': return row.campaign;
    case 'referrer_host': return row.referrer_host;
    default: throw new Error(`unknown pageview field: ${field}`);
  }
}

function subscriptionValue(row: SubscriptionRow, field: string): unknown {
  switch (field) {
    case 'status': return row.status;
    case 'price_id': return row.price_id;
    case 'product_id': return row.product_id;
    case 'interval': return row.interval;
    case 'amount': return row.amount;
    case 'currency': return row.currency;
    case 'cancel_at_period_end': return row.cancel_at_period_end;
    default: throw new Error(`unknown subscription field: ${field}`);
  }
}

function invoiceValue(row: InvoiceRow, field: string): unknown {
  switch (field) {
    case 'status': return row.status;
    case 'amount_due': return row.amount_due;
    case 'amount_paid': return row.amount_paid;
    case 'currency': return row.currency;
    default: throw new Error(`unknown invoice field: ${field}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Predicates

/** Whether row value `x` satisfies the predicate; JSON null and missing values are both absent. */
export function matches(x: unknown, predicate: Predicate): boolean {
  const present = x !== undefined && x !== null;
  const { op, value } = predicate;
  switch (op) {
    case '!=': return !matches(x, { ...predicate, op: '=' });
    case 'not_in': return !matches(x, { ...predicate, op: 'in' });
    case 'not_contains': return !matches(x, { ...predicate, op: 'contains' });
    case 'is_not_set': return !present;
    case 'is_set': return present;
    case '=': return isScalar(value) && equals(x, value);
    case 'in': return Array.isArray(value) && value.some((v) => equals(x, v));
    case '>': case '>=': case '<': case '<=': return compare(op, x, value);
    case 'contains': case 'starts_with': case 'ends_with': {
      if (typeof x !== 'string' || typeof value !== 'string') return false;
      const haystack = x.toLowerCase();
      const needle = value.toLowerCase();
      if (op === 'contains') return haystack.includes(needle);
      return op === 'starts_with' ? haystack.startsWith(needle) : haystack.endsWith(needle);
    }
  }
}

function isScalar(value: unknown): value is Scalar {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** `=`: present, of the value's type, and equal. */
function equals(x: unknown, value: Scalar): boolean {
  return typeof x === typeof value && x === value;
}

function compare(op: PredicateOp, x: unknown, value: unknown): boolean {
  const bothNumbers = typeof x === 'number' && typeof value === 'number';
  const bothStrings = typeof x === 'string' && typeof value === 'string';
  if (!bothNumbers && !bothStrings) return false;
  // JS compares UTF-16 units: code-point order except around surrogate pairs; test data is ASCII.
  const a = x as number | string;
  const b = value as number | string;
  switch (op) {
    case '>': return a > b;
    case '>=': return a >= b;
    case '<': return a < b;
    case '<=': return a <= b;
    default: throw new Error(`not a comparison: ${op}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Person merges (decisions §12, docs/merges.md), applied to a dataset: what the evaluator then reads.

const traitsObject = (traits: string | null): Record<string, unknown> => {
  const parsed = traits === null ? null : parseJson(traits);
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed as Record<string, unknown> : {};
};

/**
 * The dataset after merging person `fromId` into `intoId`: from's visitors, events and payment
 * customers are into's; into's traits win over from's (shallow), and into takes the external_id,
 * email and name it has none of; from is gone.
 */
export function mergeIntoReference(ds: Dataset, fromId: string, intoId: string): Dataset {
  const from = ds.persons.find((p) => p.person_id === fromId)!;
  const to = (id: string | null) => (id === fromId ? intoId : id);
  return {
    ...ds,
    persons: ds.persons.filter((p) => p.person_id !== fromId).map((p) => (p.person_id !== intoId ? p : {
      ...p, external_id: p.external_id ?? from.external_id, email: p.email ?? from.email, name: p.name ?? from.name,
      traits: JSON.stringify({ ...traitsObject(from.traits), ...traitsObject(p.traits) }),
    })),
    visitors: ds.visitors.map((v) => ({ ...v, person_id: to(v.person_id) })),
    events: ds.events.map((e) => ({ ...e, person_id: to(e.person_id) })),
    customers: ds.customers.map((c) => ({ ...c, person_id: to(c.person_id) })),
  };
}
