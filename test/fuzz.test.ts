// Bad input of every shape: compile answers 200 or a 4xx JSON error, never a 500 or a crash.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DEPTH, MAX_ERRORS, MAX_NODES } from '../src/criteria/index.js';
import { BODY_LIMIT_BYTES } from '../src/http/app.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { startTestApp, type TestApp } from './support/app.js';
import { tierRuns } from './support/tier.js';

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
    }), { numRuns: tierRuns(1500), seed: 42 });
  });

  it('answers random JSON bodies and random text with 200 or 4xx JSON', async () => {
    await fc.assert(fc.asyncProperty(fc.oneof(fc.jsonValue().map((v) => JSON.stringify(v)), fc.string({ maxLength: 200 }),
      fc.jsonValue().map((v) => JSON.stringify({ criteria_json: v }))), async (payload) => {
      await expectCleanAnswer(payload);
    }), { numRuns: tierRuns(1500), seed: 7 });
  });
});

/** A document of `depth` nested levels: `prefix`, `open` × depth, `inner`, `close` × depth, `suffix`. */
interface DeepShape {
  name: string;
  prefix: string;
  open: string;
  inner: string;
  close: string;
  suffix: string;
  /** The first fault, for every depth from 33 on. */
  first: { code: string; path: string } | null;
}

const LEAF = JSON.stringify(valid.root.children[3]);
const PATH_33 = `/root${'/children/0'.repeat(MAX_DEPTH)}`;
const DEEP_SHAPES: DeepShape[] = [
  { name: 'not nodes under an anchored and', prefix: `{"version":1,"root":{"op":"and","children":[${LEAF},`, open: '{"op":"not","child":', inner: LEAF, close: '}', suffix: ']}}',
    first: { code: 'unanchored_negation', path: '/root/children/1/child' } },
  { name: 'and nodes', prefix: '{"version":1,"root":', open: '{"op":"and","children":[', inner: LEAF, close: ']}', suffix: '}',
    first: { code: 'too_deep', path: PATH_33 } },
  { name: 'arrays as the root', prefix: '{"version":1,"root":', open: '[', inner: '', close: ']', suffix: '}', first: { code: 'invalid_node', path: '/root' } },
  { name: 'arrays as the criteria', prefix: '', open: '[', inner: '', close: ']', suffix: '', first: { code: 'invalid_envelope', path: '' } },
  { name: 'objects under an unknown envelope key', prefix: `{"version":1,"root":${LEAF},"extra":`, open: '{"a":', inner: '1', close: '}', suffix: '}',
    first: { code: 'invalid_envelope', path: '/extra' } },
  { name: 'arrays in a predicate value', prefix: '{"version":1,"root":{"source":"pageview","filter":{"path":{"op":"in","value":', open: '[', inner: '"/"', close: ']',
    suffix: '}},"occurrence":{"op":"did","count":null,"window":{"kind":"ever"}}}}', first: { code: 'invalid_value', path: '/root/filter/path/value/0' } },
  // The request body's own well-formed-string pass walks this one (src/well-formed.ts).
  { name: 'objects around a lone surrogate escape', prefix: '{"version":1,"root":', open: '{"a":', inner: '"\\ud800"', close: '}', suffix: '}', first: null },
];

type BodyForm = 'compile' | 'compile, criteria as a JSON string' | 'create audience';
const BODY_FORMS: BodyForm[] = ['compile', 'compile, criteria as a JSON string', 'create audience'];

function bodyOf(shape: DeepShape, depth: number, form: BodyForm): string {
  const doc = shape.prefix + shape.open.repeat(depth) + shape.inner + shape.close.repeat(depth) + shape.suffix;
  if (form === 'create audience') return `{"name":"deep","criteria_json":${doc}}`;
  return `{"criteria_json":${form === 'compile' ? doc : JSON.stringify(doc)}}`;
}

/** The deepest document of `shape` whose body fits in the body limit (lengths grow linearly with depth). */
function deepestFitting(shape: DeepShape, form: BodyForm): number {
  const base = bodyOf(shape, 0, form).length;
  return Math.floor((BODY_LIMIT_BYTES - base) / (bodyOf(shape, 1, form).length - base));
}

const urlOf = (form: BodyForm) => (form === 'create audience' ? '/v1/audiences' : '/v1/audiences/compile');

