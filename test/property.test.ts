// The main guard of the compiler: on random small datasets and random valid criteria, the members
// of the compiled DuckDB query equal those of the reference evaluator written from docs/criteria.md.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AudienceCriteria, CHANNEL_CATEGORIES, type CriteriaNode, planCriteria, printCount, printMembers, validateCriteria } from '../src/criteria/index.js';
import { Store } from '../src/store/duckdb/db.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { AT, criteriaArb, criteriaToJson, datasetArb, PROPERTY_CATALOG } from './support/arbitraries.js';
import { anonymousProfile, personProfile, referenceProfiles } from './support/reference.js';

/** Validation spells `did` with `count: null` as its meaning, at least once. */
function withExplicitCounts(criteria: AudienceCriteria): AudienceCriteria {
  return JSON.parse(JSON.stringify(criteria), (key, value) => {
    if (key === 'occurrence' && value.op === 'did' && value.count === null) return { ...value, count: { op: '>=', value: 1 } };
    if ((key === 'from' || key === 'to') && typeof value === 'string') return new Date(value);
    return value;
  });
}

/** Every leaf of a tree as a criteria of its own, a did_not leaf read as did at least once. */
function leavesOf(node: CriteriaNode): AudienceCriteria[] {
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
function sameScanOr(criteria: AudienceCriteria, source: 'product_event' | 'pageview'): AudienceCriteria | null {
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

describe('compiled SQL against the reference evaluator', () => {
  let store: Store;
  let workspaces = 0;
  beforeAll(async () => {
    store = await Store.open(':memory:', { threads: 1 });
  });
  afterAll(() => store.close());

  it('selects exactly the reference members and count, for every generated dataset and criteria', async () => {
    const equalityOrs = fc.tuple(
      fc.subarray([...CHANNEL_CATEGORIES], { minLength: 2, maxLength: 3 }),
      fc.subarray(['free', 'pro', 'team', 'Pro'], { minLength: 2, maxLength: 3 }),
    ).map(([categories, plans]): AudienceCriteria[] => [
      { version: 1, root: { op: 'or', children: categories.map((c) => pageviewWith('channel_category', c)) } },
      { version: 1, root: { op: 'or', children: plans.map((plan) => ({ source: 'product_event' as const, name: 'signup',
        filter: [{ field: 'payload.plan', op: '=' as const, value: plan }], occurrence: { op: 'did' as const, count: null, window: { kind: 'ever' as const } } })) } },
    ]);
    await fc.assert(fc.asyncProperty(datasetArb, fc.array(criteriaArb(3), { minLength: 4, maxLength: 8 }), equalityOrs, async (ds, trees, ors) => {
      // A fresh workspace per dataset: earlier datasets in the same database must never leak in.
      const ws = `ws_prop_${workspaces++}`;
      await importDataset(store, ws, ds);
      for (const tree of trees) {
        const validated = validateCriteria(criteriaToJson(tree), PROPERTY_CATALOG);
        expect(validated.ok && validated.criteria).toEqual(withExplicitCounts(tree));
        const plan = planCriteria(tree, AT);

        const members = printMembers(plan, ws);
        const rows = await store.query(members.sql, members.params) as { person_id: string | null; visitor_id: string | null }[];
        const actual = rows.map((r) => (r.person_id !== null ? personProfile(r.person_id) : anonymousProfile(r.visitor_id!)));
        const expected = referenceProfiles(ds, tree, AT);
        expect(new Set(actual)).toEqual(expected);
        expect(actual.length).toBe(expected.size);

        // Leaf by leaf too: a fault in one leaf is often hidden by the rest of a random tree.
        const merged = [sameScanOr(tree, 'product_event'), sameScanOr(tree, 'pageview')].filter((c) => c !== null);
        for (const single of [tree, ...leavesOf(tree.root), ...merged, ...(tree === trees[0] ? ors : [])]) {
          const count = printCount(planCriteria(single, AT), ws);
          expect(await store.countWithin(count.sql, count.params, 60_000)).toBe(referenceProfiles(ds, single, AT).size);
        }
      }
    }), { numRuns: 150, seed: 20261122 });
  });
});
