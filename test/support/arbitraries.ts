// fast-check arbitraries for the property test: small datasets whose values come from tiny domains
// (so predicates actually hit), and valid, anchored criteria trees over the same domains.

import fc from 'fast-check';
import {
  CHANNEL_CATEGORIES, COUNT_OPS, INVOICE_STATUSES, OPS_BY_TYPE, PAGEVIEW_FIELDS,
  PAYMENT_EVENT_KINDS, PAYMENTS_FIELDS, SUBSCRIPTION_STATUSES,
} from '../../src/criteria/schema.js';
import type {
  AudienceCriteria, Count, CriteriaNode, FieldSpec, FieldType, Occurrence, PaymentsEntity,
  Predicate, PredicateOp, PropertyCatalog, Scalar, Window,
} from '../../src/criteria/schema.js';
import type {
  CustomerRow, Dataset, EventRow, InvoiceRow, PageviewRow, PaymentEventRow, PersonRow,
  SubscriptionRow, VisitorRow,
} from '../../src/store/layout.js';

/** Evaluation time of every generated case. */
export const AT = new Date('2026-06-15T12:00:00.000Z');

const DAY_MS = 86_400_000;
const AT_MS = AT.getTime();
const AT_MIDNIGHT_MS = Date.UTC(2026, 5, 15);
const SPAN_DAYS = 40;
/** Midnights used both as data and as window bounds come from a narrow span, so they collide. */
const EDGE_DAYS = 8;

export const EVENT_NAMES = ['signup', 'purchase', 'view_item'] as const;
export const PAYLOAD_PATHS = ['plan', 'amount', 'coupon', 'item', 'item.category', 'item.price'] as const;
type PayloadPath = (typeof PAYLOAD_PATHS)[number];
export const TRAIT_PATHS = ['plan', 'seats', 'beta', 'company', 'company.size', 'company.name'] as const;
type TraitPath = (typeof TRAIT_PATHS)[number];

/** Every payload path whitelisted on every event name, and every trait path, whatever a given dataset happens to hold. */
export const PROPERTY_CATALOG: PropertyCatalog = {
  events: new Map(EVENT_NAMES.map((name) => [name, new Set<string>(PAYLOAD_PATHS)])),
  traits: new Set<string>(TRAIT_PATHS),
};

// ---------------------------------------------------------------------------------------------
// Time

/** Instants that sit exactly on (or 1 ms beside) a window edge: T, T - n days, UTC midnights. */
const edgeMsArb: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(AT_MS, AT_MS - 1, AT_MS + 1),
  fc.tuple(fc.integer({ min: 1, max: 30 }), fc.constantFrom(-1, 0, 1))
    .map(([n, offset]) => AT_MS - n * DAY_MS + offset),
  fc.tuple(fc.integer({ min: -EDGE_DAYS, max: EDGE_DAYS }), fc.constantFrom(-1, 0))
    .map(([day, offset]) => AT_MIDNIGHT_MS + day * DAY_MS + offset),
);

const instantMsArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: AT_MS - SPAN_DAYS * DAY_MS, max: AT_MS + SPAN_DAYS * DAY_MS }) },
  { weight: 2, arbitrary: edgeMsArb },
);

const tsArb: fc.Arbitrary<Date> = instantMsArb.map((ms) => new Date(ms));

// ---------------------------------------------------------------------------------------------
// Datasets

// Arrays use size 'max' so the length range is used in full (the default size keeps them tiny).

/** Picks a row by a free index, so references stay valid whatever the table sizes. */
function pick<T>(rows: readonly T[], ref: number): T {
  const row = rows[ref % rows.length];
  if (row === undefined) throw new Error('pick from an empty table');
  return row;
}

const itemArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      category: fc.constantFrom('books', 'games', 'Toys'),
      price: fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 1, max: 50 }) },
        { weight: 1, arbitrary: fc.constant('5') },
      ),
    }, { requiredKeys: [] }),
  },
  // Not an object: `item.category` and `item.price` are absent under it.
  { weight: 1, arbitrary: fc.constantFrom(null, 'books', 7) },
);

