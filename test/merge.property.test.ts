// Merges against the reference evaluator: on random datasets (persons, visitors linked or not,
// events, page views, payers), random merges through the API, some forced, some chained (a person
// merged into one merged further), then random criteria. Every engine's estimate and members equal
// the reference evaluator's on the dataset with the merges applied (mergeIntoReference), and a merge
// of two persons both holding an external_id is refused without force.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planCriteria } from '../src/criteria/index.js';
import type { Dataset } from '../src/store/layout.js';
import { startTestApp, type TestApp } from './support/app.js';
import { AT, criteriaArb, datasetArb } from './support/arbitraries.js';
import { ENGINES } from './support/engines.js';
import { anonymousProfile, mergeIntoReference, personProfile, referenceProfiles } from './support/reference.js';
import { importRows } from './support/stored.js';
import { tierRuns } from './support/tier.js';

const mergesArb = fc.array(fc.record({ from: fc.nat(), into: fc.nat(), force: fc.boolean() }), { minLength: 1, maxLength: 4 });

describe.each(ENGINES)('%s: merges against the reference evaluator', (engine) => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ engine }); });
  afterAll(async () => { await t.close(); });

  it('estimates and members after random merges equal the reference\'s on the merged dataset', async () => {
    await fc.assert(fc.asyncProperty(datasetArb, mergesArb, fc.array(criteriaArb(3), { minLength: 2, maxLength: 4 }), async (ds, merges, trees) => {
      const ws = (await t.freshWorkspace()).workspace_id;
      await importRows(t, ds, ws);
      let after: Dataset = ds;
      // Each dataset person's id names, through merges, the person it is now.
      const now = new Map(ds.persons.map((p) => [p.person_id, p.person_id]));
      for (const m of merges) {
        const [fromRef, intoRef] = [ds.persons[m.from % ds.persons.length]!.person_id, ds.persons[m.into % ds.persons.length]!.person_id];
        const res = await t.post('/v1/persons/merge', { from: { person_id: fromRef }, into: { person_id: intoRef }, force: m.force });
        const [from, into] = [now.get(fromRef)!, now.get(intoRef)!];
        const held = (id: string) => after.persons.find((p) => p.person_id === id)!.external_id !== null;
        if (from !== into && held(from) && held(into) && !m.force) {
          expect(res.statusCode).toBe(409);
          continue;
        }
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().person_id).toBe(into);
        if (from === into) continue;
        after = mergeIntoReference(after, from, into);
        for (const [id, current] of now) if (current === from) now.set(id, into);
      }
      for (const tree of trees) {
        const expected = referenceProfiles(after, tree, AT);
        const plan = planCriteria(tree, AT);
        const members = await t.stores.analytics.listMembers(plan, ws);
        const actual = members.map((m) => (m.person_id !== null ? personProfile(m.person_id) : anonymousProfile(m.visitor_id!)));
        expect(new Set(actual)).toEqual(expected);
        expect(await t.stores.analytics.countWithin(plan, ws, 60_000)).toBe(expected.size);
      }
    }), { numRuns: tierRuns(engine === 'duckdb' ? 60 : 20), seed: 20261128 });
  }, 900_000);
});
