// The acknowledging path's one-pass reading of Segment bodies (src/ingest/segment/scan.ts) against
// the full path it stands in for (JSON.parse, messagesOf, mapMessages with fastEvent and zod, the
// route's 32 KB check): whatever the scan accepts, the full path accepts with the same messages,
// the resolver reads from the bytes the operations the full path maps, and the bodies the real
// clients send take the scan.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { messagesOf, type SegmentKind, sentAtOf } from '../src/ingest/segment/body.js';
import { mapMessages } from '../src/ingest/segment/messages.js';
import type { LogOperation } from '../src/ingest/segment/operations.js';
import { correctedTimesInRange, type ScannedBody, scanSegmentBody } from '../src/ingest/segment/scan.js';
import { scannedEvents } from '../src/ingest/segment/scanned-events.js';
import { tierRuns } from './support/tier.js';

/** Fixed, so that the share of bodies the scan takes (asserted) is the same every run. */
const SEED = 37;
const RECEIVED = Date.parse('2026-06-15T12:00:05Z');

/** The full path's verdict on `bytes`: the messages' count, those without a messageId and the operations, or null when it refuses the body. */
function fullPath(bytes: Buffer, kind: SegmentKind): { count: number; withoutId: number[]; ops: LogOperation[] } | null {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    if (typeof body !== 'object' || body === null || Array.isArray(body) || 'writeKey' in body) return null;
    if (kind !== 'batch' && JSON.stringify(body).length > 32 * 1024) return null;
    const messages = messagesOf(kind, body);
    const withoutId: number[] = [];
    const { faults, ops } = mapMessages(kind, messages, RECEIVED, sentAtOf(body), (index) => {
      withoutId.push(index);
      return `drawn-${index}`;
    });
    return faults.length > 0 ? null : { count: messages.length, withoutId, ops };
  } catch {
    return null;
  }
}

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 8 });
/** Mostly `usual`, now and then one of `rare` (each message is then valid often enough to test the scan's acceptance). */
const mostly = <T>(usual: fc.Arbitrary<T>, ...rare: fc.Arbitrary<unknown>[]) => fc.oneof({ weight: 60, arbitrary: usual as fc.Arbitrary<unknown> }, ...rare.map((arbitrary) => ({ weight: 1, arbitrary })));
/** Strings JSON writes without an escape (the scan leaves escapes to the full path), one of them not ASCII. */
const unit = fc.constantFrom('a', 'B', '7', ' ', '-', '.', 'é');
const value = fc.jsonValue({ maxDepth: 3, stringUnit: unit });
/** Property names: ASCII but now and then (their length is counted in UTF-16 units, left to the full path). */
const name = fc.string({ unit: fc.constantFrom('a', 'B', '7', ' ', '-', '.', 'a', 'B', '7', ' ', '-', '.', 'é'), maxLength: 5 });
const odd = fc.constantFrom<unknown>(null, 0, 7, 1.5, 1e21, true, [], {}, '', ' ', 'x'.repeat(257), 'é', '\ud800');
const id = mostly(fc.stringMatching(/^[a-z0-9_-]{1,12}$/), fc.constantFrom('ü', 'x'.repeat(256), 'x'.repeat(257)), odd);
const time = mostly(fc.constantFrom('2026-06-15T12:00:00Z', '2026-06-15T12:00:00.123+02:00', '2026-06-15T12:59:58.123Z', '2026-01-31T23:00:00.000Z'),
  fc.constantFrom('2026-02-30T12:00:00.000Z', '2026-06-15T24:00:00.000Z', '2026-13-01T00:00:00.000Z', '0999-06-15T12:00:00.000Z', '2026-06-15T12:00:60Z', '2026-06-15', 'Mon, 15 Jun 2026 12:00:00 GMT', 'soon', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '+275760-09-13T00:00:00Z'), odd);
const payload = mostly(
  fc.dictionary(name, value, { maxKeys: 6 }),
  fc.constant({ a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { k: 1 } } } } } } } } } } }),
  fc.constant({ a: { b: { c: { d: { e: { f: { g: { h: { i: { j: {} } } } } } } } } } }),
  fc.constant({ list: [[[[[[[[[[1]]]]]]]]]] }),
  fc.constant({ list: [[[[[[[[[[]]]]]]]]]] }),
  fc.constant(Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`p${i}`, i]))),
  fc.constant(Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`p${i}`, i]))),
  fc.constant({ [`${'k'.repeat(200)}`]: { [`${'k'.repeat(55)}`]: 1 } }),
  fc.constant({ [`${'k'.repeat(200)}`]: { [`${'k'.repeat(56)}`]: 1 } }),
  fc.constant({ big: 'x'.repeat(32_400) }),
  fc.constant({ big: 'é'.repeat(16_200) }),
  fc.constant({ 'ключ': 1, n: 1e300, m: -0.5e-3 }),
  odd,
);
const message = fc.record({
  type: mostly(fc.constant('track'), fc.constantFrom('identify', 'page', 'Track'), odd),
  event: mostly(fc.constantFrom('Signed Up', 'x'.repeat(200)), fc.constantFrom('x'.repeat(201), 'Üb'), odd),
  userId: maybe(id),
  anonymousId: maybe(id),
  messageId: maybe(id),
  properties: maybe(payload),
  context: maybe(mostly(fc.constant({ library: { name: 'analytics-node', version: '2' } }), fc.constant({ traits: { email: 'a@b.c' } }), fc.constant({ traits: null }), odd)),
  timestamp: maybe(time),
  originalTimestamp: maybe(time),
  sentAt: maybe(time),
  integrations: maybe(value),
}, { requiredKeys: [] });