const propertiesArb: fc.Arbitrary<string> = fc.record({
  plan: fc.constantFrom('free', 'pro', 'team'),
  amount: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(0, 1, 10, 50, 100) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 100 }) },
    // 2.5 is a non-integer number; '10' a type mismatch; null counts as absent.
    { weight: 2, arbitrary: fc.constantFrom(2.5, '10', null) },
  ),
  coupon: fc.constantFrom(true, false, null),
  item: itemArb,
}, { requiredKeys: [] }).map((props) => JSON.stringify(props));

const companyArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      size: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(10, 50, 200) }, { weight: 1, arbitrary: fc.constantFrom('50', null) }),
      name: fc.constantFrom('Acme', 'acme corp', 'Zeta'),
    }, { requiredKeys: [] }),
  },
  // Not an object: `company.size` and `company.name` are absent under it.
  { weight: 1, arbitrary: fc.constantFrom(null, 'acme', 7) },
);

/** Current traits: mixed types per key (a number never equals its string), nesting, nulls (stored as sent). */
const traitsArb: fc.Arbitrary<string | null> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      plan: fc.constantFrom('free', 'pro', 'team', 'Pro', null),
      seats: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 50 }) }, { weight: 1, arbitrary: fc.constantFrom(2.5, '10', null) }),
      beta: fc.constantFrom(true, false, 'true', null),
      company: companyArb,
    }, { requiredKeys: [] }).map((traits) => JSON.stringify(traits)),
  },
  // No traits at all, and (from an import) traits that are not an object.
  { weight: 2, arbitrary: fc.constantFrom(null, '{}', '"pro"', '[1]') },
);

const personSpecArb = fc.record({
  email: fc.option(fc.constantFrom('a@example.com', 'b@example.com')),
  name: fc.option(fc.constantFrom('Ada', 'Bo')),
  traits: traitsArb,
  created_at: tsArb,
});

const eventSpecArb = fc.record({
  name: fc.constantFrom(...EVENT_NAMES),
  ts: tsArb,
  // 'both' may name a person other than the visitor's current one; 'none' belongs to nobody.
  owner: fc.constantFrom('person', 'visitor', 'visitor', 'both', 'none'),
  personRef: fc.nat(),
  visitorRef: fc.nat(),
  properties: propertiesArb,
});

const pageviewSpecArb = fc.record({
  visitorRef: fc.nat(),
  ts: tsArb,
  host: fc.constantFrom('example.com', 'shop.example.com'),
  path: fc.constantFrom('/', '/pricing', '/blog/a'),
  referrer_host: fc.option(fc.constantFrom('google.com', 'chatgpt.com', 'example.com')),
  source: fc.option(fc.constantFrom('google', 'newsletter')),
  medium: fc.option(fc.constantFrom('organic', 'email', 'cpc')),
  campaign: fc.option(fc.constantFrom('spring', 'launch')),
  channel: fc.constantFrom('google', 'chatgpt', 'direct', 'newsletter', 'facebook'),
  channel_category: fc.constantFrom(...CHANNEL_CATEGORIES),
});

const customerSpecArb = fc.record({
  link: fc.constantFrom('person', 'person_and_visitor', 'visitor', 'neither'),
  personRef: fc.nat(),
  visitorRef: fc.nat(),
  email: fc.option(fc.constantFrom('a@example.com', 'c@example.com')),
  emailMatched: fc.boolean(),
});

