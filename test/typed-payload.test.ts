// Typed payload columns on DuckDB (store/duckdb/typed.ts): the values ingest writes into them, and
// those a backfill writes for rows stored before them, select exactly the rows the JSON selects, for
// every predicate op and value type, with mixed types per path, nesting, nulls, arrays and more
// paths than a name has slots. (The property test holds the JSON and imported slots to the reference.)

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AudienceCriteria, planCriteria, type Predicate, printCount, type Scalar, validateCriteria } from '../src/criteria/index.js';
import { startTestApp, type TestApp } from './support/app.js';
import { tierRuns } from './support/tier.js';

const AT = new Date('2026-11-01T00:00:00Z');
const dirs: string[] = [];
afterAll(() => { for (const dir of dirs) rmSync(dir, { recursive: true, force: true }); });

const valueArb: fc.Arbitrary<unknown> = fc.constantFrom(
  'a', 'B', 'ab', 'ba', 'é', '10', '', 'true',
  0, -0, 1, 2.5, -3, 10, 1e21, 9007199254740993,
  true, false, null, { x: 1 }, [1, 'a'],
);

/** Payloads over a few paths (one nested), each value of any type, any path absent. */
const payloadArb = fc.record({ a: valueArb, b: valueArb, o: fc.oneof(fc.record({ c: valueArb }, { requiredKeys: [] }), valueArb) }, { requiredKeys: [] });

/** More string paths than a name has string slots: the last ones stay JSON-only. */
const wide = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`k${String(i).padStart(2, '0')}`, `v${i % 3}`]));

const eventArb = fc.record({
  event_name: fc.constantFrom('e1', 'e2'),
  user_id: fc.constantFrom('u1', 'u2', 'u3', 'u4', 'u5', 'u6'),
  properties: payloadArb,
});

/** Every predicate the schema accepts on `field`, with values of every type. */
function predicatesOf(field: string): Predicate[] {
  const strings: Scalar[] = ['a', 'B', 'b', '10', 'true', ''];
  const numbers: Scalar[] = [0, 1, 2.5, 10, -3, 1e21, 9007199254740992];
  const out: Predicate[] = [{ field, op: 'is_set' }, { field, op: 'is_not_set' }];
  for (const value of strings) {
    for (const op of ['=', '!=', '>', '>=', '<', '<=', 'contains', 'not_contains', 'starts_with', 'ends_with'] as const) out.push({ field, op, value });
  }
  for (const value of numbers) for (const op of ['=', '!=', '>', '>=', '<', '<='] as const) out.push({ field, op, value });
  for (const value of [true, false]) for (const op of ['=', '!='] as const) out.push({ field, op, value });
  for (const values of [['a', 1, true], [2.5, 10], ['B', 'ab'], [false, '10', 0]] as Scalar[][]) {
    out.push({ field, op: 'in', value: values }, { field, op: 'not_in', value: values });
  }
  return out;
}