/** JSON text of `value`, sometimes indented, sometimes with a repeated key or a prototype key added. */
const text = (value: unknown, variant: number): string => {
  const json = JSON.stringify(value, null, variant % 3 === 1 ? 2 : undefined) ?? 'null';
  if (variant % 29 === 3) return json.replace(/^\{/, '{"userId":"twice",');
  if (variant % 31 === 5) return json.replace(/^\{/, '{"__proto__":{},');
  return json;
};

/**
 * Holds the scan of `kind` bodies drawn from `arb` to the full path (and `also` to what it says of
 * each accepted one), and asserts that it took a good part of the valid ones (else the property
 * says little).
 */
function holdsToFullPath<T>(arb: fc.Arbitrary<T>, kind: SegmentKind, also: (value: T, scanned: ScannedBody) => void = () => undefined): void {
  let accepted = 0;
  let valid = 0;
  fc.assert(fc.property(arb, fc.nat(100), (value, variant) => {
    const bytes = Buffer.from(text(value, variant));
    const scanned = scanSegmentBody(bytes, kind);
    const full = fullPath(bytes, kind);
    if (full) valid++;
    if (scanned === null || !correctedTimesInRange(scanned, RECEIVED)) return;
    accepted++;
    expect(full && { count: full.count, withoutId: full.withoutId }).toStrictEqual({ count: scanned.count, withoutId: scanned.withoutId });
    // The resolver's reading of the same bytes gives the full path's operations, key order included.
    const events = scannedEvents(bytes, kind, RECEIVED, (index) => `drawn-${index}`);
    expect(JSON.stringify(events)).toBe(JSON.stringify(full!.ops));
    expect(events).toStrictEqual(full!.ops);
    also(value, scanned);
  }), { numRuns: tierRuns(3000), seed: SEED });
  expect(accepted).toBeGreaterThan(valid / 4);
}

describe('the one-pass reading of Segment bodies', () => {
  it('accepts only batches the full path accepts, with the same messages and the same ones lacking a messageId', () => {
    const body = fc.record({ batch: mostly(fc.array(message, { maxLength: 3 }), odd), sentAt: maybe(time), writeKey: fc.option(fc.constant('sk_x'), { nil: undefined, freq: 10 }), context: maybe(value) }, { requiredKeys: ['batch'] });
    holdsToFullPath(body, 'batch');
  });

  it('accepts only single track calls the full path accepts, and reads their times as Date.parse does', () => {
    holdsToFullPath(message, 'track', (value, scanned) => {
      expect(scanned.count).toBe(1);
      const at = [value.timestamp, value.originalTimestamp].find((v) => v !== undefined && v !== null);
      expect(scanned.at[0]).toBe(typeof at === 'string' ? Date.parse(at) : NaN);
    });
  });

  it('takes what analytics-node and RudderStack send, and leaves other calls, escapes and broken JSON to the full path', () => {
    const track = (i: number) => ({
      type: 'track', event: 'Order Completed', userId: `u_${i}`, anonymousId: `a-${i}`, messageId: `node-next-${i}`,
      properties: { revenue: 12.5, items: [{ sku: 'b-1', qty: 2 }], nested: { ok: true, none: null } },
      context: { library: { name: 'analytics-node-next', version: '2.1.0' } }, timestamp: '2026-06-15T12:00:00.000Z',
      originalTimestamp: '2026-06-15T12:00:00.000Z', sentAt: '2026-06-15T12:00:01.000Z', integrations: {}, _metadata: { nodeVersion: '20' },
    });
    const batch = { batch: [track(1), track(2), { ...track(3), messageId: undefined }], sentAt: '2026-06-15T12:00:01.000Z' };
    const scanned = scanSegmentBody(Buffer.from(JSON.stringify(batch)), 'batch');
    expect(scanned?.count).toBe(3);
    expect(scanned?.withoutId).toStrictEqual([2]);
    expect(scanSegmentBody(Buffer.from(JSON.stringify(track(4))), 'track')?.count).toBe(1);
    for (const other of [{ ...track(5), type: 'identify' }, { ...track(6), event: 'caf\\u00e9' }]) {
      expect(scanSegmentBody(Buffer.from(JSON.stringify({ batch: [other] }).replace('\\\\', '\\')), 'batch')).toBeNull();
    }
    expect(scanSegmentBody(Buffer.from(`${JSON.stringify(batch)}x`), 'batch')).toBeNull();
    expect(scanSegmentBody(Buffer.from(JSON.stringify(batch).slice(0, -1)), 'batch')).toBeNull();
    expect(scanSegmentBody(Buffer.from(JSON.stringify(track(7))), 'identify')).toBeNull();
  });
});
