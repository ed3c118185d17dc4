import { describe, expect, it } from 'vitest';
import { type CriteriaError, isTimeWindowed, MAX_DEPTH, MAX_ERRORS, MAX_NODES, validateCriteria } from '../src/criteria/index.js';

const catalog = { events: new Map([['signup', new Set(['plan', 'item', 'item.price'])]]), traits: new Set(['plan', 'company', 'company.size']) };

const ever = { kind: 'ever' };
const did = (extra: Record<string, unknown> = {}) => ({
  source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: ever }, ...extra,
});
const pageview = (occurrence: unknown = { op: 'did', count: { op: '>=', value: 1 }, window: ever }, filter?: unknown) => ({
  source: 'pageview', ...(filter === undefined ? {} : { filter }), occurrence,
});
const didNot = { source: 'product_event', name: 'signup', occurrence: { op: 'did_not', count: null, window: ever } };
const envelope = (root: unknown) => ({ version: 1, root });

function errorsOf(criteria: unknown): Pick<CriteriaError, 'code' | 'path'>[] {
  const result = validateCriteria(criteria, catalog);
  if (result.ok) return [];
  return result.errors.map(({ code, path }) => ({ code, path }));
}

describe('envelope', () => {
  it('accepts a minimal valid criteria', () => {
    expect(validateCriteria(envelope(did()), catalog).ok).toBe(true);
  });

  it('accepts the criteria as a JSON string', () => {
    expect(validateCriteria(JSON.stringify(envelope(did())), catalog).ok).toBe(true);
  });

  it('rejects a string that is not JSON, a non-object and a missing criteria with invalid_envelope at the root', () => {
    expect(errorsOf('{nope')).toEqual([{ code: 'invalid_envelope', path: '' }]);
    expect(errorsOf([1])).toEqual([{ code: 'invalid_envelope', path: '' }]);
    expect(errorsOf(undefined)).toEqual([{ code: 'invalid_envelope', path: '' }]);
  });

  it('rejects a wrong field name, a missing root and an extra key with invalid_envelope', () => {
    expect(errorsOf({ version: 1, node: did() })).toEqual([
      { code: 'invalid_envelope', path: '/root' },
      { code: 'invalid_envelope', path: '/node' },
    ]);
    expect(errorsOf({ root: did() })).toEqual([{ code: 'invalid_envelope', path: '/version' }]);
  });

  it('rejects any version other than the integer 1 with version_unsupported at /version', () => {
    for (const version of [2, 0, '1', 1.5, null]) {
      expect(errorsOf({ version, root: did() })).toEqual([{ code: 'version_unsupported', path: '/version' }]);
    }
  });
});

describe('anchored negation', () => {
  it('rejects a top-level not at /root', () => {
    expect(errorsOf(envelope({ op: 'not', child: did() }))).toEqual([{ code: 'unanchored_negation', path: '/root' }]);
  });

  it('rejects a top-level did_not leaf at /root', () => {
    expect(errorsOf(envelope(didNot))).toEqual([{ code: 'unanchored_negation', path: '/root' }]);
  });

  it('accepts not and did_not inside an and with a positive sibling', () => {
    expect(errorsOf(envelope({ op: 'and', children: [did(), { op: 'not', child: pageview() }, didNot] }))).toEqual([]);
  });

  it('rejects every negation of an and without a positive child, each at its own path', () => {
    expect(errorsOf(envelope({ op: 'and', children: [{ op: 'not', child: did() }, didNot] }))).toEqual([
      { code: 'unanchored_negation', path: '/root/children/0' },
      { code: 'unanchored_negation', path: '/root/children/1' },
    ]);
  });

  it('rejects a negation under or, and a did_not directly under not', () => {
    expect(errorsOf(envelope({ op: 'or', children: [did(), didNot] }))).toEqual([
      { code: 'unanchored_negation', path: '/root/children/1' },
    ]);
    expect(errorsOf(envelope({ op: 'and', children: [did(), { op: 'not', child: didNot }] }))).toEqual([
      { code: 'unanchored_negation', path: '/root/children/1/child' },
    ]);
  });
});