const subscriptionSpecArb = fc.record({
  customerRef: fc.nat(),
  status: fc.constantFrom(...SUBSCRIPTION_STATUSES),
  price_id: fc.option(fc.constantFrom('price_basic', 'price_pro')),
  product_id: fc.option(fc.constantFrom('prod_a', 'prod_b')),
  interval: fc.option(fc.constantFrom('month', 'year', 'week')),
  amount: fc.option(fc.constantFrom(0, 900, 1900, 4900)),
  currency: fc.option(fc.constantFrom('usd', 'eur')),
  cancel_at_period_end: fc.boolean(),
  created_at: tsArb,
});

const invoiceSpecArb = fc.record({
  customerRef: fc.nat(),
  subscriptionRef: fc.option(fc.nat()),
  status: fc.constantFrom(...INVOICE_STATUSES),
  amount_due: fc.constantFrom(0, 900, 1900),
  amount_paid: fc.constantFrom(0, 900, 1900),
  currency: fc.constantFrom('usd', 'eur'),
  created_at: tsArb,
});

const paymentEventSpecArb = fc.record({
  customerRef: fc.nat(),
  kind: fc.constantFrom(...PAYMENT_EVENT_KINDS),
  ts: tsArb,
});

export const datasetArb: fc.Arbitrary<Dataset> = fc.record({
  persons: fc.array(personSpecArb, { minLength: 3, maxLength: 12, size: 'max' }),
  visitors: fc.array(fc.option(fc.nat(), { freq: 3 }), { minLength: 3, maxLength: 15, size: 'max' }),
  events: fc.array(eventSpecArb, { maxLength: 60, size: 'max' }),
  pageviews: fc.array(pageviewSpecArb, { maxLength: 40, size: 'max' }),
  customers: fc.array(customerSpecArb, { maxLength: 8, size: 'max' }),
  subscriptions: fc.array(subscriptionSpecArb, { maxLength: 10, size: 'max' }),
  invoices: fc.array(invoiceSpecArb, { maxLength: 10, size: 'max' }),
  payment_events: fc.array(paymentEventSpecArb, { maxLength: 10, size: 'max' }),
}).map((spec): Dataset => {
  const persons: PersonRow[] = spec.persons.map((p, i) => ({
    person_id: `p${i + 1}`,
    external_id: i % 2 === 0 ? `ext${i + 1}` : null,
    ...p,
  }));
  const visitors: VisitorRow[] = spec.visitors.map((personRef, i) => ({
    visitor_id: `v${i + 1}`,
    person_id: personRef === null ? null : pick(persons, personRef).person_id,
    first_seen_at: new Date(AT_MS - SPAN_DAYS * DAY_MS - (i + 1) * 3_600_000),
  }));
  const personId = (ref: number): string => pick(persons, ref).person_id;
  const visitorId = (ref: number): string => pick(visitors, ref).visitor_id;

  const events: EventRow[] = spec.events.map((e, i) => ({
    event_id: `e${i + 1}`,
    event_name: e.name,
    ts: e.ts,
    person_id: e.owner === 'person' || e.owner === 'both' ? personId(e.personRef) : null,
    visitor_id: e.owner === 'visitor' || e.owner === 'both' ? visitorId(e.visitorRef) : null,
    properties: e.properties,
  }));

  const pageviews: PageviewRow[] = spec.pageviews.map(({ visitorRef, ...pv }, i) => ({
    pageview_id: `pv${i + 1}`,
    visitor_id: visitorId(visitorRef),
    url: `https://${pv.host}${pv.path}`,
    referrer: pv.referrer_host === null ? null : `https://${pv.referrer_host}/`,
    ...pv,
  }));

  const customers: CustomerRow[] = spec.customers.map((c, i) => {
    const hasPerson = c.link === 'person' || c.link === 'person_and_visitor';
    const hasVisitor = c.link === 'visitor' || c.link === 'person_and_visitor';
    return {
      customer_id: `c${i + 1}`,
      email: c.email,
      person_id: hasPerson ? personId(c.personRef) : null,
      visitor_id: hasVisitor ? visitorId(c.visitorRef) : null,
      link_state: hasPerson ? (c.emailMatched ? 'email_matched' : 'linked') : hasVisitor ? 'deferred' : 'unmatched',
    };
  });
  // Billing rows need a customer to hang on.
  if (customers.length === 0) {
    return { persons, visitors, events, pageviews, customers, subscriptions: [], invoices: [], payment_events: [] };
  }
  const customerId = (ref: number): string => pick(customers, ref).customer_id;

  const subscriptions: SubscriptionRow[] = spec.subscriptions.map(({ customerRef, ...s }, i) => ({
    subscription_id: `sub${i + 1}`,
    customer_id: customerId(customerRef),
    ...s,
  }));
  const invoices: InvoiceRow[] = spec.invoices.map(({ customerRef, subscriptionRef, ...inv }, i) => {
    const customer_id = customerId(customerRef);
    const own = subscriptions.filter((s) => s.customer_id === customer_id);
    return {
      invoice_id: `in${i + 1}`,
      customer_id,
      subscription_id: subscriptionRef === null || own.length === 0 ? null : pick(own, subscriptionRef).subscription_id,
      ...inv,
    };
  });
  const payment_events: PaymentEventRow[] = spec.payment_events.map((pe, i) => ({
    customer_id: customerId(pe.customerRef),
    kind: pe.kind,
    ts: pe.ts,
    object_id: `obj${i + 1}`,
  }));
  return { persons, visitors, events, pageviews, customers, subscriptions, invoices, payment_events };
});