function criteria(name: string, predicate: Predicate): AudienceCriteria {
  const filter = { [predicate.field]: predicate.value === undefined ? { op: predicate.op } : { op: predicate.op, value: predicate.value } };
  const raw = { version: 1, root: { source: 'product_event', name, filter, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };
  return raw as unknown as AudienceCriteria;
}

/** Counts of every predicate on `paths` of `name`, typed (as the service runs them) and from the JSON alone. */
async function compare(t: TestApp, name: string, paths: string[]): Promise<{ typedReads: number }> {
  const ws = t.ws.workspace_id;
  const catalog = await t.stores.analytics.propertyCatalog(ws);
  let typedReads = 0;
  for (const path of paths) {
    for (const predicate of predicatesOf(`payload.${path}`)) {
      const validated = validateCriteria(criteria(name, predicate), catalog);
      if (!validated.ok) throw new Error(`${JSON.stringify(predicate)}: ${JSON.stringify(validated.errors)}`);
      const plan = planCriteria(validated.criteria, AT);
      const typed = await t.stores.analytics.countQuery(plan, ws);
      if (/\bprop_[snb]\d+\b/.test(typed.sql)) typedReads++;
      const json = printCount(plan, ws);
      const [viaTyped, viaJson] = await Promise.all([t.store.countWithin(typed.sql, typed.params, 60_000), t.store.countWithin(json.sql, json.params, 60_000)]);
      expect({ predicate, count: viaTyped }).toEqual({ predicate, count: viaJson });
    }
  }
  return { typedReads };
}

describe('typed payload columns', () => {
  // Slots are per workspace: each run of the property starts from a fresh one of the shared app.
  let shared: TestApp;
  beforeAll(async () => { shared = await startTestApp({ at: AT }); });
  afterAll(() => shared.close());

  it('select the same rows as the JSON, filled at ingest, whatever the types a path mixes', async () => {
    let runs = 0;
    await fc.assert(fc.asyncProperty(fc.array(fc.array(eventArb, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }), async (batches) => {
      await shared.freshWorkspace();
      // Batch by batch: slots of types seen later are added by later transactions.
      for (const batch of batches) expect((await shared.post('/v1/events', { batch: batch.map((e) => ({ ...e, timestamp: '2026-10-01T00:00:00Z' })) })).statusCode).toBe(200);
      const names = [...new Set(batches.flat().map((e) => e.event_name))];
      for (const name of names) await compare(shared, name, ['a', 'b', 'o', 'o.c'].filter((p) => batches.flat().some((e) => e.event_name === name && p.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], e.properties) !== undefined)));
      runs++;
    }), { numRuns: tierRuns(8), seed: 20261125 });
    expect(runs).toBe(tierRuns(8));
  }, 240_000);

  it('fills the columns of rows stored before them, and keeps names past their slots on the JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'typed-'));
    dirs.push(dir);
    const path = join(dir, 'db.duckdb');
    const events = [
      ...['a', 'B', 'ab', 'é'].map((a, i) => ({ event_name: 'e1', user_id: `u${i}`, properties: { a, b: i, o: { c: i % 2 === 0 } } })),
      { event_name: 'e1', user_id: 'u9', properties: { a: 5, b: 'x', o: 'flat' } },
      { event_name: 'wide', user_id: 'u1', properties: wide },
      { event_name: 'wide', user_id: 'u2', properties: { ...wide, k13: 'v1', k00: 'zz' } },
    ];
    let t = await startTestApp({ path, at: AT });
    expect((await t.post('/v1/events', { batch: events.map((e) => ({ ...e, timestamp: '2026-10-01T00:00:00Z' })) })).statusCode).toBe(200);
    const ingested = await t.store.query('SELECT event_name, path, kind, slot, ready FROM event_slots ORDER BY ALL');
    // Twelve string slots for `wide`: k12 and k13 read the JSON.
    expect(ingested.filter((r) => r.event_name === 'wide').map((r) => r.path)).toEqual(Array.from({ length: 12 }, (_, i) => `k${String(i).padStart(2, '0')}`));
    expect(ingested.every((r) => r.ready)).toBe(true);
    const wideCounts = await compare(t, 'wide', ['k00', 'k12', 'k13']);
    expect(wideCounts.typedReads).toBeGreaterThan(0);
    const workspace = t.ws;
    await t.close();

    // As a database written before typed storage: no slots, no typed columns, every name legacy.
    const { Store } = await import('../src/store/duckdb/db.js');
    const raw = await Store.open(path);
    const columns = (await raw.query(`SELECT column_name FROM duckdb_columns() WHERE table_name = 'events' AND column_name LIKE 'prop\\_%' ESCAPE '\\'`)).map((r) => String(r.column_name));
    expect(columns.length).toBeGreaterThan(0);
    await raw.transaction(async (tx) => {
      for (const c of columns) await tx.run(`ALTER TABLE events DROP COLUMN ${c}`);
      await tx.run('DELETE FROM event_slots');
      await tx.run('UPDATE event_slot_names SET legacy = true, discovered = false');
    });
    await raw.close();

    t = await startTestApp({ path, at: AT, workspace });
    // Opening the store starts the fill; events arriving meanwhile get the slots it made.
    expect((await t.post('/v1/events', { batch: [{ event_name: 'e1', user_id: 'u7', properties: { a: 'ab', b: true }, timestamp: '2026-10-02T00:00:00Z' }] })).statusCode).toBe(200);
    const typed = t.store.typed;
    await typed.settled();
    await typed.fill();
    expect(typed.lastError).toBeNull();
    const filled = await t.store.query(`SELECT path, kind, ready FROM event_slots WHERE workspace_id = $1 AND event_name = 'e1' ORDER BY ALL`, [workspace.workspace_id]);
    expect(filled).toEqual([
      { path: 'a', kind: 'number', ready: true }, { path: 'a', kind: 'string', ready: true },
      { path: 'b', kind: 'boolean', ready: true }, { path: 'b', kind: 'number', ready: true }, { path: 'b', kind: 'string', ready: true },
      { path: 'o', kind: 'string', ready: true }, { path: 'o.c', kind: 'boolean', ready: true },
    ]);
    const { typedReads } = await compare(t, 'e1', ['a', 'b', 'o', 'o.c']);
    expect(typedReads).toBeGreaterThan(50);
    await t.close();
  }, 120_000);
});
