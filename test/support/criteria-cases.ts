// Trees derived from a generated criteria, shared by the property tests of both stores: each leaf
// on its own, the same-scan `or`s the planner merges, and hand-written `or`s of equalities.

import fc from 'fast-check';
import { type AudienceCriteria, CHANNEL_CATEGORIES, type CriteriaNode } from '../../src/criteria/index.js';

/** Validation spells `did` with `count: null` as its meaning, at least once. */
export function withExplicitCounts(criteria: AudienceCriteria): AudienceCriteria {
  return JSON.parse(JSON.stringify(criteria), (key, value) => {
    if (key === 'occurrence' && value.op === 'did' && value.count === null) return { ...value, count: { op: '>=', value: 1 } };
    if ((key === 'from' || key === 'to') && typeof value === 'string') return new Date(value);
    return value;
  });
}

/** Every leaf of a tree as a criteria of its own, a did_not leaf read as did at least once. */
export function leavesOf(node: CriteriaNode): AudienceCriteria[] {
  if ('op' in node) return node.op === 'not' ? leavesOf(node.child) : node.children.flatMap(leavesOf);
  const leaf = 'occurrence' in node && node.occurrence.op === 'did_not'
    ? { ...node, occurrence: { ...node.occurrence, op: 'did' as const, count: { op: '>=' as const, value: 1 } } }
    : node;
  return [{ version: 1, root: leaf }];
}

/**
 * An `or` of the tree's event (or page-view) leaves rewritten onto one event name and window: the
 * planner merges such siblings into one scan, which random trees rarely exercise.
 */
export function sameScanOr(criteria: AudienceCriteria, source: 'product_event' | 'pageview'): AudienceCriteria | null {
  const leaves = leavesOf(criteria.root).map((c) => c.root).filter((l) => 'source' in l && l.source === source);
  const first = leaves[0];
  if (leaves.length < 2 || !first || !('occurrence' in first)) return null;
  const children = leaves.map((l) => ({ ...l, ...('name' in first ? { name: first.name } : {}),
    occurrence: { op: 'did' as const, count: null, window: first.occurrence.window } })) as CriteriaNode[];
  return { version: 1, root: { op: 'or', children } };
}

function pageviewWith(field: string, value: string): CriteriaNode {
  return { source: 'pageview', filter: [{ field, op: '=', value }], occurrence: { op: 'did', count: null, window: { kind: 'ever' } } };
}

/** `or`s of equalities on one field, as a person writes an `in` by hand (the printers merge them). */
export const equalityOrsArb: fc.Arbitrary<AudienceCriteria[]> = fc.tuple(
  fc.subarray([...CHANNEL_CATEGORIES], { minLength: 2, maxLength: 3 }),
  fc.subarray(['free', 'pro', 'team', 'Pro'], { minLength: 2, maxLength: 3 }),
).map(([categories, plans]): AudienceCriteria[] => [
  { version: 1, root: { op: 'or', children: categories.map((c) => pageviewWith('channel_category', c)) } },
  { version: 1, root: { op: 'or', children: plans.map((plan) => ({ source: 'product_event' as const, name: 'signup',
    filter: [{ field: 'payload.plan', op: '=' as const, value: plan }], occurrence: { op: 'did' as const, count: null, window: { kind: 'ever' as const } } })) } },
]);
