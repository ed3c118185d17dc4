// Destinations may only reach public addresses (SSRF). Every address below is either refused by
// address parsing before any packet, or loopback: no test sends a packet anywhere else.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nonPublic, refusedUrl } from '../src/audiences/destinations/addresses.js';
import { AUDIENCE_DEFAULTS, createAudienceService } from '../src/audiences/service.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { startTestApp, type TestApp } from './support/app.js';

const AT = new Date('2026-06-15T12:00:00Z');
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

/** URL → what it is, as the refusal names it. */
const REFUSED: [string, string][] = [
  ['http://127.1.2.3/hook', 'loopback'],
  ['http://0.0.0.0/hook', 'unspecified'],
  ['http://[::1]:22/hook', 'loopback'],
  ['http://localhost/hook', 'loopback'],
  ['http://LocalHost./hook', 'loopback'],
  ['http://hooks.localhost/hook', 'loopback'],
  ['http://2130706433/hook', 'loopback'],
  ['http://0x7f.1/hook', 'loopback'],
  ['http://0177.0.0.1/hook', 'loopback'],
  ['http://127.0.0.1./hook', 'loopback'],
  ['http://[::ffff:127.0.0.1]/hook', 'loopback'],
  ['http://[::]/hook', 'unspecified'],
  ['http://[::ffff:0.0.0.0]/hook', 'unspecified'],
  ['http://10.0.0.1/hook', 'private'],
  ['http://172.16.5.4/hook', 'private'],
  ['http://192.168.1.1/hook', 'private'],
  ['http://[::ffff:192.168.1.1]/hook', 'private'],
  ['http://100.64.0.1/hook', 'carrier-grade NAT'],
  ['http://100.100.100.200/latest/meta-data/', 'carrier-grade NAT'],
  ['http://169.254.169.254/latest/meta-data/', 'link-local'],
  ['http://[::ffff:169.254.169.254]/latest/meta-data/', 'link-local'],
  ['http://[fd00::1]/hook', 'unique local'],
  ['http://[fd00:ec2::254]/latest/meta-data/', 'unique local'],
  ['http://[fe80::1]/hook', 'link-local'],
  ['http://224.0.0.1/hook', 'multicast'],
  ['http://[ff02::1]/hook', 'multicast'],
  ['http://255.255.255.255/hook', 'reserved'],
  ['http://240.0.0.1/hook', 'reserved'],
  ['http://192.0.2.1/hook', 'documentation'],
  ['http://[2001:db8::1]/hook', 'documentation'],
  ['http://[64:ff9b::7f00:1]/hook', 'NAT64'],
  ['http://[2002:7f00:1::1]/hook', '6to4'],
  ['http://[::127.0.0.1]/hook', 'reserved'],
  ['http://[::ffff:0:7f00:1]/hook', 'reserved'],
];

describe('the address policy', () => {
  it.each(REFUSED)('refuses %s as %s', (url, kind) => {
    expect(refusedUrl(url)).toMatch(new RegExp(`is an? ${kind}.*; destinations must be public addresses$`));
  });

  it('accepts public addresses, IPv4-mapped ones included, and leaves names to the connection', () => {
    for (const url of ['http://93.184.215.14/hook', 'https://[2606:4700:4700::1111]/hook', 'http://[::ffff:8.8.8.8]/hook', 'https://hooks.example.com/x']) {
      expect(refusedUrl(url), url).toBeNull();
    }
    expect(nonPublic('100.128.0.1')).toBeNull();
    expect(nonPublic('172.32.0.1')).toBeNull();
    expect(nonPublic('::ffff:127.0.0.1')).toBe('a loopback address');
  });
});