describe('counts', () => {
  const withCount = (occurrence: Record<string, unknown>) => envelope({ ...did(), occurrence: { op: 'did', window: ever, ...occurrence } });

  it('reads did with count null as at least once (the spec illustrations)', () => {
    const result = validateCriteria(withCount({ count: null }), catalog);
    expect(result.ok && 'occurrence' in result.criteria.root && result.criteria.root.occurrence.count).toEqual({ op: '>=', value: 1 });
  });

  it('rejects did without a count key with invalid_count', () => {
    expect(errorsOf(withCount({}))).toEqual([{ code: 'invalid_count', path: '/root/occurrence/count' }]);
  });

  it('rejects malformed counts with invalid_count at the faulty part', () => {
    expect(errorsOf(withCount({ count: 3 }))).toEqual([{ code: 'invalid_count', path: '/root/occurrence/count' }]);
    expect(errorsOf(withCount({ count: { op: '>=', value: -1 } }))).toEqual([{ code: 'invalid_count', path: '/root/occurrence/count/value' }]);
    expect(errorsOf(withCount({ count: { op: '>=', value: 1.5 } }))).toEqual([{ code: 'invalid_count', path: '/root/occurrence/count/value' }]);
    expect(errorsOf(withCount({ count: { op: '>=' } }))).toEqual([{ code: 'invalid_count', path: '/root/occurrence/count/value' }]);
  });

  it('rejects an unknown count op with unknown_op', () => {
    expect(errorsOf(withCount({ count: { op: 'between', value: 1 } }))).toEqual([{ code: 'unknown_op', path: '/root/occurrence/count/op' }]);
  });

  it('rejects a count object on did_not with invalid_count', () => {
    const root = { op: 'and', children: [did(), { ...didNot, occurrence: { op: 'did_not', count: { op: '>=', value: 1 }, window: ever } }] };
    expect(errorsOf(envelope(root))).toEqual([{ code: 'invalid_count', path: '/root/children/1/occurrence/count' }]);
  });

  it('rejects an unknown occurrence op with unknown_op', () => {
    expect(errorsOf(envelope({ ...did(), occurrence: { op: 'did_twice', count: null, window: ever } })))
      .toEqual([{ code: 'unknown_op', path: '/root/occurrence/op' }]);
  });
});

describe('filters and predicates', () => {
  it('rejects payload paths never seen on the event and keys without the payload prefix with unknown_field', () => {
    expect(errorsOf(envelope(did({ filter: { 'payload.coupon': { op: 'is_set' }, plan: { op: '=', value: 'pro' } } })))).toEqual([
      { code: 'unknown_field', path: '/root/filter/payload.coupon' },
      { code: 'unknown_field', path: '/root/filter/plan' },
    ]);
  });

  it('accepts nested payload paths and an omitted or empty filter', () => {
    expect(errorsOf(envelope(did({ filter: { 'payload.item.price': { op: '>', value: 3 } } })))).toEqual([]);
    expect(errorsOf(envelope(did({ filter: {} })))).toEqual([]);
  });

  it('rejects a pageview filter key outside the whitelist with unknown_field', () => {
    expect(errorsOf(envelope(pageview(undefined, { utm_source: { op: '=', value: 'x' } }))))
      .toEqual([{ code: 'unknown_field', path: '/root/filter/utm_source' }]);
  });

  it('escapes filter keys in JSON Pointer paths', () => {
    expect(errorsOf(envelope(did({ filter: { 'a/b~c': { op: '=', value: 1 } } }))))
      .toEqual([{ code: 'unknown_field', path: '/root/filter/a~1b~0c' }]);
  });

  it('rejects unknown predicate ops and ops the field type does not support with unknown_op', () => {
    expect(errorsOf(envelope(did({ filter: { 'payload.plan': { op: 'like', value: 'p%' } } }))))
      .toEqual([{ code: 'unknown_op', path: '/root/filter/payload.plan/op' }]);
    const state = { source: 'payments', entity: 'subscription', predicate: { amount: { op: 'contains', value: '1' } } };
    expect(errorsOf(envelope(state))).toEqual([{ code: 'unknown_op', path: '/root/predicate/amount/op' }]);
  });

  it('rejects values of the wrong type or outside an enumerated set with invalid_value', () => {
    expect(errorsOf(envelope(pageview(undefined, { channel_category: { op: '=', value: 'Search' } }))))
      .toEqual([{ code: 'invalid_value', path: '/root/filter/channel_category/value' }]);
    expect(errorsOf(envelope(pageview(undefined, { channel_category: { op: 'in', value: ['AI', 'Nope'] } }))))
      .toEqual([{ code: 'invalid_value', path: '/root/filter/channel_category/value/1' }]);
    expect(errorsOf(envelope(did({ filter: { 'payload.plan': { op: 'in', value: [] } } }))))
      .toEqual([{ code: 'invalid_value', path: '/root/filter/payload.plan/value' }]);
    expect(errorsOf(envelope(did({ filter: { 'payload.plan': { op: 'contains', value: 3 } } }))))
      .toEqual([{ code: 'invalid_value', path: '/root/filter/payload.plan/value' }]);
    expect(errorsOf(envelope(did({ filter: { 'payload.plan': { op: 'is_set', value: 'x' } } }))))
      .toEqual([{ code: 'invalid_value', path: '/root/filter/payload.plan/value' }]);
    expect(errorsOf(envelope({ source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: 'alive' } } })))
      .toEqual([{ code: 'invalid_value', path: '/root/predicate/status/value' }]);
  });

  it('normalizes host filter values like stored hosts', () => {
    const result = validateCriteria(envelope(pageview(undefined, { referrer_host: { op: '=', value: 'https://WWW.Google.com:443/' } })), catalog);
    expect(result.ok && 'filter' in result.criteria.root && result.criteria.root.filter[0]?.value).toBe('google.com');
  });
});

