// The server SDK's own parts (sdk/node): the messages it builds (Segment's Tracking API spec), how
// it cuts them into request bodies under the service's limits, its retry rule, and stripeMetadata
// read from each kind of request it takes: a real Node IncomingMessage, a Fetch Request, a string.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { batchLength, body, queued } from '../sdk/node/src/batch.js';
import { aliasMessage, identifyMessage, pageMessage, trackMessage } from '../sdk/node/src/message.js';
import { backoffMs, DEFAULT_RETRY, retryable, retryAfterMs } from '../sdk/node/src/retry.js';
import { Analytics, type DeliveryError, LIBRARY, MAX_BATCH_BYTES, MAX_MESSAGE_BYTES, readCookie, stripeMetadata } from '../sdk/node/src/index.js';
import { freePort } from './support/ports.js';
import { FULL_TIER } from './support/tier.js';

const SDK = join(import.meta.dirname, '..', 'sdk', 'node');

describe('the messages (Segment Tracking API spec: common fields, identify, track, page, alias)', () => {
  it('carries type, a fresh messageId, an ISO timestamp and context.library on every message', () => {
    const a = trackMessage({ userId: 'u1', event: 'signup', properties: { plan: 'pro' }, context: { ip: '203.0.113.9' } });
    const b = trackMessage({ userId: 'u1', event: 'signup' });
    expect(a).toMatchObject({ type: 'track', userId: 'u1', event: 'signup', properties: { plan: 'pro' }, context: { ip: '203.0.113.9', library: LIBRARY } });
    expect(a.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.messageId).not.toBe(a.messageId);
    expect(new Date(a.timestamp).toISOString()).toBe(a.timestamp);
    expect(Object.keys(b)).not.toContain('anonymousId'); // absent fields are left out, not null
  });

  it('keeps a given messageId and timestamp, and sends an integer user id as its decimal string', () => {
    const m = identifyMessage({ userId: 42, anonymousId: 'v1', traits: { email: 'a@example.com' }, messageId: 'm-1', timestamp: '2026-11-01T10:00:00+01:00' });
    expect(m).toMatchObject({ type: 'identify', userId: '42', anonymousId: 'v1', messageId: 'm-1', timestamp: '2026-11-01T09:00:00.000Z', traits: { email: 'a@example.com' } });
  });

  it('builds page and alias messages with their own fields', () => {
    expect(pageMessage({ anonymousId: 'v1', name: 'Pricing', properties: { url: 'https://shop.example/pricing' } }))
      .toMatchObject({ type: 'page', anonymousId: 'v1', name: 'Pricing', properties: { url: 'https://shop.example/pricing' } });
    expect(aliasMessage({ previousId: 'v1', userId: 'u1' })).toMatchObject({ type: 'alias', previousId: 'v1', userId: 'u1' });
  });

  it('throws on a call the service would refuse, naming the field, so that it does not sink its batch', () => {
    expect(() => trackMessage({ event: 'x' } as never)).toThrow('userId or anonymousId');
    expect(() => trackMessage({ userId: 'u', event: '' })).toThrow('event');
    expect(() => identifyMessage({ userId: 'x'.repeat(257) })).toThrow('userId');
    expect(() => identifyMessage({ userId: 'u', traits: [] as never })).toThrow('traits');
    expect(() => trackMessage({ userId: 'u', event: 'e', timestamp: 'yesterday' })).toThrow('timestamp');
    expect(() => aliasMessage({ userId: 'u' } as never)).toThrow('previousId');
    expect(() => pageMessage({ anonymousId: 'v1', name: 'Home' })).toThrow('properties.url');
    expect(() => pageMessage({ anonymousId: 'v1', properties: { url: '/pricing' } })).toThrow('absolute URL');
    expect(pageMessage({ anonymousId: 'v1', context: { page: { url: 'https://shop.example/' } } }).type).toBe('page');
  });

  it('names the library with the version of its package.json', () => {
    const pkg = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8')) as { name: string; version: string; dependencies?: object };
    expect(LIBRARY).toEqual({ name: pkg.name, version: pkg.version });
    expect(pkg.dependencies).toBeUndefined();
  });
});