// ---------------------------------------------------------------------------------------------
// Predicates

/** Filter values by type; each field's own type is drawn more often than the others. */
interface ValueDomain {
  own: FieldType | null;
  string: readonly string[];
  number: readonly number[];
  boolean: readonly boolean[];
}

const TRAIT_VALUES: Record<TraitPath, ValueDomain> = {
  plan: { own: 'string', string: ['free', 'pro', 'team', 'Pro', 'e', 'TE'], number: [0, 1], boolean: [true] },
  seats: { own: 'number', string: ['10', '1'], number: [0, 1, 10, 2.5, 25, 50], boolean: [false] },
  beta: { own: 'boolean', string: ['true'], number: [0, 1], boolean: [true, false] },
  company: { own: null, string: ['acme'], number: [7], boolean: [true] },
  'company.size': { own: 'number', string: ['50'], number: [10, 50, 200, 100], boolean: [true] },
  'company.name': { own: 'string', string: ['Acme', 'acme', 'ac', 'CORP', 'Zeta'], number: [1], boolean: [false] },
};

const PAYLOAD_VALUES: Record<PayloadPath, ValueDomain> = {
  plan: { own: 'string', string: ['free', 'pro', 'team', 'Pro', 'e', 'TE'], number: [0, 1], boolean: [true] },
  amount: { own: 'number', string: ['10', '1'], number: [0, 1, 10, 2.5, 50, 100], boolean: [false] },
  coupon: { own: 'boolean', string: ['true'], number: [0, 1], boolean: [true, false] },
  item: { own: null, string: ['books'], number: [7], boolean: [true] },
  'item.category': {
    own: 'string', string: ['books', 'games', 'Toys', 'toys', 'o', 'BOO', 's'], number: [1], boolean: [false],
  },
  'item.price': { own: 'number', string: ['5'], number: [1, 5, 25, 50, 2.5], boolean: [true] },
};

/** Values of typed columns; hosts are already normalized, as the validated AST carries them. */
const COLUMN_VALUES: Record<string, readonly string[] | readonly number[]> = {
  path: ['/', '/pricing', '/blog/a', '/blog', '/PRICING', 'a'],
  host: ['example.com', 'shop.example.com', 'shop', 'example'],
  channel: ['google', 'chatgpt', 'direct', 'newsletter', 'facebook', 'goo', 'Google'],
  medium: ['organic', 'email', 'cpc', 'e'],
  campaign: ['spring', 'launch', 'SPR'],
  referrer_host: ['google.com', 'chatgpt.com', 'example.com', 'com'],
  price_id: ['price_basic', 'price_pro', 'price', 'PRO'],
  product_id: ['prod_a', 'prod_b', 'prod_'],
  amount: [0, 900, 1000, 1900, 4900],
  amount_due: [0, 900, 1000, 1900],
  amount_paid: [0, 900, 1900],
  currency: ['usd', 'eur', 'US'],
};

