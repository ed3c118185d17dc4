// Hand-computed cases that pin the reference evaluator to docs/criteria.md, plus sanity checks on
// the arbitraries the property test draws from.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type {
  AudienceCriteria, Count, CriteriaNode, Occurrence, Predicate, Window,
} from '../src/criteria/schema.js';
import type {
  CustomerRow, Dataset, EventRow, PageviewRow, PaymentEventRow, PersonRow, SubscriptionRow, VisitorRow,
} from '../src/store/layout.js';
import { AT, EVENT_NAMES, PAYLOAD_PATHS, TRAIT_PATHS, criteriaArb, criteriaToJson, datasetArb } from './support/arbitraries.js';
import { referenceCount, referenceProfiles } from './support/reference.js';
import { tierRuns } from './support/tier.js';

const DAY_MS = 86_400_000;
const AT_MS = AT.getTime();
const EVER: Window = { kind: 'ever' };
const LONG_AGO = new Date('2026-01-01T00:00:00.000Z');

// ---------------------------------------------------------------------------------------------
// Builders

const person = (person_id: string): PersonRow =>
  ({ person_id, external_id: null, email: null, name: null, traits: null, created_at: LONG_AGO });

const visitor = (visitor_id: string, person_id: string | null = null): VisitorRow =>
  ({ visitor_id, person_id, first_seen_at: LONG_AGO });

let nextId = 0;

function event(
  event_name: string,
  owner: { person?: string; visitor?: string },
  options: { ts?: Date | number; props?: Record<string, unknown> } = {},
): EventRow {
  return {
    event_id: `e${++nextId}`,
    event_name,
    ts: new Date(options.ts ?? AT_MS - DAY_MS),
    person_id: owner.person ?? null,
    visitor_id: owner.visitor ?? null,
    properties: JSON.stringify(options.props ?? {}),
  };
}

function pageview(visitor_id: string, ts: Date | number = AT_MS - DAY_MS): PageviewRow {
  return {
    pageview_id: `pv${++nextId}`, visitor_id, ts: new Date(ts),
    url: 'https://example.com/pricing', referrer: null, host: 'example.com', path: '/pricing',
    referrer_host: null, source: null, medium: null, campaign: null, channel: 'direct', channel_category: 'Direct',
  };
}

function customer(customer_id: string, link: { person?: string; visitor?: string }): CustomerRow {
  const person_id = link.person ?? null;
  const visitor_id = link.visitor ?? null;
  const link_state = person_id ? 'linked' : visitor_id ? 'deferred' : 'unmatched';
  return { customer_id, email: null, person_id, visitor_id, link_state };
}

function subscription(customer_id: string, status: string): SubscriptionRow {
  return {
    subscription_id: `sub${++nextId}`, customer_id, status, price_id: 'price_pro', product_id: 'prod_a',
    interval: 'month', amount: 1900, currency: 'usd', cancel_at_period_end: false, created_at: LONG_AGO,
  };
}

/** Persons p1..pN plus whatever rows the case needs. */
function dataset(personCount: number, rows: Partial<Dataset> = {}): Dataset {
  return {
    persons: Array.from({ length: personCount }, (_, i) => person(`p${i + 1}`)),
    visitors: [], events: [], pageviews: [], customers: [], subscriptions: [], invoices: [], payment_events: [],
    ...rows,
  };
}

const did = (window: Window = EVER, count: Count | null = null): Occurrence => ({ op: 'did', count, window });
const didNot = (window: Window = EVER): Occurrence => ({ op: 'did_not', count: null, window });
const productEvent = (name: string, occurrence: Occurrence = did(), filter: Predicate[] = []): CriteriaNode =>
  ({ source: 'product_event', name, filter, occurrence });
const and = (...children: CriteriaNode[]): CriteriaNode => ({ op: 'and', children });
const or = (...children: CriteriaNode[]): CriteriaNode => ({ op: 'or', children });
const not = (child: CriteriaNode): CriteriaNode => ({ op: 'not', child });

function profiles(ds: Dataset, root: CriteriaNode, at: Date = AT): string[] {
  return [...referenceProfiles(ds, { version: 1, root }, at)].sort();
}

// ---------------------------------------------------------------------------------------------

