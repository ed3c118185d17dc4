// Ingest limits (src/ingest/limits.ts, README "Limits"): nesting, size and property paths of
// events and traits, refused with 400 naming the field before anything is stored.

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { INGEST_LIMITS } from '../src/ingest/limits.js';
import { startTestApp, type TestApp } from './support/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ at: new Date('2026-06-15T12:00:00Z') });
});
beforeEach(() => t.freshWorkspace());
afterAll(() => t.close());

const count = async (table: string) => Number((await t.store.query(`SELECT count(*) AS n FROM ${table} WHERE workspace_id = $1`, [t.ws.workspace_id]))[0]!.n);
const catalog = async () => (await t.store.query('SELECT path FROM event_properties WHERE workspace_id = $1 ORDER BY path', [t.ws.workspace_id]))
  .map((row) => row.path as string);

/** JSON text of `levels` nested arrays (`[[1]]` is 2) or objects (`{"a":{"a":1}}` is 2), written without recursion. */
const nestedText = (levels: number, kind: 'array' | 'object') =>
  (kind === 'array' ? `${'['.repeat(levels)}1${']'.repeat(levels)}` : `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`);
/** A value nested `levels` deep, built without recursion. */
const nested = (levels: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
};

const refusal = (res: { statusCode: number; json(): unknown }) => {
  expect(res.statusCode).toBe(400);
  const body = res.json() as { error: string; errors: { field: string; message: string; index?: number }[] };
  expect(body.error).toBe('invalid_request');
  return body.errors;
};

