// The API reference at /docs: every operation in one of the declared groups, and every request
// example accepted by its own route.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { criteriaEnvelope } from '../src/criteria/envelope.js';
import { validateCriteria } from '../src/criteria/index.js';
import { CRITERIA_EXAMPLE } from '../src/http/examples.js';
import { criteriaArb, criteriaToJson, PROPERTY_CATALOG } from './support/arbitraries.js';
import { startTestApp, type TestApp } from './support/app.js';
import { tierRuns } from './support/tier.js';

interface Operation { tags?: string[]; requestBody?: { content: Record<string, { schema: { example?: unknown } }> } }
interface OpenApi { tags: { name: string }[]; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } }

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: OpenApi;
  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
  });
  afterAll(() => t.close());

  const operations = () => Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ path, method, op })));

  it('puts every operation in exactly one declared group', () => {
    const declared = doc.tags.map((tag) => tag.name);
    expect(declared).toEqual(expect.arrayContaining(['persons and events', 'page views', 'audiences', 'payments', 'people']));
    const ops = operations();
    expect(ops.length).toBeGreaterThan(15);
    for (const { path, method, op } of ops) {
      expect(op.tags, `${method} ${path}`).toHaveLength(1);
      expect(declared, `${method} ${path}`).toContain(op.tags![0]);
    }
  });

  it('shows an example body for each write of persons, events, page views and audiences, which its route accepts', async () => {
    const examples = operations().flatMap(({ path, method, op }) => {
      const example = op.requestBody?.content['application/json']?.schema.example;
      return example === undefined ? [] : [{ path, method, example }];
    });
    expect(examples.map((e) => `${e.method} ${e.path}`)).toEqual(expect.arrayContaining([
      'post /v1/persons', 'post /v1/events', 'post /v1/pageviews', 'post /v1/audiences/compile', 'post /v1/audiences/overlap', 'post /v1/audiences',
    ]));
    // The event example names the visitor that the page-view example is sent by, so page views go
    // first; the criteria example filters on a trait that the person and event examples define.
    const order = ['/v1/pageviews', '/v1/events', '/v1/persons'];
    const rank = (path: string) => (order.includes(path) ? order.indexOf(path) : order.length);
    examples.sort((a, b) => rank(a.path) - rank(b.path));
    for (const { path, method, example } of examples) {
      const res = await t.app.inject({
        method: method.toUpperCase() as 'POST', url: path, payload: example as object,
        headers: { authorization: `Bearer ${t.ws.secret_key}` },
      });
      expect(res.statusCode, `${method} ${path}: ${res.body}`).toBeLessThan(300);
      if (path === '/v1/audiences/compile') expect(res.json()).toMatchObject({ valid: true });
    }
  });

  it('documents every criteria_json, asked and answered, with the criteria tree', () => {
    const criteriaJsonOf = (path: string, method: string, status?: string) => {
      const op = doc.paths[path]![method] as Operation & { responses: Record<string, { content: Record<string, { schema: unknown }> }> };
      const schema = (status ? op.responses[status]!.content['application/json']!.schema : op.requestBody!.content['application/json']!.schema) as
        { properties: Record<string, unknown> };
      return JSON.stringify(schema.properties.criteria_json);
    };
    const ref = '"$ref":"#/components/schemas/AudienceCriteria"';
    for (const [path, method] of [['/v1/audiences', 'post'], ['/v1/audiences/{id}', 'patch'], ['/v1/audiences/compile', 'post'], ['/v1/reports/revenue', 'post']]) {
      expect(criteriaJsonOf(path!, method!), `${method} ${path}`).toContain(ref);
    }
    expect(criteriaJsonOf('/v1/audiences/{id}', 'get', '200')).toContain(ref);
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining([
      'AudienceCriteria', 'CriteriaNode', 'AndOrBranch', 'NotBranch',
      'ProductEventLeaf', 'PageviewLeaf', 'PaymentsEventLeaf', 'PaymentsStateLeaf', 'PersonLeaf',
    ]));
    expect(JSON.stringify(doc.components.schemas)).not.toContain('__shared');
  });
});

describe('the documented criteria tree', () => {
  it('admits every tree the validator accepts', () => {
    expect(validateCriteria(CRITERIA_EXAMPLE, { events: new Map([['signup', new Set()]]), traits: new Set(['plan']) }).ok).toBe(true);
    expect(criteriaEnvelope.safeParse(CRITERIA_EXAMPLE).success).toBe(true);
    fc.assert(fc.property(criteriaArb(), (criteria) => {
      const json = criteriaToJson(criteria);
      expect(validateCriteria(json, PROPERTY_CATALOG).ok).toBe(true);
      expect(criteriaEnvelope.safeParse(json).error).toBeUndefined();
    }), { seed: 31, numRuns: tierRuns(300) });
  });

  it('refuses what the validator refuses for its shape', () => {
    const leaf = { source: 'pageview', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } };
    const shapes = [
      { version: 2, root: leaf },
      { version: 1, root: leaf, extra: true },
      { version: 1, root: { source: 'nowhere' } },
      { version: 1, root: { op: 'and', children: [] } },
      { version: 1, root: { ...leaf, occurrence: { op: 'did', count: { op: '>=', value: -1 }, window: { kind: 'ever' } } } },
      { version: 1, root: { ...leaf, occurrence: { op: 'did', count: null, window: { kind: 'last_n_days', n: 0 } } } },
      { version: 1, root: { ...leaf, filter: { colour: { op: '=', value: 'red' } } } },
      { version: 1, root: { source: 'payments', event: 'first_paid_invoice', occurrence: { op: 'did', window: { kind: 'ever' } } } },
      { version: 1, root: { source: 'payments', entity: 'invoice', predicate: { interval: { op: '=', value: 'month' } } } },
    ];
    for (const criteria of shapes) {
      expect(validateCriteria(criteria, PROPERTY_CATALOG).ok, JSON.stringify(criteria)).toBe(false);
      expect(criteriaEnvelope.safeParse(criteria).success, JSON.stringify(criteria)).toBe(false);
    }
  });
});