describe('payments leaves', () => {
  it('accepts the state form and the event form', () => {
    expect(errorsOf(envelope({ op: 'and', children: [
      { source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: 'active' } } },
      { source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'last_n_days', n: 30 } } },
    ] }))).toEqual([]);
  });

  it('rejects the customer entity with version_unsupported and other entities with invalid_value', () => {
    expect(errorsOf(envelope({ source: 'payments', entity: 'customer', predicate: {} })))
      .toEqual([{ code: 'version_unsupported', path: '/root/entity' }]);
    expect(errorsOf(envelope({ source: 'payments', entity: 'charge', predicate: {} })))
      .toEqual([{ code: 'invalid_value', path: '/root/entity' }]);
  });

  it('rejects an unknown state field with unknown_field', () => {
    expect(errorsOf(envelope({ source: 'payments', entity: 'invoice', predicate: { price_id: { op: '=', value: 'x' } } })))
      .toEqual([{ code: 'unknown_field', path: '/root/predicate/price_id' }]);
  });

  it('rejects an unknown event kind, and op or count in its occurrence', () => {
    expect(errorsOf(envelope({ source: 'payments', event: 'chargeback', occurrence: { window: ever } })))
      .toEqual([{ code: 'invalid_value', path: '/root/event' }]);
    expect(errorsOf(envelope({ source: 'payments', event: 'refund_issued', occurrence: { op: 'did', count: null, window: ever } })))
      .toEqual([{ code: 'unknown_op', path: '/root/occurrence/op' }, { code: 'invalid_count', path: '/root/occurrence/count' }]);
  });
});

describe('person leaves', () => {
  const person = (filter?: unknown) => ({ source: 'person', ...(filter === undefined ? {} : { filter }) });

  it('accepts trait paths seen, nested ones included, and an omitted or empty filter, as a leaf without a window', () => {
    const result = validateCriteria(envelope(person({ 'traits.plan': { op: '=', value: 'pro' }, 'traits.company.size': { op: '>', value: 10 } })), catalog);
    expect(result.ok && result.criteria.root).toEqual({ source: 'person', filter: [
      { field: 'traits.plan', op: '=', value: 'pro' }, { field: 'traits.company.size', op: '>', value: 10 },
    ] });
    expect(result.ok && isTimeWindowed(result.criteria.root)).toBe(false);
    expect(errorsOf(envelope(person()))).toEqual([]);
    expect(errorsOf(envelope(person({})))).toEqual([]);
  });

  it('rejects a trait path never seen, a key without the traits prefix and a payload key with unknown_field at its path', () => {
    expect(errorsOf(envelope(person({ 'traits.seats': { op: 'is_set' }, plan: { op: '=', value: 'pro' }, 'payload.plan': { op: 'is_set' }, traits: { op: 'is_set' } }))))
      .toEqual([
        { code: 'unknown_field', path: '/root/filter/traits.seats' },
        { code: 'unknown_field', path: '/root/filter/plan' },
        { code: 'unknown_field', path: '/root/filter/payload.plan' },
        { code: 'unknown_field', path: '/root/filter/traits' },
      ]);
  });

  it('types trait predicates as payload ones: every op, a value fit for its op', () => {
    expect(errorsOf(envelope(person({ 'traits.plan': { op: 'like', value: 'p%' } })))).toEqual([{ code: 'unknown_op', path: '/root/filter/traits.plan/op' }]);
    expect(errorsOf(envelope(person({ 'traits.plan': { op: 'contains', value: 3 } })))).toEqual([{ code: 'invalid_value', path: '/root/filter/traits.plan/value' }]);
    expect(errorsOf(envelope(person({ 'traits.plan': { op: '>', value: true } })))).toEqual([{ code: 'invalid_value', path: '/root/filter/traits.plan/value' }]);
    expect(errorsOf(envelope(person({ 'traits.company.size': { op: 'in', value: [10, '10', true] } })))).toEqual([]);
  });

  it('rejects an occurrence or any other key on a person leaf with invalid_node', () => {
    expect(errorsOf(envelope({ ...person(), occurrence: { op: 'did', count: null, window: ever }, name: 'x' }))).toEqual([
      { code: 'invalid_node', path: '/root/occurrence' }, { code: 'invalid_node', path: '/root/name' },
    ]);
  });

  it('counts as a positive anchor of a not and a did_not', () => {
    expect(errorsOf(envelope({ op: 'and', children: [person(), { op: 'not', child: person({ 'traits.plan': { op: 'is_set' } }) }, didNot] }))).toEqual([]);
    expect(errorsOf(envelope({ op: 'not', child: person() }))).toEqual([{ code: 'unanchored_negation', path: '/root' }]);
  });
});