const COMPARISONS: readonly PredicateOp[] = ['>', '>=', '<', '<='];
const SUBSTRING_OPS: readonly PredicateOp[] = ['contains', 'not_contains', 'starts_with', 'ends_with'];
const SET_OPS: readonly PredicateOp[] = ['is_set', 'is_not_set'];
const ENUM_OPS: readonly PredicateOp[] = ['=', '!=', 'in', 'not_in'];

/** A predicate with a value fit for `op`, drawn from `values` (a one-type domain). */
function predicateArb(field: string, op: PredicateOp, values: readonly Scalar[]): fc.Arbitrary<Predicate> {
  if (SET_OPS.includes(op)) return fc.constant({ field, op });
  if (op === 'in' || op === 'not_in') {
    return fc.uniqueArray(fc.constantFrom(...values), { minLength: 1, maxLength: 3 })
      .map((value) => ({ field, op, value }));
  }
  return fc.constantFrom(...values).map((value) => ({ field, op, value }));
}

/** A predicate on a JSON path (`payload.<path>`, `traits.<path>`), values drawn from its domain. */
function jsonPredicateArb(field: string, domain: ValueDomain): fc.Arbitrary<Predicate> {
  const typed = (type: FieldType) => ({ weight: type === domain.own ? 4 : 1, arbitrary: fc.constant(type) });
  const anyType = fc.oneof(typed('string'), typed('number'), typed('boolean'));
  const orderedType = fc.oneof(typed('string'), typed('number'));
  // JSON fields take every op; the value's JSON type must suit the op.
  return fc.constantFrom(...OPS_BY_TYPE.string).chain((op) => {
    if (SET_OPS.includes(op)) return predicateArb(field, op, []);
    if (SUBSTRING_OPS.includes(op)) return predicateArb(field, op, domain.string);
    const typeArb = COMPARISONS.includes(op) ? orderedType : anyType;
    return typeArb.chain((type) => predicateArb(field, op, domain[type]));
  });
}

function columnPredicateArb(field: string, spec: FieldSpec): fc.Arbitrary<Predicate> {
  if (spec.enum) {
    const values = spec.enum;
    return fc.constantFrom(...ENUM_OPS).chain((op) => predicateArb(field, op, values));
  }
  const values: readonly Scalar[] = spec.type === 'boolean' ? [true, false] : COLUMN_VALUES[field] ?? [];
  if (values.length === 0) throw new Error(`no test values for ${field}`);
  return fc.constantFrom(...OPS_BY_TYPE[spec.type]).chain((op) => predicateArb(field, op, values));
}

/** 0..3 predicates on distinct fields (a wire filter is an object keyed by field). */
function filterArb(
  fields: readonly string[], predicate: (field: string) => fc.Arbitrary<Predicate>,
): fc.Arbitrary<Predicate[]> {
  return fc.subarray([...fields], { maxLength: 3 })
    .chain((chosen) => fc.tuple(...chosen.map(predicate)));
}

const payloadFilterArb = filterArb(PAYLOAD_PATHS, (path) => jsonPredicateArb(`payload.${path}`, PAYLOAD_VALUES[path as PayloadPath]));
const traitFilterArb = filterArb(TRAIT_PATHS, (path) => jsonPredicateArb(`traits.${path}`, TRAIT_VALUES[path as TraitPath]));
const columnFilterArb = (fields: Record<string, FieldSpec>) =>
  filterArb(Object.keys(fields), (field) => columnPredicateArb(field, fieldSpec(fields, field)));