describe('reference evaluator: tree', () => {
  const ds = dataset(3, {
    events: [
      event('signup', { person: 'p1' }), event('purchase', { person: 'p1' }),
      event('signup', { person: 'p2' }),
      event('purchase', { person: 'p3' }),
    ],
  });

  it('an and with a not subtracts the negated child from its positive children, wherever the not sits', () => {
    expect(profiles(ds, and(productEvent('signup'), not(productEvent('purchase'))))).toEqual(['p2']);
    expect(profiles(ds, and(not(productEvent('purchase')), productEvent('signup')))).toEqual(['p2']);
  });

  it('an or is the distinct union of its children and referenceCount counts it once per profile', () => {
    const root = or(productEvent('signup'), productEvent('purchase'));
    expect(profiles(ds, root)).toEqual(['p1', 'p2', 'p3']);
    expect(referenceCount(ds, { version: 1, root }, AT)).toBe(3);
  });

  it('an unanchored negation is refused rather than read as a complement of everyone', () => {
    expect(() => profiles(ds, not(productEvent('purchase')))).toThrow();
    expect(() => profiles(ds, or(productEvent('signup'), productEvent('purchase', didNot())))).toThrow();
    expect(() => profiles(ds, and(productEvent('purchase', didNot())))).toThrow();
  });
});

describe('reference evaluator: occurrences and windows', () => {
  it('a did_not leaf subtracts the profiles that did it at least once inside its window with its filters', () => {
    const ds = dataset(3, {
      events: [
        event('signup', { person: 'p1' }), event('purchase', { person: 'p1' }, { props: { plan: 'pro' } }),
        event('signup', { person: 'p2' }), event('purchase', { person: 'p2' }, { props: { plan: 'free' } }),
        event('signup', { person: 'p3' }),
        event('purchase', { person: 'p3' }, { ts: AT_MS - 20 * DAY_MS, props: { plan: 'pro' } }),
      ],
    });
    const proPurchaseThisWeek = productEvent(
      'purchase', didNot({ kind: 'last_n_days', n: 7 }), [{ field: 'payload.plan', op: '=', value: 'pro' }],
    );
    expect(profiles(ds, and(productEvent('signup'), proPurchaseThisWeek))).toEqual(['p2', 'p3']);
  });

  const purchases = dataset(4, {
    events: [
      event('signup', { person: 'p1' }),
      event('purchase', { person: 'p2' }),
      event('purchase', { person: 'p3' }), event('purchase', { person: 'p3' }),
      event('purchase', { person: 'p4' }), event('purchase', { person: 'p4' }), event('purchase', { person: 'p4' }),
    ],
  });

  it('count < 3 means one or two matching rows, never zero', () => {
    expect(profiles(purchases, productEvent('purchase', did(EVER, { op: '<', value: 3 })))).toEqual(['p2', 'p3']);
    expect(profiles(purchases, productEvent('purchase', did(EVER, { op: '!=', value: 2 })))).toEqual(['p2', 'p4']);
  });

  it('count = 0 matches nobody, not even profiles that never did the event', () => {
    expect(profiles(purchases, productEvent('purchase', did(EVER, { op: '=', value: 0 })))).toEqual([]);
    expect(profiles(purchases, productEvent('purchase', did(EVER, { op: '<=', value: 0 })))).toEqual([]);
  });

  it('count null and >= 1 both mean at least once', () => {
    const atLeastOnce = ['p2', 'p3', 'p4'];
    expect(profiles(purchases, productEvent('purchase', did(EVER, null)))).toEqual(atLeastOnce);
    expect(profiles(purchases, productEvent('purchase', did(EVER, { op: '>=', value: 1 })))).toEqual(atLeastOnce);
  });

  it('last_n_days includes exactly n days before the evaluation time and the evaluation time itself', () => {
    const ds = dataset(4, {
      events: [
        event('signup', { person: 'p1' }, { ts: AT_MS - 7 * DAY_MS }),
        event('signup', { person: 'p2' }, { ts: AT_MS - 7 * DAY_MS - 1 }),
        event('signup', { person: 'p3' }, { ts: AT_MS }),
        event('signup', { person: 'p4' }, { ts: AT_MS + 1 }),
      ],
    });
    expect(profiles(ds, productEvent('signup', did({ kind: 'last_n_days', n: 7 })))).toEqual(['p1', 'p3']);
    expect(profiles(ds, productEvent('signup', did(EVER)))).toEqual(['p1', 'p2', 'p3', 'p4']);
  });

  it('a date-only to covers its whole day while a datetime to is inclusive at its instant', () => {
    const ds = dataset(4, {
      events: [
        event('signup', { person: 'p1' }, { ts: Date.parse('2026-06-10T23:59:59.999Z') }),
        event('signup', { person: 'p2' }, { ts: Date.parse('2026-06-11T00:00:00.000Z') }),
        event('signup', { person: 'p3' }, { ts: Date.parse('2026-06-01T00:00:00.000Z') }),
        event('signup', { person: 'p4' }, { ts: Date.parse('2026-05-31T23:59:59.999Z') }),
      ],
    });
    const from = new Date('2026-06-01T00:00:00.000Z');
    const nextMidnight = new Date('2026-06-11T00:00:00.000Z');
    // Written as { from: '2026-06-01', to: '2026-06-10' }.
    const dateOnly: Window = { kind: 'between', from, to: nextMidnight, toExclusive: true };
    const datetime: Window = { kind: 'between', from, to: nextMidnight, toExclusive: false };
    expect(profiles(ds, productEvent('signup', did(dateOnly)))).toEqual(['p1', 'p3']);
    expect(profiles(ds, productEvent('signup', did(datetime)))).toEqual(['p1', 'p2', 'p3']);
  });

  it('a payments event leaf needs one event of its kind inside its window', () => {
    const pe = (customer_id: string, kind: PaymentEventRow['kind'], ts: number): PaymentEventRow =>
      ({ customer_id, kind, ts: new Date(ts), object_id: `obj${++nextId}` });
    const ds = dataset(3, {
      customers: [customer('c1', { person: 'p1' }), customer('c2', { person: 'p2' }), customer('c3', { person: 'p3' })],
      payment_events: [
        pe('c1', 'refund_issued', AT_MS - DAY_MS),
        pe('c2', 'refund_issued', AT_MS - 10 * DAY_MS),
        pe('c3', 'subscription_canceled', AT_MS - DAY_MS),
      ],
    });
    const root: CriteriaNode = { source: 'payments', event: 'refund_issued', window: { kind: 'last_n_days', n: 7 } };
    expect(profiles(ds, root)).toEqual(['p1']);
  });
});