describe('windows', () => {
  const withWindow = (window: unknown) => envelope({ ...did(), occurrence: { op: 'did', count: null, window } });

  it('accepts the three kinds', () => {
    for (const w of [ever, { kind: 'last_n_days', n: 3650 }, { kind: 'between', from: '2026-01-01', to: '2026-01-01' },
      { kind: 'between', from: '2026-01-01T10:00:00+02:00', to: '2026-01-02T00:00:00Z' }]) {
      expect(errorsOf(withWindow(w))).toEqual([]);
    }
  });

  it('makes a date-only to cover its whole day', () => {
    const result = validateCriteria(withWindow({ kind: 'between', from: '2026-01-01', to: '2026-01-31' }), catalog);
    const window = result.ok && 'occurrence' in result.criteria.root ? result.criteria.root.occurrence.window : null;
    expect(window).toEqual({ kind: 'between', from: new Date('2026-01-01T00:00:00Z'), to: new Date('2026-02-01T00:00:00Z'), toExclusive: true });
  });

  it('rejects malformed windows with invalid_window at the faulty part', () => {
    expect(errorsOf(withWindow({ kind: 'last_n_days', n: 0 }))).toEqual([{ code: 'invalid_window', path: '/root/occurrence/window/n' }]);
    expect(errorsOf(withWindow({ kind: 'last_n_days', n: 3651 }))).toEqual([{ code: 'invalid_window', path: '/root/occurrence/window/n' }]);
    expect(errorsOf(withWindow({ kind: 'forever' }))).toEqual([{ code: 'invalid_window', path: '/root/occurrence/window/kind' }]);
    expect(errorsOf(withWindow('ever'))).toEqual([{ code: 'invalid_window', path: '/root/occurrence/window' }]);
    expect(errorsOf(withWindow({ kind: 'between', from: '2026-02-30', to: '2026-03-01' })))
      .toEqual([{ code: 'invalid_window', path: '/root/occurrence/window/from' }]);
    expect(errorsOf(withWindow({ kind: 'between', from: '2026-03-02', to: '2026-03-01' })))
      .toEqual([{ code: 'invalid_window', path: '/root/occurrence/window' }]);
    expect(errorsOf(envelope({ ...did(), occurrence: { op: 'did', count: null } })))
      .toEqual([{ code: 'invalid_window', path: '/root/occurrence/window' }]);
  });
});

