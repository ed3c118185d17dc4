// The main guard of the compiler: on random small datasets and random valid criteria, the members
// of the compiled DuckDB query equal those of the reference evaluator written from docs/criteria.md,
// read from the payload's JSON and from its typed columns (store/duckdb/typed.ts) alike.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planCriteria, printCount, printMembers, validateCriteria, withTypedPaths } from '../src/criteria/index.js';
import { Store } from '../src/store/duckdb/db.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { AT, criteriaArb, criteriaToJson, datasetArb, PROPERTY_CATALOG } from './support/arbitraries.js';
import { equalityOrsArb, leavesOf, sameScanOr, withExplicitCounts } from './support/criteria-cases.js';
import { anonymousProfile, personProfile, referenceProfiles } from './support/reference.js';
import { tierRuns } from './support/tier.js';

/** Datasets drawn (each with 4–8 random trees). */
const RUNS = tierRuns(150);

describe('compiled SQL against the reference evaluator', () => {
  let store: Store;
  let workspaces = 0;
  beforeAll(async () => {
    store = await Store.open(':memory:', { threads: 1 });
  });
  afterAll(() => store.close());

  it('selects exactly the reference members and count, for every generated dataset and criteria', async () => {
    // Person leaves that hold for some persons but not all: the cases that tell traits apart.
    let splittingPersonLeaves = 0;
    // Counts that read typed payload columns (a typed read that never happens proves nothing).
    let typedReads = 0;
    await fc.assert(fc.asyncProperty(datasetArb, fc.array(criteriaArb(3), { minLength: 4, maxLength: 8 }), equalityOrsArb, async (ds, trees, ors) => {
      // A fresh workspace per dataset: earlier datasets in the same database must never leak in.
      const ws = `ws_prop_${workspaces++}`;
      await importDataset(store, ws, ds);
      const typed = await store.typed.printable(ws);
      // Half the leaf statements repeat one already run on this dataset (an untyped plan printed the
      // same as its typed twin, a leaf shared by trees): each distinct statement runs once.
      const counted = new Map<string, number | null>();
      const countOnce = async ({ sql, params }: ReturnType<typeof printCount>) => {
        const key = `${sql}\u0000${JSON.stringify(params)}`;
        if (!counted.has(key)) counted.set(key, await store.countWithin(sql, params, 60_000));
        return counted.get(key);
      };
      for (const tree of trees) {
        const validated = validateCriteria(criteriaToJson(tree), PROPERTY_CATALOG);
        expect(validated.ok && validated.criteria).toEqual(withExplicitCounts(tree));
        const plan = withTypedPaths(planCriteria(tree, AT), typed);

        const members = printMembers(plan, ws);
        const rows = await store.query(members.sql, members.params) as { person_id: string | null; visitor_id: string | null }[];
        const actual = rows.map((r) => (r.person_id !== null ? personProfile(r.person_id) : anonymousProfile(r.visitor_id!)));
        const expected = referenceProfiles(ds, tree, AT);
        expect(new Set(actual)).toEqual(expected);
        expect(actual.length).toBe(expected.size);

        // Leaf by leaf too: a fault in one leaf is often hidden by the rest of a random tree.
        const merged = [sameScanOr(tree, 'product_event'), sameScanOr(tree, 'pageview')].filter((c) => c !== null);
        for (const single of [tree, ...leavesOf(tree.root), ...merged, ...(tree === trees[0] ? ors : [])]) {
          const expected = referenceProfiles(ds, single, AT).size;
          for (const leafPlan of [planCriteria(single, AT), withTypedPaths(planCriteria(single, AT), typed)]) {
            const count = printCount(leafPlan, ws);
            if (/\bprop_[snb]\d+\b/.test(count.sql)) typedReads++;
            expect(await countOnce(count)).toBe(expected);
          }
          if ('source' in single.root && single.root.source === 'person' && expected > 0 && expected < ds.persons.length) splittingPersonLeaves++;
        }
      }
    }), { numRuns: RUNS, seed: 20261122 });
    // Floors in proportion to the runs (about half of what 15 runs count): the cases they count came up.
    expect(splittingPersonLeaves).toBeGreaterThan(RUNS / 3);
    expect(typedReads).toBeGreaterThan((RUNS * 5) / 3);
  }, 900_000);
});