describe.skipIf(!FULL_TIER)('the package', () => {
  it('builds on its own with its tsconfig (declarations too) into ES modules that run', async () => {
    const out = mkdtempSync(join(tmpdir(), 'sdk-node-'));
    try {
      await promisify(execFile)(process.execPath, [join(SDK, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc'), '-p', SDK, '--outDir', out]);
      const built = await import(pathToFileURL(join(out, 'index.js')).href) as typeof import('../sdk/node/src/index.js');
      expect(built.stripeMetadata('tr_v=v1', 7)).toEqual({ tr_visitor_id: 'v1', tr_user_id: '7' });
      expect(readFileSync(join(out, 'index.d.ts'), 'utf8')).toContain('stripeMetadata');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('request bodies under the limits', () => {
  const sized = (n: number, bytes: number) => Array.from({ length: n }, (_, i) => queued(trackMessage({
    userId: `u${i}`, event: 'e', messageId: `m${i}`, timestamp: '2026-11-01T00:00:00Z', properties: { pad: '' },
  }))).map((q) => queued({ ...q.message, properties: { pad: 'x'.repeat(bytes - q.bytes) } }));

  it('fills a body up to 500 KB and never past it, whatever the sizes', () => {
    const queue = sized(40, 30_000);
    const n = batchLength(queue, 500);
    const first = body(queue.slice(0, n), new Date());
    const oneMore = body(queue.slice(0, n + 1), new Date());
    expect(Buffer.byteLength(first)).toBeLessThanOrEqual(MAX_BATCH_BYTES);
    expect(Buffer.byteLength(oneMore)).toBeGreaterThan(MAX_BATCH_BYTES);
    expect(queue.every((q) => q.bytes === 30_000)).toBe(true);
  });

  it('stops at the message count, and always takes at least one message', () => {
    expect(batchLength(sized(10, 200), 3)).toBe(3);
    expect(batchLength(sized(2, 200), 100)).toBe(2);
    expect(batchLength([], 100)).toBe(0);
    expect(MAX_MESSAGE_BYTES).toBeLessThan(MAX_BATCH_BYTES);
  });

  it('makes a body the service parses back to the messages, with this attempt\'s sentAt', () => {
    const queue = sized(3, 300);
    const sentAt = new Date('2026-11-28T00:00:00Z');
    expect(JSON.parse(body(queue, sentAt))).toEqual({ batch: queue.map((q) => q.message), sentAt: sentAt.toISOString() });
  });
});

describe('the retry rule', () => {
  it('retries 408, 429 and 5xx, never another 4xx', () => {
    expect([408, 429, 500, 502, 503, 504].every(retryable)).toBe(true);
    expect([400, 401, 403, 404, 413, 422].some(retryable)).toBe(false);
  });

  it('reads Retry-After as seconds or an HTTP date, capped, and nothing from an unreadable one', () => {
    const now = Date.parse('2026-11-28T00:00:00Z');
    expect(retryAfterMs('3', now, 60_000)).toBe(3_000);
    expect(retryAfterMs('Sat, 28 Nov 2026 00:00:07 GMT', now, 60_000)).toBe(7_000);
    expect(retryAfterMs('Fri, 27 Nov 2026 00:00:00 GMT', now, 60_000)).toBe(0);
    expect(retryAfterMs('3600', now, 60_000)).toBe(60_000);
    expect(retryAfterMs('soon', now, 60_000)).toBeUndefined();
    expect(retryAfterMs(null, now, 60_000)).toBeUndefined();
  });

  it('waits up to a doubling ceiling, capped, jittered below it', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, DEFAULT_RETRY, () => 1))).toEqual([200, 400, 800, 1600]);
    expect(backoffMs(20, DEFAULT_RETRY, () => 1)).toBe(DEFAULT_RETRY.maxDelayMs);
    expect(backoffMs(3, DEFAULT_RETRY, () => 0.25)).toBe(200);
  });
});

describe('when nothing answers (a closed loopback port)', () => {
  async function client(retry: { maxRetries: number }) {
    const failures: DeliveryError[] = [];
    const retries: number[] = [];
    const analytics = new Analytics({
      writeKey: 'sk_test', host: `http://127.0.0.1:${await freePort()}`, flushOnExit: false,
      retry: { ...retry, minDelayMs: 20, maxDelayMs: 100 }, onError: (e) => failures.push(e), onRetry: (n) => retries.push(n.retry),
    });
    return { analytics, failures, retries };
  }

  it('retries a network error maxRetries times, then reports the batch, and flush resolves', async () => {
    const { analytics, failures, retries } = await client({ maxRetries: 3 });
    analytics.track({ userId: 'u1', event: 'a', messageId: 'm1' });
    analytics.track({ userId: 'u1', event: 'b', messageId: 'm2' });
    await analytics.flush();
    expect(retries).toEqual([1, 2, 3]);
    expect(failures.map((f) => [f.reason, f.messages.map((m) => m.messageId)])).toEqual([['retries_exhausted', ['m1', 'm2']]]);
    await analytics.close();
  });

  it('close with a deadline abandons what is undelivered, reports it, and refuses later calls', async () => {
    const { analytics, failures } = await client({ maxRetries: 1_000 });
    analytics.identify({ userId: 'u1', messageId: 'm1' });
    await analytics.close({ timeoutMs: 200 });
    analytics.track({ userId: 'u1', event: 'late', messageId: 'm2' });
    expect(failures.map((f) => [f.reason, f.messages.map((m) => m.messageId)])).toEqual([['abandoned', ['m1']], ['closed', ['m2']]]);
  });

  it('reports a message above 32 KB as too_large without sending it', async () => {
    const { analytics, failures } = await client({ maxRetries: 0 });
    analytics.track({ userId: 'u1', event: 'big', properties: { pad: 'x'.repeat(MAX_MESSAGE_BYTES) } });
    expect(failures.map((f) => f.reason)).toEqual(['too_large']);
    await analytics.close();
    expect(failures).toHaveLength(1); // nothing was queued, so nothing else failed
  });
});

describe('stripeMetadata', () => {
  const COOKIES = 'theme=dark; tr_v=3f9c2a0e-1b7d-4c1e-9a55-0c2b8e6d4f11; session=abc%3D';

  /** stripeMetadata as a Node server calls it, on the IncomingMessage of a real request. */
  async function fromNodeRequest(cookie: string | undefined, userId?: string | number) {
    let seen: ReturnType<typeof stripeMetadata> | undefined;
    const server = createServer((req: IncomingMessage, res) => {
      seen = stripeMetadata(req, userId);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/checkout`, { method: 'POST', headers: cookie ? { cookie } : {} });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    return seen;
  }

  it('reads the raw tr_v cookie from a Node IncomingMessage, a Fetch Request and a Cookie header', async () => {
    const want = { tr_visitor_id: '3f9c2a0e-1b7d-4c1e-9a55-0c2b8e6d4f11', tr_user_id: 'u_42' };
    expect(await fromNodeRequest(COOKIES, 'u_42')).toEqual(want);
    expect(stripeMetadata(new Request('http://127.0.0.1/checkout', { headers: { cookie: COOKIES } }), 'u_42')).toEqual(want);
    expect(stripeMetadata(COOKIES, 'u_42')).toEqual(want);
  });

  it('leaves out what is absent: no cookie, no tr_v, an empty tr_v, no user id', async () => {
    expect(await fromNodeRequest(undefined)).toEqual({});
    expect(stripeMetadata(new Request('http://127.0.0.1/'), 'u1')).toEqual({ tr_user_id: 'u1' });
    expect(stripeMetadata('a=1; tr_vx=2; xtr_v=3')).toEqual({});
    expect(stripeMetadata('tr_v=; a=1', '')).toEqual({});
    expect(stripeMetadata(undefined, null)).toEqual({});
  });

  it('decodes nothing: the value is the bytes the browser sent', () => {
    expect(stripeMetadata('tr_v=a%2Fb"c=d')).toEqual({ tr_visitor_id: 'a%2Fb"c=d' });
    expect(readCookie(' tr_v = v1 ;tr_v=v2', 'tr_v')).toBe('v1'); // the first, as the tracker reads it
  });

  it('sends an integer user id as its decimal string, refuses one that is no identifier, drops a cookie that is none', () => {
    expect(stripeMetadata('', 1234)).toEqual({ tr_user_id: '1234' });
    expect(() => stripeMetadata('', 'u'.repeat(257))).toThrow(RangeError);
    expect(() => stripeMetadata('', 1.5)).toThrow(RangeError);
    expect(stripeMetadata(`tr_v=${'v'.repeat(257)}`)).toEqual({});
  });

  it('is Stripe\'s metadata type, within its limits: 2 of 50 keys, keys under 40 and values under 500 characters', () => {
    const metadata = stripeMetadata(`tr_v=${'v'.repeat(256)}`, 'u'.repeat(256));
    const params: Stripe.Checkout.SessionCreateParams = { mode: 'payment', metadata: { order: 'o_1', ...metadata } };
    expect(Object.entries(params.metadata!)).toHaveLength(3);
    for (const [key, value] of Object.entries(metadata)) {
      expect(key.length).toBeLessThanOrEqual(40);
      expect(value.length).toBeLessThanOrEqual(500);
    }
  });
});