describe('nodes', () => {
  it('rejects unknown sources, unknown branch ops, empty children and non-objects with invalid_node', () => {
    expect(errorsOf(envelope({ op: 'and', children: [
      did(), { source: 'email' }, { op: 'xor', children: [] }, { op: 'or', children: [] }, 42,
    ] }))).toEqual([
      { code: 'invalid_node', path: '/root/children/1/source' },
      { code: 'invalid_node', path: '/root/children/2/op' },
      { code: 'invalid_node', path: '/root/children/3/children' },
      { code: 'invalid_node', path: '/root/children/4' },
    ]);
  });

  it('rejects missing required fields and unknown keys on a leaf', () => {
    expect(errorsOf(envelope({ source: 'product_event', occurrence: { op: 'did', count: null, window: ever }, colour: 'red' })))
      .toEqual([{ code: 'invalid_node', path: '/root/name' }, { code: 'invalid_node', path: '/root/colour' }]);
  });

  it('reports every fault in document order', () => {
    const root = {
      op: 'and',
      children: [
        { source: 'pageview', filter: { nope: { op: '=', value: 1 } }, occurrence: { op: 'did', window: ever } },
        { op: 'not', child: { source: 'payments', entity: 'customer' } },
        { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: { op: '~', value: -1 }, window: { kind: 'last_n_days', n: 0 } } },
      ],
    };
    expect(errorsOf({ version: 3, root })).toEqual([
      { code: 'version_unsupported', path: '/version' },
      { code: 'unknown_field', path: '/root/children/0/filter/nope' },
      { code: 'invalid_count', path: '/root/children/0/occurrence/count' },
      { code: 'version_unsupported', path: '/root/children/1/child/entity' },
      { code: 'unknown_op', path: '/root/children/2/occurrence/count/op' },
      { code: 'invalid_count', path: '/root/children/2/occurrence/count/value' },
      { code: 'invalid_window', path: '/root/children/2/occurrence/window/n' },
    ]);
  });

  it('gives every error a human-readable message', () => {
    const result = validateCriteria({ version: 1, root: { op: 'not', child: 1 } }, catalog);
    expect(result.ok).toBe(false);
    if (!result.ok) for (const e of result.errors) expect(e.message.length).toBeGreaterThan(10);
  });
});

describe('payments customer entity', () => {
  it('answers only version_unsupported at the entity, whatever its predicate holds', () => {
    const customer = { source: 'payments', entity: 'customer', predicate: { email: { op: '=', value: 'a@b.c' }, ltv: { op: '>', value: 3 } } };
    expect(errorsOf(envelope(customer))).toEqual([{ code: 'version_unsupported', path: '/root/entity' }]);
    expect(errorsOf(envelope({ op: 'and', children: [did(), { ...customer, predicate: 'anything' }] })))
      .toEqual([{ code: 'version_unsupported', path: '/root/children/1/entity' }]);
  });

  it('checks no predicate fields against an unknown entity either', () => {
    expect(errorsOf(envelope({ source: 'payments', entity: 'charge', predicate: { amount: { op: '>', value: 3 } } })))
      .toEqual([{ code: 'invalid_value', path: '/root/entity' }]);
  });
});

/** `depth` nodes: `and` branches of one child each, down to a leaf at `depth`. */
function andChain(depth: number, leaf: unknown = did()): unknown {
  let node = leaf;
  for (let d = 1; d < depth; d++) node = { op: 'and', children: [node] };
  return node;
}

/** `depth` nested values made by `wrap`, built without recursion. */
function nested(depth: number, wrap: (inner: unknown) => unknown, inner: unknown = 1): unknown {
  let value = inner;
  for (let d = 0; d < depth; d++) value = wrap(value);
  return value;
}

const pointerAt = (depth: number) => `/root${'/children/0'.repeat(depth - 1)}`;

