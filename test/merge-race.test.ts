// Merges racing on two API nodes (PostgreSQL control state, one ClickHouse): a merge on one node
// while the other ingests either identity, forced into the worst order (the ingest reads and locks
// `from` before the merge, and writes while the merge waits for its lock); the same merge and the
// opposite one on both nodes at once. Each ends with one person and nothing lost.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveIdentities } from '../src/ingest/identity.js';
import type { ControlTx } from '../src/store/control/store.js';
import { startTestApp, type TestApp } from './support/app.js';
import { CHDB_INSTALLED, POSTGRES } from './support/engines.js';
import { postgresRunning } from './support/postgres.js';
import { controlRows, storedRows } from './support/stored.js';

const count = async (t: TestApp, sql: string, params: string[]) => Number((await controlRows(t, sql, [t.ws.workspace_id, ...params]))[0]!.n);

/** `tx` whose writes wait for `until` (its reads go on: its snapshot is taken before). */
function heldWrites(tx: ControlTx, until: Promise<void>): ControlTx {
  return {
    dialect: tx.dialect, search: tx.search, afterCommit: (hook) => tx.afterCommit(hook),
    all: (sql, params) => tx.all(sql, params),
    run: async (sql, params) => {
      await until;
      return tx.run(sql, params);
    },
  };
}

describe.skipIf(!CHDB_INSTALLED || !await postgresRunning())('merges racing on two API nodes', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await startTestApp({ engine: POSTGRES });
    b = await startTestApp({ nodeOf: a });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  // Both nodes write the one workspace they started with: each test has persons of its own.
  const personsOf = (id: string) => count(a, 'SELECT count(*) AS n FROM persons WHERE workspace_id = $1 AND (external_id = $2 OR email = $3)', [id, `${id}@example.com`]);
  const merges = (id: string) => count(a, 'SELECT count(*) AS n FROM person_merges WHERE workspace_id = $1 AND into_person_id IN (SELECT person_id FROM persons WHERE external_id = $2 OR email = $3)', [id, `${id}@example.com`]);

  /** Sessions of the test database waiting for a lock (the merge, for the person rows an ingest holds). */
  const lockWaits = async () => Number((await controlRows(a, `SELECT count(*) AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0]!.n);

  /** Person `id` (external_id) with visitor `v-id`, and person `id@example.com` (email) with visitor `v-id@`. */
  async function twoPersons(id: string) {
    const signups = await a.post('/v1/events', { batch: [
      { event_name: 'signup', user_id: id, visitor_id: `v-${id}` }, { event_name: 'signup', email: `${id}@example.com`, visitor_id: `v-${id}@` },
    ] });
    expect(signups.statusCode, signups.body).toBe(200);
    return signups.json().results.map((r: { person_id: string }) => r.person_id) as [string, string];
  }

  it('an ingest on the other node that read from before the merge committed loses nothing to it', async () => {
    const [, into] = await twoPersons('r1');
    const ws = a.ws.workspace_id;
    // Node b reads and locks r1 (and links a new visitor to it) in a transaction whose writes wait
    // until the merge on node a waits for that lock.
    let committed!: () => void;
    const mergeCommitted = new Promise<void>((resolve) => { committed = resolve; });
    const ingest = b.stores.analytics.unit(async (work) => {
      const control = heldWrites(work.control, mergeCommitted);
      const { resolved } = await resolveIdentities(b.stores.control, { ...work, control }, ws, [{ external_id: 'r1', visitor_id: 'v-late', at: new Date(), event: true }], new Date());
      await work.analytics.appendEvents(ws, [{
        event_id: 'evt_late', message_id: null, event_name: 'late', ts: new Date(), person_key: resolved[0]!.person_key,
        visitor_key: resolved[0]!.visitor_key, properties: '{}', payload: {},
      }], new Date());
      return resolved[0]!;
    });
    const merged = a.post('/v1/persons/merge', { from: { external_id: 'r1' }, into: { email: 'r1@example.com' } });
    for (let i = 0; i < 500 && await lockWaits() === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await lockWaits(), 'the merge did not wait for the ingest\'s lock').toBeGreaterThan(0);
    expect(await merges('r1')).toBe(0);
    committed();
    const [late, res] = await Promise.all([ingest, merged]);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().person_id).toBe(into);
    // The ingest did write for the merged-away person: its rows were moved after it committed.
    expect(late.person_id).not.toBe(into);
    expect(await personsOf('r1')).toBe(1);
    const links = await controlRows(a, `SELECT v.visitor_id, p.person_id FROM visitors v LEFT JOIN persons p ON p.person_key = v.person_key
      WHERE v.workspace_id = $1 AND v.visitor_id IN ('v-r1', 'v-r1@', 'v-late') ORDER BY v.visitor_id`, [ws]);
    expect(links).toEqual(['v-late', 'v-r1', 'v-r1@'].map((visitor_id) => ({ visitor_id, person_id: into })));
    const [intoKey] = (await controlRows(a, 'SELECT person_key FROM persons WHERE workspace_id = $1 AND person_id = $2', [ws, into])).map((r) => Number(r.person_key));
    const stored = await storedRows(a, 'events', ['event_name', 'person_key', 'visitor_key'], ['event_name'], ws);
    expect(stored.filter((e) => Number(e.person_key) === late.person_key)).toEqual([]);
    expect(stored.filter((e) => e.event_name === 'late').map((e) => Number(e.person_key))).toEqual([intoKey]);
    // Ingest after the merge, on either node, reaches into.
    expect((await b.post('/v1/events', { event_name: 'after', user_id: 'r1' })).json().person_id).toBe(into);
    expect((await a.post('/v1/events', { event_name: 'after', visitor_id: 'v-late' })).json().person_id).toBe(into);
  });

  it('the same merge and the opposite one on both nodes at once end with one person, recorded once', async () => {
    await twoPersons('r2');
    const answers = await Promise.all([
      a.post('/v1/persons/merge', { from: { external_id: 'r2' }, into: { email: 'r2@example.com' } }),
      b.post('/v1/persons/merge', { from: { external_id: 'r2' }, into: { email: 'r2@example.com' } }),
      b.post('/v1/persons/merge', { from: { email: 'r2@example.com' }, into: { external_id: 'r2' } }),
      a.post('/v1/events', { batch: [{ event_name: 'during', user_id: 'r2' }, { event_name: 'during', email: 'r2@example.com' }] }),
    ]);
    for (const res of answers) expect(res.statusCode, res.body).toBe(200);
    const survivor = answers[0]!.json().person_id;
    expect(answers.slice(1, 3).map((res) => res.json().person_id)).toEqual([survivor, survivor]);
    expect(await personsOf('r2')).toBe(1);
    expect(await merges('r2')).toBe(1);
    const [key] = (await controlRows(a, 'SELECT person_key FROM persons WHERE person_id = $1', [survivor])).map((r) => Number(r.person_key));
    const stored = await storedRows(a, 'events', ['event_name', 'person_key'], [], a.ws.workspace_id);
    const theirs = stored.filter((e) => e.event_name === 'during' || Number(e.person_key) === key);
    expect(theirs.map((e) => Number(e.person_key))).toEqual([key, key, key, key]);
  });
});
