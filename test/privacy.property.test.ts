// Deletes against the reference evaluator: on random datasets (persons, visitors linked or not,
// events, page views, payers), random privacy deletes by external_id and visitor_id, then random
// criteria. Every engine's members equal the reference evaluator's on the dataset with the deleted
// people removed as docs/privacy.md says: the persons named or owning a named visitor, all their
// visitors and the visitors named, every event of those persons or visitors, their page views, and
// their payers de-identified (no person, no visitor).

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planCriteria } from '../src/criteria/index.js';
import type { Dataset } from '../src/store/layout.js';
import { startTestApp, type TestApp } from './support/app.js';
import { AT, criteriaArb, datasetArb } from './support/arbitraries.js';
import { ENGINES } from './support/engines.js';
import { anonymousProfile, personProfile, referenceProfiles } from './support/reference.js';
import { importRows } from './support/stored.js';
import { tierRuns } from './support/tier.js';

/** The dataset as it stands after deleting the persons of `externalIds` and the visitors of `visitorIds`. */
function withoutDeleted(ds: Dataset, externalIds: Set<string>, visitorIds: Set<string>): Dataset {
  const persons = new Set(ds.persons.filter((p) => p.external_id !== null && externalIds.has(p.external_id)).map((p) => p.person_id));
  for (const v of ds.visitors) if (visitorIds.has(v.visitor_id) && v.person_id !== null) persons.add(v.person_id);
  const visitors = new Set(ds.visitors.filter((v) => visitorIds.has(v.visitor_id) || (v.person_id !== null && persons.has(v.person_id))).map((v) => v.visitor_id));
  const gone = (person: string | null, visitor: string | null) => (person !== null && persons.has(person)) || (visitor !== null && visitors.has(visitor));
  return {
    ...ds,
    persons: ds.persons.filter((p) => !persons.has(p.person_id)),
    visitors: ds.visitors.filter((v) => !visitors.has(v.visitor_id)),
    events: ds.events.filter((e) => !gone(e.person_id, e.visitor_id)),
    pageviews: ds.pageviews.filter((p) => !visitors.has(p.visitor_id)),
    customers: ds.customers.map((c) => (gone(c.person_id, c.visitor_id)
      ? { ...c, email: null, person_id: null, visitor_id: null, link_state: 'unmatched' as const } : c)),
  };
}

describe.each(ENGINES)('%s: deletes against the reference evaluator', (engine) => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ engine }); });
  afterAll(async () => { await t.close(); });

  it('members after random deletes equal the reference\'s with the deleted people removed', async () => {
    const deletes = fc.record({ persons: fc.array(fc.nat(), { maxLength: 4 }), visitors: fc.array(fc.nat(), { maxLength: 3 }) });
    await fc.assert(fc.asyncProperty(datasetArb, deletes, fc.array(criteriaArb(3), { minLength: 3, maxLength: 6 }), async (ds, picks, trees) => {
      const ws = (await t.freshWorkspace()).workspace_id;
      await importRows(t, ds, ws);
      const identified = ds.persons.filter((p) => p.external_id !== null);
      const externalIds = new Set(identified.length === 0 ? [] : picks.persons.map((i) => identified[i % identified.length]!.external_id!));
      const visitorIds = new Set(picks.visitors.map((i) => ds.visitors[i % ds.visitors.length]!.visitor_id));
      const identifiers = [...[...externalIds].map((external_id) => ({ external_id })), ...[...visitorIds].map((visitor_id) => ({ visitor_id }))];
      if (identifiers.length > 0) {
        const res = await t.post('/v1/privacy/requests', { type: 'delete', identifiers });
        expect(res.statusCode).toBe(202);
        await t.app.privacy.worker.idle();
        const done = await t.app.inject({ method: 'GET', url: `/v1/privacy/requests/${res.json().id}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
        expect(done.json().status).toBe('done');
      }
      const after = withoutDeleted(ds, externalIds, visitorIds);
      for (const tree of trees) {
        const members = await t.stores.analytics.listMembers(planCriteria(tree, AT), ws);
        const actual = members.map((m) => (m.person_id !== null ? personProfile(m.person_id) : anonymousProfile(m.visitor_id!)));
        expect(new Set(actual)).toEqual(referenceProfiles(after, tree, AT));
      }
    }), { numRuns: tierRuns(engine === 'duckdb' ? 60 : 20), seed: 20261128 });
  }, 900_000);
});