describe('size limits', () => {
  it(`accepts a tree ${MAX_DEPTH} nodes deep and a tree of ${MAX_NODES} nodes`, () => {
    expect(errorsOf(envelope(andChain(MAX_DEPTH)))).toEqual([]);
    expect(errorsOf(envelope({ op: 'or', children: Array.from({ length: MAX_NODES - 1 }, () => did()) }))).toEqual([]);
  });

  it('rejects a node below the deepest level with too_deep at that node, and reads nothing under it', () => {
    expect(errorsOf(envelope(andChain(MAX_DEPTH + 1)))).toEqual([{ code: 'too_deep', path: pointerAt(MAX_DEPTH + 1) }]);
    // Faults under the limit are not reported: they are never read.
    expect(errorsOf(envelope(andChain(MAX_DEPTH + 5, { source: 'nowhere' }))))
      .toEqual([{ code: 'too_deep', path: pointerAt(MAX_DEPTH + 1) }]);
  });

  it('rejects every crossing of the depth limit, in document order with the other faults', () => {
    const root = { op: 'or', children: [did({ colour: 'red' }), andChain(MAX_DEPTH), andChain(MAX_DEPTH + 3)], extra: 1 };
    expect(errorsOf(envelope(root))).toEqual([
      { code: 'invalid_node', path: '/root/children/0/colour' },
      { code: 'too_deep', path: `/root/children/1${'/children/0'.repeat(MAX_DEPTH - 1)}` },
      { code: 'too_deep', path: `/root/children/2${'/children/0'.repeat(MAX_DEPTH - 1)}` },
      { code: 'invalid_node', path: '/root/extra' },
    ]);
  });

  it(`rejects node ${MAX_NODES + 1} with too_many_nodes at its path, and reads no node after it`, () => {
    expect(errorsOf(envelope({ op: 'or', children: Array.from({ length: MAX_NODES }, () => did()) })))
      .toEqual([{ code: 'too_many_nodes', path: `/root/children/${MAX_NODES - 1}` }]);
    // Nodes count in document order, branches included: the root is the first.
    const wide = { op: 'and', children: [{ op: 'or', children: Array.from({ length: 600 }, () => did()) }, { op: 'or', children: Array.from({ length: 600 }, () => did()) }] };
    expect(errorsOf(envelope(wide))).toEqual([{ code: 'too_many_nodes', path: '/root/children/1/children/397' }]);
  });

  it(`lists the first ${MAX_ERRORS} faults in document order and no more`, () => {
    // 300 k non-objects where nodes should be: a fault per node read, of which the first 100 are listed.
    const errors = errorsOf(envelope({ op: 'or', children: new Array(300_000).fill(1) }));
    expect(errors).toEqual(Array.from({ length: MAX_ERRORS }, (_, i) => ({ code: 'invalid_node', path: `/root/children/${i}` })));
    // 2,000 unknown filter keys on one leaf: the same bound.
    const filter = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`nope${i}`, { op: '=', value: 1 }]));
    const leaf = { source: 'pageview', filter, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } };
    const faults = errorsOf(envelope(leaf));
    expect(faults).toHaveLength(MAX_ERRORS);
    expect(faults.at(-1)).toEqual({ code: 'unknown_field', path: `/root/filter/nope${MAX_ERRORS - 1}` });
  });

  it('answers any depth of objects or arrays anywhere in the document without exhausting the stack', () => {
    const deep = 500_000;
    const pageviewIn = (value: unknown) => ({ source: 'pageview', filter: { path: { op: 'in', value } }, occurrence: { op: 'did', count: null, window: ever } });
    const cases: [unknown, Pick<CriteriaError, 'code' | 'path'>][] = [
      [envelope(nested(deep, (child) => ({ op: 'not', child }), did())), { code: 'unanchored_negation', path: '/root' }],
      [envelope(andChain(deep)), { code: 'too_deep', path: pointerAt(MAX_DEPTH + 1) }],
      [envelope(nested(deep, (inner) => [inner])), { code: 'invalid_node', path: '/root' }],
      [nested(deep, (inner) => [inner]), { code: 'invalid_envelope', path: '' }],
      [envelope(nested(deep, (a) => ({ a }))), { code: 'invalid_node', path: '/root' }],
      [{ ...envelope(did()), extra: nested(deep, (a) => ({ a })) }, { code: 'invalid_envelope', path: '/extra' }],
      [envelope(pageviewIn(nested(deep, (inner) => [inner]))), { code: 'invalid_value', path: '/root/filter/path/value/0' }],
      [envelope(did({ occurrence: { op: 'did', count: nested(deep, (op) => ({ op })), window: ever } })), { code: 'invalid_count', path: '/root/occurrence/count/value' }],
    ];
    for (const [criteria, first] of cases) expect(errorsOf(criteria)[0]).toEqual(first);
  });

  it('answers any depth in the JSON-string form too', () => {
    const deep = 500_000;
    const leaf = JSON.stringify(did());
    expect(errorsOf(`{"version":1,"root":${'{"op":"not","child":'.repeat(deep)}${leaf}${'}'.repeat(deep)}}`)[0])
      .toEqual({ code: 'unanchored_negation', path: '/root' });
    expect(errorsOf(`{"version":1,"root":${'{"op":"and","children":['.repeat(deep)}${leaf}${']}'.repeat(deep)}}`))
      .toEqual([{ code: 'too_deep', path: pointerAt(MAX_DEPTH + 1) }]);
    expect(errorsOf(`{"version":1,"root":${'['.repeat(deep)}${']'.repeat(deep)}}`)).toEqual([{ code: 'invalid_node', path: '/root' }]);
    expect(errorsOf('['.repeat(deep) + ']'.repeat(deep))).toEqual([{ code: 'invalid_envelope', path: '' }]);
  });
});
