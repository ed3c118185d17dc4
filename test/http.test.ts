import { request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dataset } from '../src/store/layout.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES, POSTGRES } from './support/engines.js';
import { importRows, storedCount } from './support/stored.js';

const AT = new Date('2026-06-15T12:00:00Z');
const day = (iso: string) => new Date(`${iso}T12:00:00Z`);

const signedUp = { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } };

function dataset(prefix: string, people: number): Partial<Dataset> {
  const ids = Array.from({ length: people }, (_, i) => `${prefix}${i}`);
  return {
    persons: ids.map((id) => ({ person_id: id, external_id: `u_${id}`, email: `${id}@example.com`, name: null, traits: null, created_at: day('2026-01-01') })),
    visitors: [],
    events: ids.map((id, i) => ({
      event_id: `e_${id}`, event_name: 'signup', ts: day('2026-06-01'), person_id: id, visitor_id: null,
      properties: JSON.stringify({ plan: i % 2 === 0 ? 'pro' : 'free' }),
    })),
  };
}

describe.each(ENGINES_WITH_POSTGRES)('%s: HTTP API', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engine, at: AT });
    await importRows(t, dataset('a', 5));
  });
  afterAll(() => t.close());

  it('answers /health once the database is open', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    const { status, stores } = res.json() as { status: string; stores: Record<string, string> };
    expect(status).toBe('ok');
    expect(Object.keys(stores).sort()).toEqual({ duckdb: ['duckdb'], clickhouse: ['clickhouse', 'duckdb'], [POSTGRES]: ['clickhouse', 'postgresql'] }[engine]);
    expect(new Set(Object.values(stores))).toEqual(new Set(['ok']));
  });

  it('rejects a missing, malformed or unknown key with 401 unauthorized', async () => {
    for (const authorization of [undefined, 'Basic abc', 'Bearer sk_unknown', 'Bearer nope']) {
      const res = await t.app.inject({
        method: 'POST', url: '/v1/audiences/compile', payload: { criteria_json: {} },
        headers: authorization ? { authorization } : {},
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
    }
  });

  it('rejects a publishable key on compile with 403 forbidden', async () => {
    const res = await t.compile({ version: 1, root: signedUp }, t.ws.publishable_key);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error: 'forbidden' });
  });

  it('answers malformed JSON with 400 invalid_json', async () => {
    const res = await t.post('/v1/audiences/compile', '{"criteria_json": ');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_json' });
  });

  it('takes an empty body sent as application/json as no body on a body-less action', async () => {
    const created = await t.post('/v1/audiences', { name: 'empty body', criteria_json: { version: 1, root: signedUp } });
    const res = await t.app.inject({
      method: 'POST', url: `/v1/audiences/${created.json().id}/refresh`, payload: '',
      headers: { authorization: `Bearer ${t.ws.secret_key}`, 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ready', member_count: 5 });
  });

  it('answers an empty body where a body is required with 400 invalid_request, not invalid_json', async () => {
    const res = await t.post('/v1/audiences/compile', '');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '' }] });
  });

  it('says what to fix: a tree sent without its criteria_json wrapper, a date not in ISO 8601, a URL that is not http(s)', async () => {
    const unwrapped = await t.post('/v1/audiences/compile', { version: 1, root: signedUp });
    expect(unwrapped.json()).toMatchObject({ valid: false, code: 'invalid_envelope', path: '', message: expect.stringContaining('criteria_json is missing') });

    const report = await t.post('/v1/reports/revenue', { from: '11/01/2025', to: '2026-01-01', interval: 'month', group_by: 'channel_category' });
    expect(report.statusCode).toBe(400);
    expect(report.json().errors).toEqual([{ field: '/from', message: expect.stringContaining('ISO 8601 date such as 2025-11-01') }]);

    const destination = await t.post('/v1/audiences', {
      name: 'ftp', criteria_json: { version: 1, root: signedUp }, destinations: [{ type: 'webhook', url: 'ftp://hooks.example.com/a', secret: 's' }],
    });
    expect(destination.statusCode).toBe(400);
    expect(destination.json().errors).toEqual([{ field: '/destinations/0/url', message: expect.stringContaining('http:// or https://') }]);
  });

  it('answers a body over 1 MiB with 413 payload_too_large', async () => {
    const res = await t.post('/v1/audiences/compile', { criteria_json: 'x'.repeat(1024 * 1024 + 10) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ error: 'payload_too_large' });
  });

  it('answers a body that is not an object with 400 invalid_request naming the whole body', async () => {
    const res = await t.post('/v1/audiences/compile', [1, 2]);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '', message: expect.any(String) }] });
  });

  it('names every invalid field the same way: a JSON Pointer into the body, or into the query string with `in`', async () => {
    const audience = await t.post('/v1/audiences', { name: 'a', criteria_json: {}, refresh_every: 'often' });
    expect(audience.json()).toMatchObject({ error: 'invalid_request', errors: [expect.objectContaining({ field: '/refresh_every' })] });
    expect(audience.json().errors[0]).not.toHaveProperty('in');
    const members = await t.app.inject({ method: 'GET', url: '/v1/audiences/aud_x/members?format=xml', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    expect(members.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/format', in: 'querystring', message: expect.any(String) }] });
    const events = await t.post('/v1/events', { batch: [{ event_name: 'ok', external_id: 'u', properties: { 'a/b': 1 } }, { event_name: 'x', external_id: 'u', traits: [] }] });
    expect(events.json()).toMatchObject({ error: 'invalid_request', errors: [{ index: 1, field: '/batch/1/traits', message: expect.any(String) }] });
    const person = await t.post('/v1/persons', { external_id: 'u', name: 7 });
    expect(person.json()).toMatchObject({ errors: [{ field: '/name' }] });
    expect(person.json().message).toMatch(/^\/name: /);
  });

  it('rejects a page view whose url is not a page address, naming the field, and stores nothing of its batch', async () => {
    for (const url of ['not a url', 'notaurl', 'javascript:alert(1)', 'mailto:a@example.com', '', 'https://']) {
      const res = await t.post('/v1/pageviews', { batch: [{ visitor_id: 'v', url: 'https://example.com/' }, { visitor_id: 'v', url }] }, t.ws.publishable_key);
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request', errors: [{ index: 1, field: '/batch/1/url' }] });
    }
    expect(await storedCount(t, 'pageviews')).toBe(0);
    for (const url of ['https://example.com/pricing?utm_source=x', 'http://localhost:3000/', 'example.com/a', '/pricing']) {
      expect((await t.post('/v1/pageviews', { visitor_id: 'v', url }, t.ws.publishable_key)).statusCode, url).toBe(200);
    }
  });

  it('reads a body nested 40,000 levels deep that holds a lone surrogate escape (the well-formed walk has its own stack)', async () => {
    const depth = 40_000;
    const body = `{"criteria_json":{"version":1,"root":${'{"op":"not","child":'.repeat(depth)}"\\ud800"${'}'.repeat(depth)}}}`;
    const res = await t.post('/v1/audiences/compile', body);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ valid: false, errors: expect.arrayContaining([expect.objectContaining({ code: 'too_deep' })]) });
  });

  it('answers the shapes the engine could not take with criteria errors in a small body: and/or 250 deep, not 2,000 deep', async () => {
    const leaf = { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } };
    let alternating: unknown = leaf;
    for (let i = 0; i < 250; i++) alternating = { op: i % 2 ? 'and' : 'or', children: [leaf, alternating] };
    // Built as text: 8,000 levels of nesting are past what JSON.stringify takes here.
    const text = JSON.stringify(leaf);
    const negations = `${`{"op":"and","children":[${text},{"op":"not","child":`.repeat(2000)}${text}${'}]}'.repeat(2000)}`;
    for (const root of [JSON.stringify(alternating), negations]) {
      const compiled = await t.post('/v1/audiences/compile', `{"criteria_json":{"version":1,"root":${root}}}`);
      expect(compiled.statusCode).toBe(200);
      expect(compiled.json()).toMatchObject({ valid: false, errors: expect.arrayContaining([expect.objectContaining({ code: 'too_deep' })]) });
      expect(compiled.body.length).toBeLessThan(20_000);
      const saved = await t.post('/v1/audiences', `{"name":"deep","criteria_json":{"version":1,"root":${root}}}`);
      expect(saved.statusCode).toBe(400);
      expect(saved.json()).toMatchObject({ error: 'invalid_criteria' });
    }
  });

  it('refuses a __proto__ or constructor.prototype key, saying which key and why', async () => {
    const proto = await t.post('/v1/events', '{"event_name":"a","external_id":"u","properties":{"ok":{"__proto__":{"admin":true}}}}');
    expect(proto.statusCode).toBe(400);
    expect(proto.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/properties/ok/__proto__', message: expect.stringContaining('prototype') }] });
    const ctor = await t.post('/v1/persons', '{"external_id":"u","traits":{"constructor":{"prototype":{"x":1}}}}');
    expect(ctor.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/traits/constructor' }] });
    const beacon = await t.app.inject({
      method: 'POST', url: `/v1/pageviews?key=${t.ws.publishable_key}`, headers: { 'content-type': 'text/plain' },
      payload: '{"visitor_id":"v","url":"https://example.com/","__proto__":{"x":1}}',
    });
    expect(beacon.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/__proto__' }] });
    // a plain `constructor` key is an ordinary property name
    expect((await t.post('/v1/persons', { external_id: 'u', traits: { constructor: 'Acme' } })).statusCode).toBe(200);
    expect((await t.post('/v1/events', '{"event_name":')).json()).toMatchObject({ error: 'invalid_json' });
  });

  it('answers unknown routes with 404 not_found', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: 'not_found' });
  });

  it('serves the OpenAPI document generated from the schemas', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json().paths['/v1/audiences/compile'].post.requestBody).toBeDefined();
  });

  it('estimates a valid criteria exactly within budget', async () => {
    const res = await t.compile({ version: 1, root: signedUp });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ valid: true, is_time_windowed: false, estimated_count: { count: 5, is_estimate: false, hit_limit: false } });
  });

  it('accepts criteria_json as a JSON string and flags time windows', async () => {
    const root = { ...signedUp, filter: { 'payload.plan': { op: '=', value: 'pro' } }, occurrence: { op: 'did', count: null, window: { kind: 'last_n_days', n: 30 } } };
    const res = await t.compile(JSON.stringify({ version: 1, root }));
    expect(res.json()).toEqual({ valid: true, is_time_windowed: true, estimated_count: { count: 3, is_estimate: false, hit_limit: false } });
  });

  it('answers invalid criteria with 200, valid false, every error, and the first one at the top level', async () => {
    const res = await t.compile({ version: 1, root: { op: 'not', child: { ...signedUp, filter: { 'payload.nope': { op: 'is_set' } } } } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      valid: false, is_time_windowed: null, estimated_count: null,
      code: 'unanchored_negation', path: '/root', message: expect.any(String),
      errors: [
        { code: 'unanchored_negation', path: '/root', message: expect.any(String) },
        { code: 'unknown_field', path: '/root/child/filter/payload.nope', message: expect.any(String) },
      ],
    });
  });

  it('answers a missing criteria_json with invalid_envelope', async () => {
    const res = await t.post('/v1/audiences/compile', {});
    expect(res.json()).toMatchObject({ valid: false, code: 'invalid_envelope' });
  });

  it('never counts or whitelists another workspace\'s rows', async () => {
    const other = await t.workspaces.create('other');
    await importRows(t, {
      ...dataset('b', 2),
      events: [{ event_id: 'x', event_name: 'signup', ts: day('2026-06-01'), person_id: 'b0', visitor_id: null, properties: '{"only_b":1}' },
        { event_id: 'y', event_name: 'signup', ts: day('2026-06-01'), person_id: 'b1', visitor_id: null, properties: '{"plan":"pro"}' }],
    }, other.workspace_id);
    const mine = await t.compile({ version: 1, root: signedUp });
    const theirs = await t.compile({ version: 1, root: signedUp }, other.secret_key);
    expect(mine.json().estimated_count.count).toBe(5);
    expect(theirs.json().estimated_count.count).toBe(2);
    const leak = await t.compile({ version: 1, root: { ...signedUp, filter: { 'payload.only_b': { op: 'is_set' } } } });
    expect(leak.json()).toMatchObject({ valid: false, code: 'unknown_field' });
  });
});

describe('errors before a route runs', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  const get = (path: string, headers: Record<string, string> = {}) => new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(body) }));
    }).on('error', reject).end();
  });

  it('answers an over-long path segment with 414 uri_too_long in the service\'s error shape', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/audiences/${'x'.repeat(500)}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    expect(res.statusCode).toBe(414);
    expect(res.json()).toEqual({ error: 'uri_too_long', message: expect.any(String) });
  });

  it('answers headers or a URL past the parser\'s limit with 431 headers_too_large', async () => {
    expect(await get('/health', { 'x-big': 'a'.repeat(20_000) })).toEqual({ status: 431, body: { error: 'headers_too_large', message: expect.any(String) } });
    expect(await get(`/v1/audiences?q=${'a'.repeat(100_000)}`)).toEqual({ status: 431, body: { error: 'headers_too_large', message: expect.any(String) } });
  });

  it('answers bytes that are not HTTP with 400 in the same shape, and keeps serving', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let data = '';
      socket.on('data', (chunk) => { data += chunk; });
      socket.on('close', () => resolve(data));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ error: 'invalid_request', message: 'the request is not valid HTTP' });
    expect((await get('/health')).status).toBe(200);
  });
});
