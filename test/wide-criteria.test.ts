// Trees up to the size limits compile to SQL DuckDB accepts and counts right: long UNION /
// INTERSECT chains nest, leaves used once sit in place, leaves used twice or more are shared CTEs.
// Counts are held to the reference evaluator, as in property.test.ts.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AudienceCriteria, type CriteriaNode, MAX_DEPTH, MAX_NODES, planCriteria, printCount, validateCriteria,
} from '../src/criteria/index.js';
import { Store } from '../src/store/duckdb/db.js';
import type { Dataset } from '../src/store/layout.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { AT, criteriaArb, criteriaToJson, datasetArb, EVENT_NAMES, PROPERTY_CATALOG } from './support/arbitraries.js';
import { referenceCount } from './support/reference.js';
import { tierRuns } from './support/tier.js';

/** `n` distinct product_event leaves: every name, at least 1…k times in the last 1…30 days. */
function distinctLeaves(n: number): CriteriaNode[] {
  return Array.from({ length: n }, (_, i) => ({
    source: 'product_event' as const,
    name: EVENT_NAMES[i % EVENT_NAMES.length]!,
    filter: [],
    occurrence: { op: 'did' as const, count: { op: '>=' as const, value: 1 + Math.floor(i / 90) }, window: { kind: 'last_n_days' as const, n: 1 + (Math.floor(i / 3) % 30) } },
  }));
}

const nodeCount = (node: CriteriaNode): number =>
  'op' in node ? 1 + (node.op === 'not' ? nodeCount(node.child) : node.children.reduce((sum, c) => sum + nodeCount(c), 0)) : 1;

const depthOf = (node: CriteriaNode): number =>
  'op' in node ? 1 + Math.max(...(node.op === 'not' ? [node.child] : node.children).map(depthOf)) : 1;

describe('trees up to the size limits against the reference evaluator', () => {
  let store: Store;
  let datasets = 0;
  beforeAll(async () => {
    store = await Store.open(':memory:', { threads: 1 });
  });
  afterAll(() => store.close());

  async function expectReferenceCount(ds: Dataset, ws: string, tree: AudienceCriteria): Promise<void> {
    const validated = validateCriteria(criteriaToJson(tree), PROPERTY_CATALOG);
    expect(validated.ok, JSON.stringify(!validated.ok && validated.errors.slice(0, 3))).toBe(true);
    if (!validated.ok) return;
    const query = printCount(planCriteria(validated.criteria, AT), ws);
    expect(await store.countWithin(query.sql, query.params, 600_000)).toBe(referenceCount(ds, tree, AT));
  }

  async function freshDataset(seed: number): Promise<{ ds: Dataset; ws: string }> {
    const ds = fc.sample(datasetArb, { numRuns: 1, seed })[0]!;
    const ws = `ws_wide_${datasets++}`;
    await importDataset(store, ws, ds);
    return { ds, ws };
  }

  it('counts or / and / and-not of many leaves drawn with repeats from a small pool', async () => {
    const wide = fc.tuple(
      fc.array(criteriaArb(0).map((c) => c.root), { minLength: 2, maxLength: 8 }),
      fc.array(fc.nat(), { minLength: 17, maxLength: 600, size: 'max' }),
      fc.array(fc.nat(), { minLength: 17, maxLength: 300, size: 'max' }),
    ).map(([pool, picks, minusPicks]): AudienceCriteria[] => {
      const pick = (indexes: number[]) => indexes.map((i) => pool[i % pool.length]!);
      return [
        { version: 1, root: { op: 'or', children: pick(picks) } },
        { version: 1, root: { op: 'and', children: pick(picks) } },
        { version: 1, root: { op: 'and', children: [{ op: 'or', children: pick(picks) }, { op: 'not', child: { op: 'or', children: pick(minusPicks) } }] } },
      ];
    });
    await fc.assert(fc.asyncProperty(datasetArb, wide, async (ds, trees) => {
      const ws = `ws_wide_${datasets++}`;
      await importDataset(store, ws, ds);
      for (const tree of trees) await expectReferenceCount(ds, ws, tree);
    }), { numRuns: tierRuns(12), seed: 20260501 });
  });

  // 48–60 s were measured while other work shared the two cores (load 8–19): a minute was too close.
  it(`counts an or of ${MAX_NODES - 1} distinct leaves, each used once`, async () => {
    const { ds, ws } = await freshDataset(1);
    await expectReferenceCount(ds, ws, { version: 1, root: { op: 'or', children: distinctLeaves(MAX_NODES - 1) } });
  }, 180_000);

  it(`counts ${MAX_NODES} nodes whose leaves are each shared by two branches`, async () => {
    const { ds, ws } = await freshDataset(2);
    const leaves = distinctLeaves(334);
    const pairs = Array.from({ length: 333 }, (_, i): CriteriaNode => ({ op: 'and', children: [leaves[i]!, leaves[i + 1]!] }));
    const root: CriteriaNode = { op: 'or', children: pairs };
    expect(nodeCount(root)).toBe(MAX_NODES);
    await expectReferenceCount(ds, ws, { version: 1, root });
  });

  it(`counts ${MAX_DEPTH} levels of alternating or / and / and-not, each with siblings`, async () => {
    const { ds, ws } = await freshDataset(3);
    const leaves = distinctLeaves(3 * MAX_DEPTH);
    let node: CriteriaNode = leaves[0]!;
    let depth = 1;
    for (let i = 1; depth < MAX_DEPTH; i++) {
      const [a, b] = [leaves[2 * i - 1]!, leaves[2 * i]!];
      if (i % 3 === 0 && depth + 2 <= MAX_DEPTH) {
        node = { op: 'and', children: [a, { op: 'not', child: node }] };
        depth += 2;
      } else {
        node = i % 3 === 1 ? { op: 'or', children: [node, a, b] } : { op: 'and', children: [a, node] };
        depth += 1;
      }
    }
    expect(depthOf(node)).toBe(MAX_DEPTH);
    await expectReferenceCount(ds, ws, { version: 1, root: node });
  });
});
