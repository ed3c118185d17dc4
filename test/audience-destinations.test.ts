// Deliveries to the ad platforms, against doubles built from the platforms' published references
// (test/support/platforms: Meta's CustomAudience.json and version table, Google's Data Manager v1
// and Google Ads v25 protos, Google's OAuth token endpoint), on every engine.

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { type AdPlatforms, CREDENTIALS, startAdPlatforms } from './support/platforms/index.js';
import { importRows } from './support/stored.js';

const AT = new Date('2026-06-15T12:00:00Z');
const CUSTOMER = '1234567890';
const sha = (email: string) => createHash('sha256').update(email).digest('hex');
const did = (name: string) => ({ version: 1, root: { source: 'product_event', name, occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } });

// p1 and p2 signed up, p2 and p3 upgraded; p4 has no email.
const PEOPLE: [id: string, email: string | null, events: string[]][] = [
  ['p1', '  Ann.Lee+promo@Gmail.com ', ['signup']],
  ['p2', 'bob@example.com', ['signup', 'upgrade']],
  ['p3', 'cy@example.org', ['upgrade']],
  ['p4', null, ['signup', 'upgrade']],
];
const META_HASH = { p1: sha('ann.lee+promo@gmail.com'), p2: sha('bob@example.com'), p3: sha('cy@example.org') };
const GOOGLE_HASH = { p1: sha('annlee@gmail.com'), p2: sha('bob@example.com'), p3: sha('cy@example.org') };

interface Attempt { request: string; ok: boolean; http_status: number | null; error: string | null }
interface Logged { destination_id: string; status: string; skipped: number; last_error: string | null; attempts: Attempt[] }

const destinations = (ids: { meta: string; dm: string; ads: string }) => [
  { type: 'meta_custom_audience', audience_id: ids.meta, access_token: CREDENTIALS.meta },
  {
    type: 'google_customer_match', customer_id: '123-456-7890', user_list_id: ids.dm, oauth: CREDENTIALS.dataManager,
    consent: { ad_user_data: 'GRANTED', ad_personalization: 'GRANTED' },
  },
  {
    type: 'google_customer_match', api: 'google_ads', customer_id: CUSTOMER, user_list_id: ids.ads, oauth: CREDENTIALS.googleAds,
    developer_token: CREDENTIALS.developerToken, consent: { ad_user_data: 'GRANTED', ad_personalization: 'DENIED' },
  },
];

