// Hand-compiled checks of the hot ingest bodies (events and page views), beside their zod schemas
// (schemas.ts), which stay the definition: a body these checks accept gets exactly the value zod
// would give it; anything they do not accept (every invalid body, and the rare valid shapes they
// leave out) goes to zod, which answers it or words its errors. zod cost far more CPU an event
// than these checks, much of it in garbage collection (bench/RESULTS.md, "Ingest over HTTP").

import { isPageUrl } from './channels.js';
import { eventSizeFault, payloadFault, traitsFault } from './limits.js';
import { consentFault } from './consent.js';
import { type EventInput, MAX_BATCH, type PageviewInput, timestamp } from './schemas.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A string of `min`..`max` UTF-16 units (zod's min and max count them). */
const within = (v: unknown, min: number, max: number): v is string => typeof v === 'string' && v.length >= min && v.length <= max;

/** Sentinel: the check gives up and zod decides. */
const NO = Symbol('no');

const identifier = (v: unknown): string | typeof NO | undefined => (v === undefined ? undefined : within(v, 1, 256) ? v : NO);
const userId = (v: unknown): string | typeof NO | undefined => {
  if (v === undefined) return undefined;
  if (within(v, 1, 256)) return v;
  return typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : NO;
};
const email = (v: unknown): string | typeof NO | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') return NO;
  const trimmed = v.trim();
  return trimmed.length >= 1 && trimmed.length <= 256 ? trimmed.toLowerCase() : NO;
};
const isTimestamp = (v: unknown): boolean => typeof v === 'string' && timestamp.safeParse(v).success;

/** The value of `eventBody` for `v`, or null when zod must decide. */
export function fastEvent(v: unknown): EventInput | null {
  if (!isObject(v)) return null;
  const { event_name, traits, properties, timestamp: at, message_id } = v;
  if (!within(event_name, 1, 200)) return null;
  const external_id = userId(v.external_id);
  const user_id = userId(v.user_id);
  const mail = email(v.email);
  const visitor_id = identifier(v.visitor_id);
  const tr_visitor_id = identifier(v.tr_visitor_id);
  const messageId = identifier(message_id);
  if (external_id === NO || user_id === NO || mail === NO || visitor_id === NO || tr_visitor_id === NO || messageId === NO) return null;
  if (external_id === undefined && user_id === undefined && mail === undefined && visitor_id === undefined && tr_visitor_id === undefined) return null;
  if (external_id !== undefined && user_id !== undefined && external_id !== user_id) return null;
  if (visitor_id !== undefined && tr_visitor_id !== undefined && visitor_id !== tr_visitor_id) return null;
  if (traits !== undefined && (!isObject(traits) || traitsFault(traits) !== null || consentFault(traits) !== null)) return null;
  if (properties !== undefined && (!isObject(properties) || payloadFault(properties, true) !== null)) return null;
  if (at !== undefined && !isTimestamp(at)) return null;
  // Keys in the schema's order, only those given: zod's output.
  const event: EventInput = { event_name };
  if (external_id !== undefined) event.external_id = external_id;
  if (user_id !== undefined) event.user_id = user_id;
  if (mail !== undefined) event.email = mail;
  if (visitor_id !== undefined) event.visitor_id = visitor_id;
  if (tr_visitor_id !== undefined) event.tr_visitor_id = tr_visitor_id;
  if (traits !== undefined) event.traits = traits;
  if (properties !== undefined) event.properties = properties;
  if (at !== undefined) event.timestamp = at as string;
  if (messageId !== undefined) event.message_id = messageId;
  return eventSizeFault(event) === null ? event : null;
}

/** The value of `pageviewBody` for `v`, or null when zod must decide. */
export function fastPageview(v: unknown): PageviewInput | null {
  if (!isObject(v)) return null;
  const { visitor_id, url, referrer, title, timestamp: at, message_id } = v;
  if (v.cookieless !== undefined) return null;
  if (!within(visitor_id, 1, 256) || !within(url, 0, 4096) || !isPageUrl(url)) return null;
  if (referrer !== undefined && referrer !== null && !within(referrer, 0, 4096)) return null;
  if (title !== undefined && title !== null && !within(title, 0, 1024)) return null;
  if (at !== undefined && !isTimestamp(at)) return null;
  const messageId = identifier(message_id);
  if (messageId === NO) return null;
  const pageview: PageviewInput = { visitor_id, url };
  if (referrer !== undefined) pageview.referrer = referrer as string | null;
  if (title !== undefined) pageview.title = title as string | null;
  if (at !== undefined) pageview.timestamp = at as string;
  if (messageId !== undefined) pageview.message_id = messageId;
  return pageview;
}

/**
 * A single-or-batch body (`{ batch: [...] }`) checked with `item`, or null when zod must decide.
 * zod's union takes the single form first; a body is only read as a batch here when it lacks the
 * single form's `required` key, so the single form cannot match it.
 */
function fastBody<T>(item: (v: unknown) => T | null, required: string) {
  return (body: unknown): T | { batch: T[] } | null => {
    if (!isObject(body)) return null;
    if (required in body) return item(body);
    const { batch } = body;
    if (!Array.isArray(batch) || batch.length < 1 || batch.length > MAX_BATCH) return null;
    const items: T[] = new Array(batch.length);
    for (let i = 0; i < batch.length; i++) {
      const checked = item(batch[i]);
      if (checked === null) return null;
      items[i] = checked;
    }
    return { batch: items };
  };
}

export const fastEvents = fastBody(fastEvent, 'event_name');
export const fastPageviews = fastBody(fastPageview, 'url');