describe('reference evaluator: profiles', () => {
  it("page views a visitor made before being linked count for the person it is linked to now", () => {
    const ds = dataset(1, {
      visitors: [visitor('v1', 'p1')],
      pageviews: [pageview('v1', AT_MS - 30 * DAY_MS)],
      events: [event('signup', { visitor: 'v1' })],
    });
    expect(profiles(ds, { source: 'pageview', filter: [], occurrence: did() })).toEqual(['p1']);
    expect(profiles(ds, productEvent('signup'))).toEqual(['p1']);
  });

  it("an event's own person_id wins over its visitor's current link", () => {
    const ds = dataset(2, {
      visitors: [visitor('v1', 'p1')],
      events: [event('signup', { person: 'p2', visitor: 'v1' })],
    });
    expect(profiles(ds, productEvent('signup'))).toEqual(['p2']);
  });

  it('an anonymous visitor is its own profile, keyed v: plus its visitor_id', () => {
    const ds = dataset(1, {
      visitors: [visitor('v1', 'p1'), visitor('v2')],
      pageviews: [pageview('v1'), pageview('v2')],
      events: [event('purchase', { visitor: 'v1' })],
    });
    const pageviews: CriteriaNode = { source: 'pageview', filter: [], occurrence: did() };
    expect(profiles(ds, pageviews)).toEqual(['p1', 'v:v2']);
    expect(profiles(ds, and(pageviews, productEvent('purchase', didNot())))).toEqual(['v:v2']);
  });

  it("a payments state leaf reaches a deferred customer's profile through its visitor", () => {
    const ds = dataset(3, {
      visitors: [visitor('v1', 'p1'), visitor('v2')],
      customers: [
        customer('c1', { visitor: 'v1' }),
        customer('c2', { visitor: 'v2' }),
        customer('c3', {}),
        customer('c4', { person: 'p3', visitor: 'v2' }),
      ],
      subscriptions: [
        subscription('c1', 'active'), subscription('c2', 'active'),
        subscription('c3', 'active'), subscription('c4', 'canceled'),
      ],
    });
    const active: CriteriaNode = {
      source: 'payments', entity: 'subscription', predicate: [{ field: 'status', op: '=', value: 'active' }],
    };
    const any: CriteriaNode = { source: 'payments', entity: 'subscription', predicate: [] };
    expect(profiles(ds, active)).toEqual(['p1', 'v:v2']);
    expect(profiles(ds, any)).toEqual(['p1', 'p3', 'v:v2']);
  });
});

