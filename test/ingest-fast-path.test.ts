// The hand-compiled checks of ingest bodies against their zod schemas: whatever they accept, zod
// accepts with the same value; the bodies clients send every day take them.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fastEvent, fastEvents, fastPageview, fastPageviews } from '../src/ingest/fast-path.js';
import { eventBody, eventsBody, pageviewBody, pageviewsBody } from '../src/ingest/schemas.js';
import { tierRuns } from './support/tier.js';

const text = (max: number) => fc.oneof(fc.string({ maxLength: max }), fc.constantFrom('', ' ', ' A@B.com ', 'x'.repeat(max + 1), 'u\ud800'));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
/** As JSON.parse would give it: a key absent rather than holding undefined. */
const asParsed = <T extends object>(record: T): T => Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as T;
const odd = fc.constantFrom<unknown>(null, 0, -0, 1.5, 2 ** 60, true, [], {}, 'x');
const payload = fc.oneof(
  // Through JSON, as a body gives it (plain prototypes).
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 3 })).map((d) => JSON.parse(JSON.stringify(d)) as unknown),
  fc.constant({ a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { k: 1 } } } } } } } } } } }),
  fc.constant(Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, i]))),
  fc.constant({ big: 'x'.repeat(40_000) }),
  odd,
);
const identifier = fc.oneof(text(256), fc.integer(), odd);

const eventArb = fc.record({
  event_name: fc.oneof(text(200), odd),
  external_id: maybe(identifier),
  user_id: maybe(identifier),
  email: maybe(fc.oneof(text(256), odd)),
  visitor_id: maybe(fc.oneof(text(256), odd)),
  tr_visitor_id: maybe(fc.oneof(text(256), odd)),
  traits: maybe(payload),
  properties: maybe(payload),
  timestamp: maybe(fc.oneof(fc.constantFrom('2026-06-15T12:00:00Z', '2026-06-15T12:00:00+02:00', '2026-06-15T12:00:00', '2026-06-15', 'soon'), odd)),
  message_id: maybe(fc.oneof(text(256), odd)),
  extra: maybe(fc.jsonValue({ maxDepth: 1 })),
}, { requiredKeys: [] }).map(asParsed);

const pageviewArb = fc.record({
  visitor_id: fc.oneof(text(256), odd),
  url: fc.oneof(fc.constantFrom('https://example.com/p?utm_source=x', '/pricing', 'mailto:a@b.c', 'example.com', 'http://', ''), text(20), odd),
  referrer: maybe(fc.oneof(fc.constantFrom('https://www.google.com/', null), text(20), odd)),
  title: maybe(fc.oneof(text(1024), fc.constant(null), odd)),
  timestamp: maybe(fc.oneof(fc.constant('2026-06-15T12:00:00Z'), odd)),
}, { requiredKeys: [] }).map(asParsed);

/** What zod gives `v`, or null when it refuses it. */
const zodValue = (schema: { safeParse(v: unknown): { success: boolean; data?: unknown } }, v: unknown) => {
  const r = schema.safeParse(v);
  return r.success ? r.data : null;
};

describe('the compiled checks of ingest bodies', () => {
  it('accept only events that zod accepts, with the value zod gives', () => {
    fc.assert(fc.property(eventArb, (event) => {
      const fast = fastEvent(event);
      if (fast !== null) expect(fast).toStrictEqual(zodValue(eventBody, event));
    }), { numRuns: tierRuns(3000) });
  });

  it('accept only page views that zod accepts, with the value zod gives', () => {
    fc.assert(fc.property(pageviewArb, (pageview) => {
      const fast = fastPageview(pageview);
      if (fast !== null) expect(fast).toStrictEqual(zodValue(pageviewBody, pageview));
    }), { numRuns: tierRuns(3000) });
  });

  it('read single and batch bodies as zod\'s unions do', () => {
    const bodies = fc.oneof(
      eventArb,
      fc.record({ batch: fc.array(eventArb, { maxLength: 4 }) }),
      fc.record({ batch: fc.array(eventArb, { maxLength: 2 }), event_name: fc.constant('both'), external_id: fc.constant('u') }),
      fc.record({ batch: odd }),
    );
    fc.assert(fc.property(bodies, (body) => {
      const fast = fastEvents(body);
      if (fast !== null) expect(fast).toStrictEqual(zodValue(eventsBody, body));
    }), { numRuns: tierRuns(2000) });
    const pageviewBodies = fc.oneof(pageviewArb, fc.record({ batch: fc.array(pageviewArb, { maxLength: 4 }) }));
    fc.assert(fc.property(pageviewBodies, (body) => {
      const fast = fastPageviews(body);
      if (fast !== null) expect(fast).toStrictEqual(zodValue(pageviewsBody, body));
    }), { numRuns: tierRuns(2000) });
  });

  it('take the bodies clients send every day', () => {
    const event = {
      event_name: 'purchase', user_id: 42, email: ' Ann@Example.com ', visitor_id: 'v1', traits: { plan: 'pro' },
      properties: { item: { price: 5 } }, timestamp: '2026-06-15T12:00:00Z', message_id: 'm1', context: { ip: '1.2.3.4' },
    };
    expect(fastEvents({ batch: [event, { event_name: 'view', visitor_id: 'v2' }] })).toStrictEqual(zodValue(eventsBody, { batch: [event, { event_name: 'view', visitor_id: 'v2' }] }));
    expect(fastEvent(event)).toMatchObject({ user_id: '42', email: 'ann@example.com' });
    const pageview = { visitor_id: 'v1', url: 'https://example.com/?utm_medium=email', referrer: null, title: 'Home' };
    expect(fastPageviews({ batch: [pageview] })).toStrictEqual(zodValue(pageviewsBody, { batch: [pageview] }));
  });

  it('leave every invalid body to zod, which words the errors', () => {
    expect(fastEvents({ batch: [{ event_name: 'ok', external_id: 'u' }, { event_name: '' }] })).toBeNull();
    expect(fastEvents({ event_name: 'x', external_id: 'a', user_id: 'b' })).toBeNull();
    expect(fastEvents({ batch: [] })).toBeNull();
    expect(fastPageviews({ visitor_id: 'v', url: 'ftp://x' })).toBeNull();
  });
});
