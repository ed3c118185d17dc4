import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE_DEFAULTS } from '../src/audiences/service.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { importRows } from './support/stored.js';

const AT = new Date('2026-06-15T12:00:00Z');
const sha = (email: string) => createHash('sha256').update(email).digest('hex');
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

interface Seen { method: string; url: string; authorization: string | undefined; body: unknown }

describe.each(ENGINES)('%s: ad platform destinations', (engine) => {
  let t: TestApp;
  let server: Server;
  const seen: Seen[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => { raw += c.toString('utf8'); });
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body: raw ? JSON.parse(raw) : null });
        const answer = req.url!.endsWith('offlineUserDataJobs:create') ? { resourceName: 'customers/123/offlineUserDataJobs/9' } : {};
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApp({
      engine, at: AT,
      audiences: { delivery: { ...AUDIENCE_DEFAULTS.delivery, metaBaseUrl: `${base}/meta`, googleBaseUrl: `${base}/google`, backoffBaseMs: 5 } },
    });
    const person = (id: string, email: string | null) => ({ person_id: id, external_id: null, email, name: null, traits: null, created_at: AT });
    await importRows(t, {
      persons: [person('p1', '  Ann@Example.com '), person('p2', null)],
      visitors: [],
      events: ['p1', 'p2'].map((id) => ({ event_id: `e_${id}`, event_name: 'signup', ts: AT, person_id: id, visitor_id: null, properties: '{}' })),
    });
  });
  afterAll(async () => {
    await t.close();
    server.close();
  });

  it('sends hashed emails to Meta and Google in their request shapes and counts people without email as skipped', async () => {
    const res = await t.post('/v1/audiences', {
      name: 'ads', criteria_json: signedUp,
      destinations: [
        { type: 'meta_custom_audience', audience_id: 'ca_42', access_token: 'meta-token' },
        { type: 'google_customer_match', customer_id: '123', user_list_id: '77', access_token: 'g-token', developer_token: 'dev' },
      ],
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.body).not.toMatch(/meta-token|g-token|"dev"/);
    const id = res.json().id as string;
    await t.app.audiences.scheduler.tick(AT);
    await t.app.audiences.deliverer.idle();

    const hash = sha('ann@example.com');
    expect(seen.filter((s) => s.url.startsWith('/meta'))).toEqual([{
      method: 'POST', url: '/meta/ca_42/users', authorization: 'Bearer meta-token',
      body: { payload: { schema: 'EMAIL_SHA256', data: [[hash]] } },
    }]);
    const google = seen.filter((s) => s.url.startsWith('/google'));
    expect(google.map((s) => s.url)).toEqual([
      '/google/customers/123/offlineUserDataJobs:create',
      '/google/customers/123/offlineUserDataJobs/9:addOperations',
      '/google/customers/123/offlineUserDataJobs/9:run',
    ]);
    expect(google[0]!.body).toEqual({ job: { type: 'CUSTOMER_MATCH_USER_LIST', customerMatchUserListMetadata: { userList: 'customers/123/userLists/77' } } });
    expect(google[1]!.body).toEqual({ operations: [{ create: { userIdentifiers: [{ hashedEmail: hash }] } }] });

    const log = (await t.app.inject({ method: 'GET', url: `/v1/audiences/${id}/deliveries`, headers: { authorization: `Bearer ${t.ws.secret_key}` } })).json().data;
    expect(log).toHaveLength(2);
    for (const d of log) expect(d).toMatchObject({ status: 'delivered', skipped: 1 });
  });
});