describe('destinations when private addresses are not allowed', () => {
  let t: TestApp;
  let receiver: Server;
  let port = 0;
  let connections = 0;
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });
  const webhook = (url: string) => ({ type: 'webhook', url, secret: 'shh' });
  const meta = { type: 'meta_custom_audience', audience_id: '101', access_token: 'token' };

  beforeAll(async () => {
    // A loopback receiver that counts connections: any packet reaching it is a failure.
    receiver = createServer((_req, res) => res.writeHead(200).end('{}'));
    receiver.on('connection', () => { connections++; });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
    // The test app allows private destinations; this one is saved and delivered as in production.
    t = await startTestApp({ at: AT, audiences: { delivery: { ...AUDIENCE_DEFAULTS.delivery, allowPrivateDestinations: false } } });
    await importDataset(t.store, t.ws.workspace_id, {
      persons: [{ person_id: 'p1', external_id: null, email: 'ann@example.com', name: null, traits: null, created_at: AT }],
      events: [{ event_id: 'e1', event_name: 'signup', ts: AT, person_id: 'p1', visitor_id: null, properties: '{}' }],
    });
  });
  afterAll(async () => {
    await t.close();
    receiver.close();
  });

  it.each(REFUSED)('answers 400 invalid_request naming /destinations/1/url for %s, and saves nothing', async (url, kind) => {
    const before = (await get('/v1/audiences')).json().data.length;
    const res = await t.post('/v1/audiences', { name: 'x', criteria_json: signedUp, destinations: [meta, webhook(url)] });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({
      error: 'invalid_request',
      message: expect.stringContaining('/destinations/1/url'),
      errors: [{ field: '/destinations/1/url', message: expect.stringContaining(kind) }],
    });
    expect((await get('/v1/audiences')).json().data.length).toBe(before);
  });

  it('refuses a private address on PATCH and keeps the destinations', async () => {
    const created = await t.post('/v1/audiences', { name: 'kept', criteria_json: signedUp, destinations: [webhook('https://hooks.example.com/x')] });
    expect(created.statusCode, created.body).toBe(201);
    const { id, destinations } = created.json() as { id: string; destinations: unknown[] };
    const res = await t.app.inject({
      method: 'PATCH', url: `/v1/audiences/${id}`,
      headers: { authorization: `Bearer ${t.ws.secret_key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ destinations: [webhook('http://169.254.169.254/latest/meta-data/')] }),
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors).toEqual([{ field: '/destinations/0/url', message: expect.stringContaining('link-local') }]);
    expect((await get(`/v1/audiences/${id}`)).json().destinations).toEqual(destinations);
  });

  it('accepts the same addresses when ALLOW_PRIVATE_DESTINATIONS is on', async () => {
    const lenient = await startTestApp({ at: AT });
    try {
      const res = await lenient.post('/v1/audiences', { name: 'local', criteria_json: signedUp, destinations: REFUSED.map(([url]) => webhook(url)).slice(0, 10) });
      expect(res.statusCode, res.body).toBe(201);
    } finally {
      await lenient.close();
    }
  });

  it('refuses at connect time a destination saved while allowed, or whose name resolves to loopback: nothing reaches the receiver', async () => {
    // Saved through an app that allows private addresses, on the same store.
    const lenient = createAudienceService(t.stores, () => AT, () => undefined, {
      delivery: { ...AUDIENCE_DEFAULTS.delivery, allowPrivateDestinations: true },
    });
    const audience = await lenient.resource.create(t.ws.workspace_id, {
      name: 'saved while allowed', criteria_json: signedUp,
      destinations: [
        { type: 'webhook', url: `http://127.0.0.1:${port}/hook`, secret: 'shh' },
        { type: 'webhook', url: `http://[::ffff:127.0.0.1]:${port}/hook`, secret: 'shh' },
        { type: 'webhook', url: `http://localhost:${port}/hook`, secret: 'shh' },
        { type: 'meta_custom_audience', audience_id: '101', access_token: 'token' },
      ],
    });
    const refreshed = await t.app.audiences.refresher.refresh(t.ws.workspace_id, audience.id, AT);
    expect(refreshed.ok).toBe(true);

    // Delivered by a service that does not allow them; META_BASE_URL points at loopback by name.
    const guarded = createAudienceService(t.stores, () => AT, () => undefined, {
      delivery: { ...AUDIENCE_DEFAULTS.delivery, metaBaseUrl: `http://localhost:${port}/meta`, maxTries: 3, backoffBaseMs: 1, backoffMaxMs: 2 },
    });
    await guarded.deliverer.deliver(t.ws.workspace_id, audience.id);
    await guarded.deliverer.stop();

    expect(connections).toBe(0);
    const log = (await get(`/v1/audiences/${audience.id}/deliveries`)).json().data as {
      destination_id: string; status: string; last_error: string; attempts: { ok: boolean; http_status: number | null; error: string }[];
    }[];
    const byDestination = new Map(log.map((d) => [d.destination_id, d]));
    const expected = [
      /^address not allowed: 127\.0\.0\.1 is a loopback address$/,
      /^address not allowed: ::ffff:7f00:1 is a loopback address$/,
      /^address not allowed: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/,
      /^address not allowed: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/,
    ];
    expect(log).toHaveLength(4);
    audience.destinations.forEach((destination, i) => {
      const delivery = byDestination.get(destination.id)!;
      expect(delivery.status).toBe('failed');
      expect(delivery.last_error).toMatch(/address not allowed/);
      // Refused once, not retried: the address will not become public by waiting.
      expect(delivery.attempts).toHaveLength(1);
      expect(delivery.attempts[0]).toMatchObject({ ok: false, http_status: null, error: expect.stringMatching(expected[i]!) });
    });
  });

  it('delivers to the same loopback receiver when private destinations are allowed (the receiver is reachable)', async () => {
    const lenient = createAudienceService(t.stores, () => AT, () => undefined, {
      delivery: { ...AUDIENCE_DEFAULTS.delivery, allowPrivateDestinations: true },
    });
    const audience = await lenient.resource.create(t.ws.workspace_id, {
      name: 'allowed', criteria_json: signedUp, destinations: [{ type: 'webhook', url: `http://localhost:${port}/hook`, secret: 'shh' }],
    });
    await lenient.refresher.refresh(t.ws.workspace_id, audience.id, AT);
    await lenient.deliverer.deliver(t.ws.workspace_id, audience.id);
    await lenient.deliverer.stop();
    expect(connections).toBeGreaterThan(0);
    expect((await get(`/v1/audiences/${audience.id}/deliveries`)).json().data).toMatchObject([{ status: 'delivered' }]);
  });
});