const pageviewFilterArb = columnFilterArb(PAGEVIEW_FIELDS);

function fieldSpec(fields: Record<string, FieldSpec>, field: string): FieldSpec {
  const spec = fields[field];
  if (!spec) throw new Error(`unknown field ${field}`);
  return spec;
}

// ---------------------------------------------------------------------------------------------
// Windows and occurrences

const midnightArb = fc.integer({ min: -EDGE_DAYS, max: EDGE_DAYS }).map((day) => AT_MIDNIGHT_MS + day * DAY_MS);

const windowArb: fc.Arbitrary<Window> = fc.oneof(
  fc.constant({ kind: 'ever' as const }),
  fc.integer({ min: 1, max: 30 }).map((n) => ({ kind: 'last_n_days' as const, n })),
  // Date-only bounds: `to` is stored as the midnight after the written day, exclusive.
  fc.tuple(midnightArb, midnightArb).map(([a, b]) => ({
    kind: 'between' as const,
    from: new Date(Math.min(a, b)),
    to: new Date(Math.max(a, b) + DAY_MS),
    toExclusive: true,
  })),
  // Datetime bounds, inclusive; midnights and T - n days included to collide with the data.
  fc.tuple(instantMsArb, instantMsArb).map(([a, b]) => ({
    kind: 'between' as const,
    from: new Date(Math.min(a, b)),
    to: new Date(Math.max(a, b)),
    toExclusive: false,
  })),
);

const countArb: fc.Arbitrary<Count | null> = fc.oneof(
  fc.constant(null),
  fc.constant({ op: '>=' as const, value: 1 }),
  fc.record({ op: fc.constantFrom(...COUNT_OPS), value: fc.integer({ min: 0, max: 4 }) }),
);

function occurrenceArb(op: Occurrence['op']): fc.Arbitrary<Occurrence> {
  return fc.record({ op: fc.constant(op), count: op === 'did' ? countArb : fc.constant(null), window: windowArb });
}

// ---------------------------------------------------------------------------------------------
// Leaves and trees

function productEventArb(op: Occurrence['op']): fc.Arbitrary<CriteriaNode> {
  return fc.record({
    source: fc.constant('product_event' as const),
    name: fc.constantFrom(...EVENT_NAMES),
    filter: payloadFilterArb,
    occurrence: occurrenceArb(op),
  });
}

function pageviewArb(op: Occurrence['op']): fc.Arbitrary<CriteriaNode> {
  return fc.record({
    source: fc.constant('pageview' as const),
    filter: pageviewFilterArb,
    occurrence: occurrenceArb(op),
  });
}

const paymentsEventArb: fc.Arbitrary<CriteriaNode> = fc.record({
  source: fc.constant('payments' as const),
  event: fc.constantFrom(...PAYMENT_EVENT_KINDS),
  window: windowArb,
});

const paymentsStateArb: fc.Arbitrary<CriteriaNode> = fc.constantFrom<PaymentsEntity>('subscription', 'invoice')
  .chain((entity) => columnFilterArb(PAYMENTS_FIELDS[entity])
    .map((predicate) => ({ source: 'payments' as const, entity, predicate })));

/** Every person when the filter is empty. */
const personArb: fc.Arbitrary<CriteriaNode> = traitFilterArb.map((filter) => ({ source: 'person' as const, filter }));

const positiveLeafArb: fc.Arbitrary<CriteriaNode> = fc.oneof(
  productEventArb('did'), pageviewArb('did'), paymentsEventArb, paymentsStateArb, personArb,
);

/** A node that is not a negation: a positive leaf, or an and/or below it. */
function positiveArb(depth: number): fc.Arbitrary<CriteriaNode> {
  if (depth <= 0) return positiveLeafArb;
  return fc.oneof(
    { weight: 3, arbitrary: positiveLeafArb },
    { weight: 2, arbitrary: andArb(depth) },
    { weight: 1, arbitrary: orArb(depth) },
  );
}