describe('reference evaluator: predicates', () => {
  const withProps = (...props: Record<string, unknown>[]): Dataset => dataset(props.length, {
    events: props.map((p, i) => event('purchase', { person: `p${i + 1}` }, { props: p })),
  });
  const purchaseWhere = (ds: Dataset, ...filter: Predicate[]): string[] =>
    profiles(ds, productEvent('purchase', did(), filter));

  it('!= and not_in match events whose property is absent or null', () => {
    const ds = withProps({ plan: 'pro' }, { plan: 'free' }, {}, { plan: null });
    expect(purchaseWhere(ds, { field: 'payload.plan', op: '!=', value: 'pro' })).toEqual(['p2', 'p3', 'p4']);
    expect(purchaseWhere(ds, { field: 'payload.plan', op: 'not_in', value: ['pro', 'free'] })).toEqual(['p3', 'p4']);
    expect(purchaseWhere(ds, { field: 'payload.plan', op: 'is_set' })).toEqual(['p1', 'p2']);
  });

  it('a value of another type never matches a positive op', () => {
    const ds = withProps({ amount: '10' }, { amount: 10 }, { amount: 2.5 });
    expect(purchaseWhere(ds, { field: 'payload.amount', op: '=', value: 10 })).toEqual(['p2']);
    expect(purchaseWhere(ds, { field: 'payload.amount', op: '=', value: '10' })).toEqual(['p1']);
    expect(purchaseWhere(ds, { field: 'payload.amount', op: '!=', value: 10 })).toEqual(['p1', 'p3']);
    expect(purchaseWhere(ds, { field: 'payload.amount', op: '>', value: 2 })).toEqual(['p2', 'p3']);
    expect(purchaseWhere(ds, { field: 'payload.amount', op: 'in', value: [2.5, 10] })).toEqual(['p2', 'p3']);
  });

  it('strings compare by code point and substring ops ignore case', () => {
    const ds = withProps(
      { item: { category: 'Toys' } }, { item: { category: 'books' } }, { item: { category: 'games' } },
    );
    expect(purchaseWhere(ds, { field: 'payload.item.category', op: '<', value: 'c' })).toEqual(['p1', 'p2']);
    expect(purchaseWhere(ds, { field: 'payload.item.category', op: 'contains', value: 'TOY' })).toEqual(['p1']);
    expect(purchaseWhere(ds, { field: 'payload.item.category', op: 'starts_with', value: 'BO' })).toEqual(['p2']);
    expect(purchaseWhere(ds, { field: 'payload.item.category', op: 'ends_with', value: 'S' }))
      .toEqual(['p1', 'p2', 'p3']);
    expect(purchaseWhere(ds, { field: 'payload.item.category', op: 'not_contains', value: 'o' })).toEqual(['p3']);
  });

  it('a nested path is absent when a step is missing or not an object', () => {
    const ds = withProps({ item: { category: 'books' } }, { item: 'books' }, { item: null }, {});
    expect(purchaseWhere(ds, { field: 'payload.item.category', op: '=', value: 'books' })).toEqual(['p1']);
    expect(purchaseWhere(ds, { field: 'payload.item.category', op: 'is_not_set' })).toEqual(['p2', 'p3', 'p4']);
    expect(purchaseWhere(ds, { field: 'payload.item', op: 'is_set' })).toEqual(['p1', 'p2']);
    // A string's length or an array's element is not an object step.
    const odd = withProps({ plan: 'pro', tags: ['a'] });
    expect(purchaseWhere(odd, { field: 'payload.plan.length', op: 'is_set' })).toEqual([]);
    expect(purchaseWhere(odd, { field: 'payload.tags.0', op: 'is_set' })).toEqual([]);
  });

  it('every filter predicate must hold on the same row', () => {
    const ds = dataset(1, {
      events: [
        event('purchase', { person: 'p1' }, { props: { plan: 'pro', amount: 1 } }),
        event('purchase', { person: 'p1' }, { props: { plan: 'free', amount: 50 } }),
      ],
    });
    expect(purchaseWhere(ds,
      { field: 'payload.plan', op: '=', value: 'pro' },
      { field: 'payload.amount', op: '>=', value: 10 },
    )).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

const isNegation = (node: CriteriaNode): boolean =>
  ('op' in node && node.op === 'not') || ('occurrence' in node && node.occurrence.op === 'did_not');

/** The validation rule: a negation's parent is an and with a positive child; branches are non-empty. */
function isAnchored(node: CriteriaNode, parent: CriteriaNode | null): boolean {
  const anchor = parent !== null && 'op' in parent && parent.op === 'and'
    && parent.children.some((c) => !isNegation(c));
  if (isNegation(node) && !anchor) return false;
  if (!('op' in node)) return true;
  const children = node.op === 'not' ? [node.child] : node.children;
  return children.length > 0 && children.every((c) => isAnchored(c, node));
}

function astPredicateCount(node: CriteriaNode): number {
  if ('op' in node) {
    const children = node.op === 'not' ? [node.child] : node.children;
    return children.reduce((n, c) => n + astPredicateCount(c), 0);
  }
  if ('filter' in node) return node.filter.length;
  return 'predicate' in node ? node.predicate.length : 0;
}

function jsonPredicateCount(json: unknown): number {
  if (typeof json !== 'object' || json === null) return 0;
  let n = 0;
  for (const [key, value] of Object.entries(json)) {
    const isFilter = (key === 'filter' || key === 'predicate') && typeof value === 'object' && value !== null;
    n += isFilter ? Object.keys(value).length : jsonPredicateCount(value);
  }
  return n;
}

describe('reference evaluator: person leaves', () => {
  const withTraits = (...traits: (string | null)[]): Dataset =>
    dataset(traits.length, { persons: traits.map((t, i) => ({ ...person(`p${i + 1}`), traits: t })) });
  const personWhere = (ds: Dataset, ...filter: Predicate[]) => profiles(ds, { source: 'person', filter });

  it('holds for the persons whose traits match every predicate, typed like payload values', () => {
    const ds = withTraits('{"plan":"pro","seats":10}', '{"plan":"pro","seats":"10"}', '{"plan":null,"seats":2}', null, '"pro"');
    expect(personWhere(ds, { field: 'traits.plan', op: '=', value: 'pro' })).toEqual(['p1', 'p2']);
    expect(personWhere(ds, { field: 'traits.plan', op: '=', value: 'pro' }, { field: 'traits.seats', op: '=', value: 10 })).toEqual(['p1']);
    expect(personWhere(ds, { field: 'traits.seats', op: '>', value: 5 })).toEqual(['p1']);
    expect(personWhere(ds, { field: 'traits.plan', op: 'is_not_set' })).toEqual(['p3', 'p4', 'p5']);
    expect(personWhere(ds, { field: 'traits.seats', op: '!=', value: 10 })).toEqual(['p2', 'p3', 'p4', 'p5']);
  });

  it('reads nested keys, and holds for every person with an empty filter but never for an anonymous profile', () => {
    const ds = { ...withTraits('{"company":{"size":40}}', '{"company":"Acme"}'), visitors: [visitor('v1')], pageviews: [pageview('v1')] };
    expect(personWhere(ds, { field: 'traits.company.size', op: '>=', value: 40 })).toEqual(['p1']);
    expect(personWhere(ds, { field: 'traits.company.size', op: 'is_not_set' })).toEqual(['p2']);
    expect(personWhere(ds)).toEqual(['p1', 'p2']);
    const pageviews: CriteriaNode = { source: 'pageview', filter: [], occurrence: did() };
    expect(profiles(ds, and(pageviews, not({ source: 'person', filter: [] })))).toEqual(['v:v1']);
  });
});

describe('arbitraries', () => {
  it('criteriaArb yields anchored trees that criteriaToJson writes without losing a predicate', () => {
    fc.assert(fc.property(criteriaArb(4), (criteria: AudienceCriteria) => {
      expect(isAnchored(criteria.root, null)).toBe(true);
      expect(jsonPredicateCount(criteriaToJson(criteria))).toBe(astPredicateCount(criteria.root));
    }), { numRuns: tierRuns(300) });
  });

  it('criteriaToJson writes an exclusive to as the day before it and datetime bounds as full ISO strings', () => {
    const from = new Date('2026-06-01T00:00:00.000Z');
    const to = new Date('2026-06-11T00:00:00.000Z');
    const criteria = (window: Window): AudienceCriteria =>
      ({ version: 1, root: { source: 'payments', event: 'refund_issued', window } });
    expect(criteriaToJson(criteria({ kind: 'between', from, to, toExclusive: true }))).toEqual({
      version: 1,
      root: {
        source: 'payments', event: 'refund_issued',
        occurrence: { window: { kind: 'between', from: '2026-06-01', to: '2026-06-10' } },
      },
    });
    expect(criteriaToJson(criteria({ kind: 'between', from, to, toExclusive: false }))).toEqual({
      version: 1,
      root: {
        source: 'payments', event: 'refund_issued',
        occurrence: { window: { kind: 'between', from: '2026-06-01T00:00:00.000Z', to: '2026-06-11T00:00:00.000Z' } },
      },
    });
  });

  it('criteriaToJson writes filters keyed by field and did_not with a null count', () => {
    const root = and(
      {
        source: 'pageview', filter: [{ field: 'channel', op: 'in', value: ['google'] }],
        occurrence: did(EVER, { op: '>', value: 2 }),
      },
      productEvent('purchase', didNot({ kind: 'last_n_days', n: 3 }), [{ field: 'payload.coupon', op: 'is_set' }]),
    );
    expect(criteriaToJson({ version: 1, root })).toEqual({
      version: 1,
      root: {
        op: 'and',
        children: [
          {
            source: 'pageview', filter: { channel: { op: 'in', value: ['google'] } },
            occurrence: { op: 'did', count: { op: '>', value: 2 }, window: { kind: 'ever' } },
          },
          {
            source: 'product_event', name: 'purchase', filter: { 'payload.coupon': { op: 'is_set' } },
            occurrence: { op: 'did_not', count: null, window: { kind: 'last_n_days', n: 3 } },
          },
        ],
      },
    });
  });

  it('criteriaToJson refuses two predicates on one field rather than drop one', () => {
    const filter: Predicate[] = [{ field: 'path', op: '=', value: '/' }, { field: 'path', op: '!=', value: '/a' }];
    expect(() => criteriaToJson({ version: 1, root: { source: 'pageview', filter, occurrence: did() } })).toThrow();
  });

  it('datasetArb yields unique ids and references that resolve', () => {
    fc.assert(fc.property(datasetArb, (ds) => {
      const ids = [
        ...ds.persons.map((r) => r.person_id), ...ds.visitors.map((r) => r.visitor_id),
        ...ds.events.map((r) => r.event_id), ...ds.pageviews.map((r) => r.pageview_id),
        ...ds.customers.map((r) => r.customer_id), ...ds.subscriptions.map((r) => r.subscription_id),
        ...ds.invoices.map((r) => r.invoice_id),
      ];
      expect(new Set(ids).size).toBe(ids.length);
      const persons = new Set(ds.persons.map((r) => r.person_id));
      const visitors = new Set(ds.visitors.map((r) => r.visitor_id));
      const customers = new Set(ds.customers.map((r) => r.customer_id));
      for (const r of [...ds.visitors, ...ds.events, ...ds.customers]) {
        if (r.person_id !== null) expect(persons.has(r.person_id)).toBe(true);
      }
      for (const r of [...ds.events, ...ds.pageviews, ...ds.customers]) {
        if (r.visitor_id !== null) expect(visitors.has(r.visitor_id)).toBe(true);
      }
      for (const r of [...ds.subscriptions, ...ds.invoices, ...ds.payment_events]) {
        expect(customers.has(r.customer_id)).toBe(true);
      }
      for (const e of ds.events) {
        expect(EVENT_NAMES).toContain(e.event_name);
        expect(typeof JSON.parse(e.properties)).toBe('object');
      }
    }), { numRuns: tierRuns(100) });
  });

  it('every payload and trait path of the generated filters is one the property catalog whitelists', () => {
    fc.assert(fc.property(criteriaArb(3), (criteria) => {
      for (const field of JSON.stringify(criteria).match(/"payload\.[a-z.]+"/g) ?? []) {
        expect(PAYLOAD_PATHS).toContain(field.slice('"payload.'.length, -1));
      }
      for (const field of JSON.stringify(criteria).match(/"traits\.[a-z.]+"/g) ?? []) {
        expect(TRAIT_PATHS).toContain(field.slice('"traits.'.length, -1));
      }
    }), { numRuns: tierRuns(100) });
  });
});