describe('criteria size fuzz: deep and wide documents up to the body limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ at: new Date('2026-06-15T00:00:00Z') });
  });
  afterAll(() => t.close());

  /** A clean answer: 413 past the body limit, else 200 / 4xx JSON; the criteria faults when any. */
  async function answer(body: string, form: BodyForm): Promise<{ code: string; path: string }[] | null> {
    const res = await t.post(urlOf(form), body);
    const fits = Buffer.byteLength(body) <= BODY_LIMIT_BYTES;
    expect(res.statusCode, `${res.statusCode} for ${body.length} bytes: ${res.body.slice(0, 300)}`).toBe(fits ? res.statusCode : 413);
    expect(res.statusCode === 200 || res.statusCode === 201 || (res.statusCode >= 400 && res.statusCode < 500), res.body.slice(0, 300)).toBe(true);
    const json = res.json();
    expect(json).toBeTypeOf('object');
    return Array.isArray(json.errors) ? json.errors : null;
  }

  for (const shape of DEEP_SHAPES) {
    it(`answers ${shape.name} 33, 1,000, 10,000 and 100,000 deep and as deep as the body limit allows`, async () => {
      for (const form of BODY_FORMS) {
        const deepest = deepestFitting(shape, form);
        expect(bodyOf(shape, deepest, form).length).toBeLessThanOrEqual(BODY_LIMIT_BYTES);
        expect(bodyOf(shape, deepest + 1, form).length).toBeGreaterThan(BODY_LIMIT_BYTES);
        for (const depth of [33, 1_000, 10_000, 100_000, deepest]) {
          const body = bodyOf(shape, depth, form);
          const errors = await answer(body, form);
          if (shape.first && body.length <= BODY_LIMIT_BYTES) {
            expect(errors?.[0], `${form}, depth ${depth}`).toMatchObject(shape.first);
            if (shape.open.startsWith('{"op"')) expect(errors).toContainEqual(expect.objectContaining({ code: 'too_deep' }));
          }
        }
      }
    });
  }

  it('answers documents of random shape and depth, up to past the body limit', async () => {
    const deepCase = fc.tuple(fc.constantFrom(...DEEP_SHAPES), fc.constantFrom(...BODY_FORMS), fc.double({ min: 0, max: 1.1, noNaN: true }))
      .map(([shape, form, share]) => ({ shape, form, depth: Math.round(share * deepestFitting(shape, form)) }));
    await fc.assert(fc.asyncProperty(deepCase, async ({ shape, form, depth }) => {
      await answer(bodyOf(shape, depth, form), form);
    }), { numRuns: tierRuns(150), seed: 33 });
  });

  /** An `or` of `width` chains of `depth` nodes (and branches of one child down to a leaf). */
  const wideBody = (width: number, depth: number, form: BodyForm) => {
    const chain = '{"op":"and","children":['.repeat(depth - 1) + LEAF + ']}'.repeat(depth - 1);
    return bodyOf({ ...DEEP_SHAPES[1]!, open: '', close: '', inner: `{"op":"or","children":[${new Array(width).fill(chain).join(',')}]}` }, 0, form);
  };

  it(`answers trees of ${MAX_NODES - 1}, ${MAX_NODES}, ${MAX_NODES + 1} and more leaves, up to the body limit`, async () => {
    const widest = Math.floor((BODY_LIMIT_BYTES - wideBody(0, 1, 'compile').length) / (LEAF.length + 1));
    for (const width of [MAX_NODES - 1, MAX_NODES, MAX_NODES + 1, 5_000, widest]) {
      for (const form of BODY_FORMS) {
        const errors = await answer(wideBody(width, 1, form), form);
        if (wideBody(width, 1, form).length > BODY_LIMIT_BYTES) continue;
        expect(errors, `${form}, ${width} leaves`).toEqual(width + 1 > MAX_NODES
          ? [{ code: 'too_many_nodes', path: `/root/children/${MAX_NODES - 1}`, message: expect.any(String) }]
          : null);
      }
    }
    // Where nodes belong but none is: a fault per node read, the first MAX_ERRORS of them listed.
    const errors = await answer(`{"criteria_json":{"version":1,"root":{"op":"or","children":[${'1,'.repeat(400_000)}1]}}}`, 'compile');
    expect(errors).toHaveLength(MAX_ERRORS);
    expect(errors!.at(-1)).toMatchObject({ code: 'invalid_node', path: `/root/children/${MAX_ERRORS - 1}` });
  });

  it('answers trees of random width and depth with the limit each crosses first', async () => {
    const wideCase = fc.record({ width: fc.integer({ min: 1, max: 3_000 }), depth: fc.integer({ min: 1, max: 60 }), form: fc.constantFrom(...BODY_FORMS) });
    await fc.assert(fc.asyncProperty(wideCase, async ({ width, depth, form }) => {
      const body = wideBody(width, depth, form);
      const errors = await answer(body, form);
      if (body.length > BODY_LIMIT_BYTES) return;
      // The first chain reaches depth 33 before the node count reaches 1,001.
      if (depth + 1 > MAX_DEPTH) expect(errors?.[0]).toMatchObject({ code: 'too_deep', path: `/root/children/0${'/children/0'.repeat(MAX_DEPTH - 1)}` });
      else if (width * depth + 1 > MAX_NODES) expect(errors).toEqual([expect.objectContaining({ code: 'too_many_nodes' })]);
      else expect(errors).toBeNull();
    }), { numRuns: tierRuns(60), seed: 1001 });
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
      }), { numRuns: tierRuns(700), seed: 11 });
    });
  }
});