describe.each(ENGINES_WITH_POSTGRES)('%s: ad platform destinations', (engine) => {
  let t: TestApp;
  let platforms: AdPlatforms;
  const api = (method: 'GET' | 'PATCH' | 'POST', url: string, body?: unknown) => t.app.inject({
    method, url, headers: { authorization: `Bearer ${t.ws.secret_key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
  const deliveries = async (id: string) => (await api('GET', `/v1/audiences/${id}/deliveries`)).json().data as Logged[];
  const refresh = async (id: string) => {
    expect((await api('POST', `/v1/audiences/${id}/refresh`)).statusCode).toBe(200);
    await t.app.audiences.deliverer.idle();
  };
  const create = async (criteria: unknown, list: unknown[]) => {
    const res = await t.post('/v1/audiences', { name: 'ads', criteria_json: criteria, destinations: list });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; destinations: { id: string }[] };
  };
  const list = (double: { lists: Map<string, Set<string>> }, id: string) => [...double.lists.get(`${CUSTOMER}/${id}`)!].sort();

  beforeAll(async () => {
    platforms = await startAdPlatforms({ metaAudiences: ['1001', '1002', '1003', '1004', '1005'], customer: CUSTOMER, lists: ['21', '22', '23', '24', '25', '26'] });
    t = await startTestApp({ engine, at: AT, audiences: { delivery: platforms.delivery } });
    const person = (id: string, email: string | null) => ({ person_id: id, external_id: null, email, name: null, traits: null, created_at: AT });
    await importRows(t, {
      persons: PEOPLE.map(([id, email]) => person(id, email)),
      visitors: [],
      events: PEOPLE.flatMap(([id, , names]) => names.map((name) => ({ event_id: `${name}_${id}`, event_name: name, ts: AT, person_id: id, visitor_id: null, properties: '{}' }))),
    });
  });
  afterAll(async () => {
    await t?.close();
    await platforms?.close();
  });

  it('adds, then adds and removes in one refresh, then removes: each platform ends with the audience, Google Ads never mixes a job', async () => {
    const audience = await create(did('signup'), destinations({ meta: '1001', dm: '21', ads: '22' }));
    await refresh(audience.id);
    expect([...platforms.meta.audiences.get('1001')!].sort()).toEqual([META_HASH.p1, META_HASH.p2].sort());
    expect(list(platforms.dataManager, '21')).toEqual([GOOGLE_HASH.p1, GOOGLE_HASH.p2].sort());
    expect(list(platforms.googleAds, '22')).toEqual([GOOGLE_HASH.p1, GOOGLE_HASH.p2].sort());
    const first = await deliveries(audience.id);
    expect(first).toHaveLength(3);
    for (const d of first) expect(d).toMatchObject({ status: 'delivered', skipped: 1, last_error: null });

    // signup → upgrade: p3 joins, p1 leaves, in one refresh.
    expect((await api('PATCH', `/v1/audiences/${audience.id}`, { criteria_json: did('upgrade') })).statusCode).toBe(200);
    await refresh(audience.id);
    expect([...platforms.meta.audiences.get('1001')!].sort()).toEqual([META_HASH.p2, META_HASH.p3].sort());
    expect(list(platforms.dataManager, '21')).toEqual([GOOGLE_HASH.p2, GOOGLE_HASH.p3].sort());
    expect(list(platforms.googleAds, '22')).toEqual([GOOGLE_HASH.p2, GOOGLE_HASH.p3].sort());
    const deletes = platforms.meta.requests.filter((r) => r.method === 'DELETE');
    expect(deletes).toEqual([expect.objectContaining({ rows: 1, status: 200 })]);

    // upgrade → upgrade and signup: only p2 stays.
    const both = { version: 1, root: { op: 'and', children: [did('upgrade').root, did('signup').root] } };
    expect((await api('PATCH', `/v1/audiences/${audience.id}`, { criteria_json: both })).statusCode).toBe(200);
    await refresh(audience.id);
    expect([...platforms.meta.audiences.get('1001')!]).toEqual([META_HASH.p2]);
    expect(list(platforms.dataManager, '21')).toEqual([GOOGLE_HASH.p2]);
    expect(list(platforms.googleAds, '22')).toEqual([GOOGLE_HASH.p2]);

    const jobs = platforms.googleAds.jobs.filter((j) => j.list === `${CUSTOMER}/22`);
    expect(jobs.map((j) => [j.kind, j.status])).toEqual([['create', 'SUCCESS'], ['create', 'SUCCESS'], ['remove', 'SUCCESS'], ['remove', 'SUCCESS']]);
    expect(jobs[0]!.consent).toEqual({ adUserData: 'GRANTED', adPersonalization: 'DENIED' });
    expect(platforms.googleAds.requests.every((r) => r.status === 200)).toBe(true);
    expect(platforms.dataManager.requests.filter((r) => r.verb === 'ingest').map((r) => r.body?.consent))
      .toEqual([{ adUserData: 'CONSENT_GRANTED', adPersonalization: 'CONSENT_GRANTED' }, expect.anything()]);
    for (const d of await deliveries(audience.id)) expect(d.status).toBe('delivered');
  });

  it('never shows credentials, and keeps them when an edit names the destination by id and leaves them out', async () => {
    const audience = await create(did('signup'), destinations({ meta: '1002', dm: '23', ads: '24' }));
    const shown = JSON.stringify(audience);
    for (const secret of [CREDENTIALS.meta, CREDENTIALS.dataManager.refresh_token, CREDENTIALS.dataManager.client_secret, CREDENTIALS.developerToken]) {
      expect(shown).not.toContain(secret);
    }
    expect(audience.destinations[1]).toMatchObject({ customer_id: CUSTOMER, api: 'data_manager' });
    const edited = audience.destinations.map(({ id, ...rest }) => ({ ...rest, id }));
    const res = await api('PATCH', `/v1/audiences/${audience.id}`, { destinations: edited });
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as { destinations: { id: string }[] }).destinations.map((d) => d.id)).toEqual(audience.destinations.map((d) => d.id));
    const missing = await api('PATCH', `/v1/audiences/${audience.id}`, { destinations: [{ type: 'meta_custom_audience', audience_id: '1002' }] });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toEqual([expect.objectContaining({ field: '/destinations/0/access_token' })]);
    const notDigits = await t.post('/v1/audiences', { name: 'x', criteria_json: did('signup'), destinations: [{ type: 'meta_custom_audience', audience_id: 'ca_1', access_token: 't' }] });
    expect(notDigits.statusCode).toBe(400);
    expect(notDigits.json().errors).toEqual([expect.objectContaining({ field: '/destinations/0/audience_id' })]);
  });

  it('sends 10 001 members as a Meta session of two batches and two Data Manager requests, fetching a new token when it expires mid-delivery', async () => {
    const many = Array.from({ length: 10_001 }, (_, i) => `m${i}`);
    await importRows(t, {
      persons: many.map((id) => ({ person_id: id, external_id: null, email: `${id}@example.com`, name: null, traits: null, created_at: AT })),
      visitors: [],
      events: many.map((id) => ({ event_id: `bulk_${id}`, event_name: 'bulk', ts: AT, person_id: id, visitor_id: null, properties: '{}' })),
    });
    const before = { meta: platforms.meta.requests.length, dm: platforms.dataManager.requests.length };
    // Tokens expire after the first Data Manager request: the second is refused 401, a new token is fetched, it goes through.
    const exchanges = platforms.oauth.exchanges;
    const audience = await create(did('bulk'), destinations({ meta: '1003', dm: '25', ads: '26' }).slice(0, 2));
    platforms.oauth.expireAfter = 1;
    await refresh(audience.id);
    expect(platforms.meta.audiences.get('1003')!.size).toBe(10_001);
    expect(platforms.dataManager.lists.get(`${CUSTOMER}/25`)!.size).toBe(10_001);
    const metaRequests = platforms.meta.requests.slice(before.meta);
    expect(metaRequests.map((r) => [r.rows, r.session?.batch_seq, r.session?.last_batch_flag, r.session?.estimated_num_total]))
      .toEqual([[10_000, 1, false, 10_001], [1, 2, true, 10_001]]);
    expect(metaRequests[0]!.session!.session_id).toBe(metaRequests[1]!.session!.session_id);
    expect(platforms.dataManager.requests.slice(before.dm).map((r) => [r.members, r.status])).toEqual([[10_000, 200], [1, 401], [1, 200]]);
    // The token cached from earlier deliveries served the first request; one exchange after the 401.
    expect(platforms.oauth.exchanges - exchanges).toBe(1);
    const log = await deliveries(audience.id);
    expect(log.map((d) => d.status)).toEqual(['delivered', 'delivered']);
    const dm = log.find((d) => d.attempts.some((a) => a.request.startsWith('POST audienceMembers')))!;
    expect(dm.attempts.filter((a) => !a.ok)).toEqual([expect.objectContaining({ http_status: 401, error: expect.stringContaining('UNAUTHENTICATED') })]);
  });

  it('sends 10 001 members to Google Ads as one job of two requests', async () => {
    const audience = await create(did('bulk'), [destinations({ meta: '1003', dm: '25', ads: '26' })[2]!]);
    await refresh(audience.id);
    expect(platforms.googleAds.lists.get(`${CUSTOMER}/26`)!.size).toBe(10_001);
    const jobs = platforms.googleAds.jobs.filter((j) => j.list === `${CUSTOMER}/26`);
    expect(jobs).toHaveLength(1);
    const adds = (await deliveries(audience.id))[0]!.attempts.filter((a) => a.request === 'add create operations');
    expect(adds).toHaveLength(2);
  });

  it('sends a split\'s members to Meta without a session, none of the holdout', async () => {
    const before = platforms.meta.requests.length;
    const res = await t.post('/v1/audiences', {
      name: 'split', criteria_json: did('bulk'), destinations: [destinations({ meta: '1005', dm: '25', ads: '26' })[0]],
      splits: [{ name: 'arm', percent: 50, destinations: [0] }, { name: 'holdout', percent: 50 }],
    });
    expect(res.statusCode, res.body).toBe(201);
    await refresh(res.json().id);
    const requests = platforms.meta.requests.slice(before);
    const sent = platforms.meta.audiences.get('1005')!.size;
    // Half of 10,001 within about five standard deviations (50).
    expect(Math.abs(sent - 5000)).toBeLessThan(250);
    expect(requests.reduce((n, r) => n + r.rows, 0)).toBe(sent);
    expect(requests.map((r) => r.session ?? null)).toEqual(requests.map(() => null));
  });

  it('retries platform throttling until it passes', async () => {
    platforms.meta.throttle = 2;
    platforms.dataManager.throttle = 1;
    platforms.googleAds.throttle = 1;
    const audience = await create(did('upgrade'), destinations({ meta: '1004', dm: '23', ads: '24' }));
    await refresh(audience.id);
    const log = await deliveries(audience.id);
    expect(log.map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered']);
    const refused = log.flatMap((d) => d.attempts.filter((a) => !a.ok).map((a) => a.http_status));
    expect(refused.sort()).toEqual([400, 400, 429, 429]);
    expect(log.flatMap((d) => d.attempts).find((a) => a.http_status === 400)!.error).toContain('code 80003');
    expect([...platforms.meta.audiences.get('1004')!].sort()).toEqual([META_HASH.p2, META_HASH.p3].sort());
  });

  it('fails a rejected request at once with the platform\'s message, and a failed Google Ads job with its reason', async () => {
    const audience = await create(did('signup'), [
      { type: 'meta_custom_audience', audience_id: '999', access_token: CREDENTIALS.meta },
      { ...destinations({ meta: '1', dm: '23', ads: '24' })[2]! },
    ]);
    platforms.googleAds.failNextJob = 'INSUFFICIENT_MATCHED_TRANSACTIONS';
    await refresh(audience.id);
    const log = await deliveries(audience.id);
    const meta = log.find((d) => d.destination_id === audience.destinations[0]!.id)!;
    expect(meta.status).toBe('failed');
    expect(meta.attempts).toHaveLength(1);
    expect(meta.last_error).toContain("Object with ID '999' does not exist");
    const ads = log.find((d) => d.destination_id === audience.destinations[1]!.id)!;
    expect(ads).toMatchObject({ status: 'failed', last_error: expect.stringContaining('INSUFFICIENT_MATCHED_TRANSACTIONS') });
  });
});
