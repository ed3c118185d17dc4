// Segment's HTTP Tracking API as decisions §13 settles it: the write key (HTTP Basic user name or
// `writeKey` in the body; a publishable key on page calls only), 200 { success: true }, Segment's
// limits and errors, clock-skew correction, messageId dedupe, gzip bodies, backpressure.

import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { resolved, workspaceState } from './support/segment.js';
import { controlRows } from './support/stored.js';

let t: TestApp;

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

function send(path: string, body: unknown, headers: Record<string, string> = { authorization: basic(t.ws.secret_key) }) {
  return t.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json', ...headers }, payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body) });
}

const track = (extra: Record<string, unknown> = {}) => ({ type: 'track', event: 'Signed Up', userId: 'u-1', ...extra });

describe.each(ENGINES)('%s', (engine) => {
  beforeAll(async () => {
    t = await startTestApp({ engine, ingestLog: { maxBacklogEvents: 600 } });
  });
  beforeEach(() => t.freshWorkspace());
  afterAll(() => t.close());

  it('answers 200 { success: true } to each call, the key as Basic user name or writeKey in the body', async () => {
    for (const path of ['/v1/track', '/v1/identify', '/v1/page', '/v1/screen', '/v1/group', '/v1/alias', '/v1/batch']) {
      const body = { track: track(), identify: { userId: 'u-1', traits: { plan: 'pro' } }, page: { anonymousId: 'a-1', properties: { url: 'https://x.example/' } },
        screen: { userId: 'u-1', name: 'Home' }, group: { userId: 'u-1', groupId: 'g-1' }, alias: { previousId: 'a-1', userId: 'u-1' }, batch: { batch: [track()] } }[path.slice(4)];
      const res = await send(path, body);
      expect(res.statusCode, `${path}: ${res.body}`).toBe(200);
      expect(res.json()).toEqual({ success: true });
    }
    const inBody = await send('/v1/track', { ...track(), writeKey: t.ws.secret_key }, {});
    expect(inBody.statusCode, inBody.body).toBe(200);
    await resolved(t);
    const state = await workspaceState(t, t.ws.workspace_id);
    expect(state.events.map((e) => e.event_name).sort()).toEqual(['Signed Up', 'Signed Up', 'Signed Up', 'group', 'screen']);
    expect(state.persons).toEqual([{ external_id: 'u-1', email: null, name: null, traits: { plan: 'pro' } }]);
    expect(state.visitors).toEqual([{ visitor_id: 'a-1', person: 'u-1' }]);
  });

  it('refuses a missing or unknown key (401) and a publishable key on anything but page calls (403)', async () => {
    expect((await send('/v1/track', track(), {})).statusCode).toBe(401);
    expect((await send('/v1/track', track(), { authorization: basic('sk_nope') })).json()).toMatchObject({ error: 'unauthorized' });
    const pk = { authorization: basic(t.ws.publishable_key) };
    expect((await send('/v1/track', track(), pk)).json()).toMatchObject({ error: 'forbidden' });
    expect((await send('/v1/batch', { batch: [{ type: 'page', anonymousId: 'a', properties: { url: '/x' } }, track()] }, pk)).statusCode).toBe(403);
    expect((await send('/v1/page', { anonymousId: 'a', properties: { url: '/pricing' } }, pk)).statusCode).toBe(200);
  });

  it('answers 400 naming each bad field, and stores nothing of that batch', async () => {
    const res = await send('/v1/batch', { batch: [track(), { type: 'track', userId: 'u-1' }, { type: 'wat' }, { type: 'identify' }, track({ timestamp: 'yesterday' })] });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.map((e: { field: string }) => e.field)).toEqual(['/batch/2/type']);
    const fields = await send('/v1/batch', { batch: [track(), { type: 'track', userId: 'u-1' }, { type: 'identify' }, track({ timestamp: 'yesterday' }), track({ event: 'x'.repeat(201) })] });
    expect(fields.json().errors.map((e: { field: string }) => e.field)).toEqual(['/batch/1/event', '/batch/2/userId', '/batch/3/timestamp', '/batch/4/event']);
    expect((await send('/v1/track', 'not json')).json()).toMatchObject({ error: 'invalid_json' });
    await resolved(t);
    expect((await workspaceState(t, t.ws.workspace_id)).events).toEqual([]);
  });

  it('applies Segment\'s limits: 32 KB a call, 500 KB a batch (400, which the clients do not retry)', async () => {
    const big = track({ properties: { blob: 'x'.repeat(33 * 1024) } });
    expect((await send('/v1/track', big)).json().message).toMatch(/32 KB/);
    expect((await send('/v1/batch', { batch: [big] })).json().errors[0]).toMatchObject({ field: '/batch/0' });
    const batch = { batch: Array.from({ length: 20 }, () => track({ properties: { blob: 'y'.repeat(30 * 1024) } })) };
    expect((await send('/v1/batch', batch)).json().message).toMatch(/500 KB/);
    expect((await send('/v1/batch', gzipSync(JSON.stringify(batch)), { authorization: basic(t.ws.secret_key), 'content-encoding': 'gzip' })).json().message).toMatch(/500 KB/);
  });

  it('reads gzip bodies and any Content-Type (the browser library sends text/plain)', async () => {
    const gz = await send('/v1/batch', gzipSync(JSON.stringify({ batch: [track({ messageId: 'm-gz' })] })), { authorization: basic(t.ws.secret_key), 'content-encoding': 'gzip', 'content-type': 'application/x-www-form-urlencoded' });
    expect(gz.statusCode, gz.body).toBe(200);
    const text = await send('/v1/t', { ...track({ messageId: 'm-text' }), writeKey: t.ws.secret_key }, { 'content-type': 'text/plain' });
    expect(text.statusCode, text.body).toBe(200);
    await resolved(t);
    expect((await workspaceState(t, t.ws.workspace_id)).events).toHaveLength(2);
  });

  it('corrects the client\'s clock skew (timestamp − sentAt + receive time) and stores a repeated messageId once', async () => {
    const sentAt = new Date(Date.now() + 3_600_000); // the client's clock runs an hour fast
    const timestamp = new Date(sentAt.getTime() - 60_000);
    const body = { batch: [track({ messageId: 'm-1', timestamp: timestamp.toISOString() })], sentAt: sentAt.toISOString() };
    const before = Date.now();
    expect((await send('/v1/batch', body)).statusCode).toBe(200);
    expect((await send('/v1/batch', body)).statusCode).toBe(200);
    await resolved(t);
    const { events } = await workspaceState(t, t.ws.workspace_id);
    expect(events).toHaveLength(1);
    const ts = (events[0]!.ts as Date).getTime();
    expect(ts).toBeGreaterThanOrEqual(before - 60_000);
    expect(ts).toBeLessThan(before);
  });

  it('alias links an anonymous visitor, merges a visitor\'s person without a user id, and sets aside a merge of two user ids (never forced)', async () => {
    const setAside = t.app.segment.status().set_aside;
    expect((await send('/v1/batch', { batch: [
      { type: 'identify', userId: 'u-old' }, { type: 'identify', anonymousId: 'a-7', traits: { email: 'seven@example.com' } },
      { type: 'alias', previousId: 'a-9', userId: 'u-new' }, { type: 'alias', previousId: 'a-7', userId: 'u-new' },
      { type: 'alias', previousId: 'u-old', userId: 'u-new' },
    ] })).statusCode).toBe(200);
    await resolved(t);
    const state = await workspaceState(t, t.ws.workspace_id);
    expect(state.visitors).toEqual([{ visitor_id: 'a-7', person: 'u-new' }, { visitor_id: 'a-9', person: 'u-new' }]);
    expect(state.persons.map((p) => p.external_id).sort()).toEqual(['u-new', 'u-old']);
    const merges = await controlRows(t, 'SELECT count(*) AS n FROM person_merges WHERE workspace_id = $1', [t.ws.workspace_id]);
    expect(Number(merges[0]!.n)).toBe(1);
    expect(t.app.segment.status().set_aside).toBe(setAside + 1);
  });

  it('answers 503 with Retry-After once the backlog passes its bound, and reports the backlog', async () => {
    await t.app.segment.resolver.stop();
    try {
      const batch = { batch: Array.from({ length: 500 }, (_, i) => track({ messageId: `b-${i}` })) };
      expect((await send('/v1/batch', batch)).statusCode).toBe(200);
      const refused = await send('/v1/batch', batch);
      expect(refused.statusCode).toBe(503);
      expect(refused.headers['retry-after']).toBe('5');
      expect(refused.json()).toMatchObject({ error: 'ingest_backlog' });
      const status = await t.app.inject({ method: 'GET', url: '/v1/ingest/status', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
      expect(status.json()).toMatchObject({ backlog_events: 500, workspace_backlog_events: 500, max_backlog_events: 600 });
      expect((await t.app.inject({ method: 'GET', url: '/health' })).json().ingest).toMatchObject({ backlog_events: 500 });
    } finally {
      t.app.segment.resolver.start();
    }
    await resolved(t);
    expect((await workspaceState(t, t.ws.workspace_id)).events).toHaveLength(500);
  });
});