/** A negation, valid only as the child of an and that also has a positive child. */
function negativeArb(depth: number): fc.Arbitrary<CriteriaNode> {
  return fc.oneof(
    productEventArb('did_not'),
    pageviewArb('did_not'),
    positiveArb(depth).map((child): CriteriaNode => ({ op: 'not', child })),
  );
}

function andArb(depth: number): fc.Arbitrary<CriteriaNode> {
  return fc.tuple(
    fc.array(positiveArb(depth - 1), { minLength: 1, maxLength: 3 }),
    fc.array(negativeArb(depth - 1), { maxLength: 2 }),
  ).chain(([positives, negatives]) => {
    const children = [...positives, ...negatives];
    // A full-length shuffled subarray is a permutation: negations are not always last.
    return fc.shuffledSubarray(children, { minLength: children.length, maxLength: children.length });
  }).map((children): CriteriaNode => ({ op: 'and', children }));
}

function orArb(depth: number): fc.Arbitrary<CriteriaNode> {
  return fc.array(positiveArb(depth - 1), { minLength: 1, maxLength: 3 })
    .map((children): CriteriaNode => ({ op: 'or', children }));
}

/** Valid validated criteria: anchored negations, non-empty branches, at most `depth` levels of and/or. */
export function criteriaArb(depth = 3): fc.Arbitrary<AudienceCriteria> {
  return positiveArb(depth).map((root) => ({ version: 1 as const, root }));
}

// ---------------------------------------------------------------------------------------------
// Back to the wire

/** The wire JSON of a validated AST, for sending generated criteria through validation. */
export function criteriaToJson(c: AudienceCriteria): unknown {
  return { version: c.version, root: nodeToJson(c.root) };
}

function nodeToJson(node: CriteriaNode): unknown {
  if ('op' in node) {
    return node.op === 'not'
      ? { op: 'not', child: nodeToJson(node.child) }
      : { op: node.op, children: node.children.map(nodeToJson) };
  }
  switch (node.source) {
    case 'product_event':
      return {
        source: node.source, name: node.name,
        filter: filterToJson(node.filter), occurrence: occurrenceToJson(node.occurrence),
      };
    case 'pageview':
      return { source: node.source, filter: filterToJson(node.filter), occurrence: occurrenceToJson(node.occurrence) };
    case 'payments':
      return 'event' in node
        ? { source: node.source, event: node.event, occurrence: { window: windowToJson(node.window) } }
        : { source: node.source, entity: node.entity, predicate: filterToJson(node.predicate) };
    case 'person':
      return { source: node.source, filter: filterToJson(node.filter) };
  }
}

function filterToJson(predicates: Predicate[]): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const { field, op, value } of predicates) {
    if (Object.hasOwn(json, field)) throw new Error(`two predicates on ${field} cannot be written as JSON`);
    json[field] = value === undefined ? { op } : { op, value };
  }
  return json;
}

function occurrenceToJson(o: Occurrence): unknown {
  return { op: o.op, count: o.op === 'did_not' ? null : o.count, window: windowToJson(o.window) };
}

function windowToJson(w: Window): unknown {
  if (w.kind !== 'between') return { ...w };
  if (!w.toExclusive) return { kind: w.kind, from: w.from.toISOString(), to: w.to.toISOString() };
  // An exclusive `to` is the midnight after a date-only bound: write that day.
  const fromMs = w.from.getTime();
  return {
    kind: w.kind,
    from: fromMs % DAY_MS === 0 ? isoDate(fromMs) : w.from.toISOString(),
    to: isoDate(w.to.getTime() - DAY_MS),
  };
}

function isoDate(ms: number): string {
  if (ms % DAY_MS !== 0) throw new Error(`not a UTC midnight: ${new Date(ms).toISOString()}`);
  return new Date(ms).toISOString().slice(0, 10);
}
