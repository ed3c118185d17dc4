// Bad input of every shape: compile answers 200 or a 4xx JSON error, never a 500 or a crash.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importDataset } from '../src/store/import.js';
import { startTestApp, type TestApp } from './support/app.js';

const valid = {
  version: 1,
  root: {
    op: 'and',
    children: [
      { source: 'product_event', name: 'signup', filter: { 'payload.plan': { op: 'in', value: ['pro', 'team'] } },
        occurrence: { op: 'did', count: { op: '>=', value: 2 }, window: { kind: 'last_n_days', n: 30 } } },
      { op: 'not', child: { source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } },
        occurrence: { op: 'did', count: null, window: { kind: 'between', from: '2026-01-01', to: '2026-02-01' } } } },
      { source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: 'active' } } },
      { source: 'payments', event: 'refund_issued', occurrence: { window: { kind: 'ever' } } },
    ],
  },
};

type Json = unknown;

/** Every path into a JSON value, as key lists. */
function paths(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [prefix];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [prefix, ...entries.flatMap(([k, v]) => paths(v, [...prefix, k]))];
}

function mutate(doc: Json, path: (string | number)[], replacement: Json, remove: boolean): Json {
  if (path.length === 0) return replacement;
  const copy = structuredClone(doc) as Record<string | number, Json>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, Json>;
  const last = path[path.length - 1]!;
  if (remove) {
    if (Array.isArray(node)) node.splice(last as number, 1);
    else delete node[last];
  } else {
    node[last] = replacement;
  }
  return copy;
}

const allPaths = paths(valid);
const pathsOf = (doc: Json) => paths(doc);
const odd = fc.oneof(
  fc.constantFrom(null, true, 0, -1, 1.5, 1e308, '', 'did_not', 'not', 'and', '__proto__', 'payload.plan', 'ever', '2026-13-01', [], {}, [[]]),
  fc.jsonValue({ maxDepth: 3 }),
  fc.string(),
);
const mutated = fc.tuple(fc.constantFrom(...allPaths), odd, fc.boolean()).map(([p, r, rm]) => mutate(valid, p, r, rm));
const twiceMutated = fc.tuple(mutated, fc.constantFrom(...allPaths), odd).map(([doc, p, r]) => {
  try {
    return mutate(doc, p, r, false);
  } catch {
    return doc;
  }
});

describe('compile fuzz', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ at: new Date('2026-06-15T00:00:00Z') });
    await importDataset(t.store, t.ws.workspace_id, {
      persons: [{ person_id: 'p1', external_id: null, email: null, name: null, traits: null, created_at: new Date() }],
      events: [{ event_id: 'e1', event_name: 'signup', ts: new Date('2026-06-01'), person_id: 'p1', visitor_id: null, properties: '{"plan":"pro"}' }],
    });
  });
  afterAll(() => t.close());

  async function expectCleanAnswer(payload: string): Promise<void> {
    const res = await t.post('/v1/audiences/compile', payload);
    expect(res.statusCode === 200 || (res.statusCode >= 400 && res.statusCode < 500), `${res.statusCode} for ${payload.slice(0, 200)}`).toBe(true);
    const body = res.json();
    if (res.statusCode !== 200) expect(body).toMatchObject({ error: expect.any(String), message: expect.any(String) });
    else expect(typeof body.valid).toBe('boolean');
  }

  it('answers mutated criteria with 200 or 4xx JSON', async () => {
    await fc.assert(fc.asyncProperty(fc.oneof(mutated, twiceMutated), async (criteria) => {
      await expectCleanAnswer(JSON.stringify({ criteria_json: criteria }));
      await expectCleanAnswer(JSON.stringify({ criteria_json: JSON.stringify(criteria) }));
    }), { numRuns: 1500, seed: 42 });
  });

  it('answers random JSON bodies and random text with 200 or 4xx JSON', async () => {
    await fc.assert(fc.asyncProperty(fc.oneof(fc.jsonValue().map((v) => JSON.stringify(v)), fc.string({ maxLength: 200 }),
      fc.jsonValue().map((v) => JSON.stringify({ criteria_json: v }))), async (payload) => {
      await expectCleanAnswer(payload);
    }), { numRuns: 1500, seed: 7 });
  });
});

const ingestBodies: Record<string, Json> = {
  '/v1/persons': { external_id: 'u1', email: 'A@example.com', visitor_id: 'v1', name: 'Ada', traits: { plan: 'pro', seats: 3, nested: { a: [1, 2] } } },
  '/v1/events': { batch: [
    { event_name: 'signup', user_id: 7, tr_visitor_id: 'v1', properties: { plan: 'pro', item: { price: 2.5 } }, timestamp: '2026-06-01T10:00:00Z', message_id: 'm1' },
    { event_name: 'view_item', visitor_id: 'v2', traits: { a: null } },
  ] },
  '/v1/pageviews': { batch: [
    { visitor_id: 'v1', url: 'https://www.example.com/a?utm_source=google&utm_medium=cpc&gclid=1', referrer: 'https://www.google.com/', title: 't' },
    { visitor_id: 'v1', url: 'https://www.example.com/b', referrer: 'https://www.example.com/a', timestamp: '2026-06-01T10:00:00+02:00' },
  ] },
};

describe('ingest fuzz', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  for (const [url, body] of Object.entries(ingestBodies)) {
    it(`answers mutated and random bodies to ${url} with 200 or 4xx JSON`, async () => {
      const docPaths = pathsOf(body);
      const mutatedBody = fc.tuple(fc.constantFrom(...docPaths), odd, fc.boolean()).map(([p, r, rm]) => mutate(body, p, r, rm));
      await fc.assert(fc.asyncProperty(fc.oneof(mutatedBody, mutatedBody, fc.jsonValue()), async (doc) => {
        const res = await t.post(url, JSON.stringify(doc));
        expect(res.statusCode === 200 || (res.statusCode >= 400 && res.statusCode < 500), `${res.statusCode} for ${JSON.stringify(doc).slice(0, 300)}: ${res.body}`).toBe(true);
        expect(res.json()).toBeTypeOf('object');
      }), { numRuns: 700, seed: 11 });
    });
  }
});
