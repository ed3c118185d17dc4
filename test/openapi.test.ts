// The API reference at /docs: every operation in one of the declared groups, and every request
// example accepted by its own route.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';

interface Operation { tags?: string[]; requestBody?: { content: Record<string, { schema: { example?: unknown } }> } }
interface OpenApi { tags: { name: string }[]; paths: Record<string, Record<string, Operation>> }

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
});