describe('nesting of properties and traits', () => {
  it('takes 10 levels and refuses the 11th, naming the first value too deep', async () => {
    const ok = await t.post('/v1/events', { event_name: 'deep', external_id: 'u', properties: nested(10), traits: nested(10) as object });
    expect(ok.statusCode, ok.body).toBe(200);

    const res = await t.post('/v1/events', { batch: [
      { event_name: 'fine', external_id: 'u' },
      { event_name: 'deep', external_id: 'u', properties: { list: [[[[[[[[[[1]]]]]]]]]] } },
      { event_name: 'deep', external_id: 'u', traits: nested(11) as object },
    ] });
    expect(refusal(res)).toEqual([
      { index: 1, field: '/batch/1/properties/list/0/0/0/0/0/0/0/0/0/0', message: 'is nested deeper than 10 levels of objects and arrays' },
      { index: 2, field: '/batch/2/traits/a/a/a/a/a/a/a/a/a/a/a', message: 'is nested deeper than 10 levels of objects and arrays' },
    ]);
    expect(await count('events')).toBe(1);
  });

  it('answers 400, never 500, at any depth that fits in the 1 MiB body', async () => {
    // 500,000 levels: far past what JSON.stringify or a recursive walk survive.
    for (const levels of [4_150, 12_000, 500_000]) {
      for (const kind of ['array', 'object'] as const) {
        if (kind === 'object' && levels > 100_000) continue; // 5 bytes a level: would not fit in 1 MiB
        const events = await t.post('/v1/events', `{"batch":[{"event_name":"e","external_id":"u","properties":{"x":${nestedText(levels, kind)}}}]}`);
        expect(refusal(events)[0]).toMatchObject({ index: 0, field: expect.stringMatching(/^\/batch\/0\/properties\/x\//) });
        const person = await t.post('/v1/persons', `{"external_id":"u","traits":{"x":${nestedText(levels, kind)}}}`);
        expect(refusal(person)[0]).toMatchObject({ field: expect.stringMatching(/^\/traits\/x\//) });
      }
    }
    expect(await count('events')).toBe(0);
    expect(await count('persons')).toBe(0);
  });

  it('refuses the 25 KB event with a 4,119-deep object and leaves the property catalog as it was', async () => {
    const body = `{"event_name":"probe","external_id":"u","properties":{"p":${nestedText(4_119, 'object')}}}`;
    expect(body.length).toBeGreaterThan(20_000);
    expect(refusal(await t.post('/v1/events', body))[0]!.field).toMatch(/^\/properties\/p(\/a){10}$/);
    expect(await catalog()).toEqual([]);
  });
});

describe('size of an event and of traits', () => {
  /** An event whose JSON is exactly `bytes` long (the properties pad it). */
  const eventOf = (bytes: number) => {
    const event = { event_name: 'big', external_id: 'u', properties: { pad: '' } };
    event.properties.pad = 'x'.repeat(bytes - JSON.stringify(event).length);
    return event;
  };

  it('stores an event of exactly 32 KB as JSON and refuses one byte more, naming the event', async () => {
    expect(JSON.stringify(eventOf(INGEST_LIMITS.eventBytes))).toHaveLength(32_768);
    expect((await t.post('/v1/events', { batch: [eventOf(INGEST_LIMITS.eventBytes)] })).statusCode).toBe(200);
    const errors = refusal(await t.post('/v1/events', { batch: [{ event_name: 'small', external_id: 'u' }, eventOf(INGEST_LIMITS.eventBytes + 1)] }));
    expect(errors).toEqual([{ index: 1, field: '/batch/1', message: 'is 32769 bytes as JSON; at most 32768' }]);
    expect(refusal(await t.post('/v1/events', eventOf(40_000)))).toEqual([{ field: '', message: 'is 40000 bytes as JSON; at most 32768' }]);
    expect(await count('events')).toBe(1);
  });

  it('counts bytes of UTF-8, not characters', async () => {
    const event = { event_name: 'big', external_id: 'u', properties: { pad: 'é'.repeat(16_380) } };
    expect(JSON.stringify(event).length).toBeLessThan(INGEST_LIMITS.eventBytes);
    const bytes = Buffer.byteLength(JSON.stringify(event));
    expect(refusal(await t.post('/v1/events', event))).toEqual([{ field: '', message: `is ${bytes} bytes as JSON; at most 32768` }]);
  });

  it('refuses traits over 32 KB on a person update or an event, naming /traits', async () => {
    const traits = { notes: 'n'.repeat(INGEST_LIMITS.traitsBytes) };
    expect(refusal(await t.post('/v1/persons', { external_id: 'u', traits }))).toEqual([{ field: '/traits', message: `are ${32_768 + 12} bytes as JSON; at most 32768` }]);
    expect(refusal(await t.post('/v1/events', { batch: [{ event_name: 'e', external_id: 'u', traits }] }))[0]).toMatchObject({ index: 0, field: '/batch/0/traits' });
    expect((await t.post('/v1/persons', { external_id: 'u', traits: { notes: 'n'.repeat(INGEST_LIMITS.traitsBytes - 12) } })).statusCode).toBe(200);
  });
});

describe('property paths an event brings to the property definitions', () => {
  const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));

  it('catalogs all 256 paths of an event at the limit, and refuses one with 257 whole', async () => {
    // 128 top-level keys each holding one more: 256 paths (a nested object's own key counts).
    const atLimit = Object.fromEntries(Array.from({ length: 128 }, (_, i) => [`k${i}`, { v: i }]));
    expect((await t.post('/v1/events', { event_name: 'wide', external_id: 'u', properties: atLimit })).statusCode).toBe(200);
    expect(await catalog()).toHaveLength(256);

    const errors = refusal(await t.post('/v1/events', { batch: [{ event_name: 'wider', external_id: 'u', properties: wide(257) }] }));
    expect(errors).toEqual([{ index: 0, field: '/batch/0/properties', message: 'hold more than 256 property paths (a, a.b, …; an array is one)' }]);
    expect((await catalog()).filter((path) => path.startsWith('k') && !path.includes('.'))).toHaveLength(128);
  });

  it('counts an array as one path, whatever it holds', async () => {
    const res = await t.post('/v1/events', { event_name: 'list', external_id: 'u', properties: { items: Array.from({ length: 1000 }, (_, i) => ({ [`k${i}`]: i })) } });
    expect(res.statusCode, res.body).toBe(200);
    expect(await catalog()).toEqual(['items']);
  });

  it('refuses a property path over 256 characters, naming its key', async () => {
    const ok = await t.post('/v1/events', { event_name: 'long', external_id: 'u', properties: { ['a'.repeat(127)]: { ['b'.repeat(128)]: 1 } } });
    expect(ok.statusCode, ok.body).toBe(200);
    const res = await t.post('/v1/events', { event_name: 'long', external_id: 'u', properties: { ['a'.repeat(127)]: { ['b'.repeat(129)]: 1 } } });
    expect(refusal(res)).toEqual([{ field: `/properties/${'a'.repeat(127)}/${'b'.repeat(129)}`, message: 'is a property path of 257 characters (a.b.c); at most 256' }]);
    expect(await catalog()).toEqual(['a'.repeat(127), `${'a'.repeat(127)}.${'b'.repeat(128)}`]);
  });
});
