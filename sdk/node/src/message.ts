// The messages of Segment's Tracking API spec (type, messageId, timestamp, userId / anonymousId,
// context.library), built and checked on the caller's side: the service refuses a batch whole when
// one of its messages is malformed, so a bad call throws here instead of sinking its neighbours.

import { LIBRARY } from './version.js';

type Json = Record<string, unknown>;

/** Who a message is about: a user id, an anonymous (visitor) id, or both. */
export type Identity =
  | { userId: string | number; anonymousId?: string }
  | { userId?: string | number; anonymousId: string };

export interface Common {
  /** Deduplicated by the service: give your own to make a retried call idempotent. */
  messageId?: string;
  /** When it happened (default: now). */
  timestamp?: Date | string;
  context?: Json;
  integrations?: Json;
}

export type IdentifyInput = Identity & Common & { traits?: Json };
export type TrackInput = Identity & Common & { event: string; properties?: Json };
export type PageInput = Identity & Common & { name?: string; category?: string; properties?: Json };
export type AliasInput = Common & { userId: string | number; previousId: string | number };

export type MessageType = 'identify' | 'track' | 'page' | 'alias';
/** A message as sent: Segment's field names, JSON values only. */
export type Message = Json & { type: MessageType; messageId: string; timestamp: string };

/** The service's identifier rule (decisions §3): 1 to 256 characters, an integer as its decimal string. */
const MAX_ID_CHARS = 256;
const MAX_EVENT_CHARS = 200;

function identifier(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  const id = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_CHARS) {
    throw new TypeError(`${field} must be a string of 1 to ${MAX_ID_CHARS} characters or an integer`);
  }
  return id;
}

function object(value: unknown, field: string): Json | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`${field} must be an object`);
  return value as Json;
}

function timestampOf(value: Date | string | undefined): string {
  const at = value === undefined ? new Date() : new Date(value);
  if (Number.isNaN(at.getTime())) throw new TypeError('timestamp must be a Date or an ISO 8601 string');
  return at.toISOString();
}

function identity(input: Partial<{ userId: unknown; anonymousId: unknown }>): Json {
  const userId = identifier(input.userId, 'userId');
  const anonymousId = identifier(input.anonymousId, 'anonymousId');
  if (userId === undefined && anonymousId === undefined) throw new TypeError('userId or anonymousId is required');
  return { userId, anonymousId };
}

function envelope(type: MessageType, input: Common, fields: Json): Message {
  const messageId = input.messageId ?? globalThis.crypto.randomUUID();
  if (typeof messageId !== 'string' || messageId.length === 0) throw new TypeError('messageId must be a non-empty string');
  const message: Json = {
    type, messageId, timestamp: timestampOf(input.timestamp), ...fields,
    context: { ...object(input.context, 'context'), library: LIBRARY },
    integrations: object(input.integrations, 'integrations'),
  };
  // Absent fields are left out rather than sent as null.
  for (const key of Object.keys(message)) if (message[key] === undefined) delete message[key];
  return message as Message;
}

export function identifyMessage(input: IdentifyInput): Message {
  return envelope('identify', input, { ...identity(input), traits: object(input.traits, 'traits') });
}

export function trackMessage(input: TrackInput): Message {
  if (typeof input.event !== 'string' || input.event.length === 0 || input.event.length > MAX_EVENT_CHARS) {
    throw new TypeError(`event must be a string of 1 to ${MAX_EVENT_CHARS} characters`);
  }
  return envelope('track', input, { ...identity(input), event: input.event, properties: object(input.properties, 'properties') });
}

/** A page view is stored under its address: the service refuses a page call without one. */
function pageUrlOf(input: PageInput): unknown {
  const page = object(input.context?.page, 'context.page');
  return object(input.properties, 'properties')?.url ?? page?.url;
}

export function pageMessage(input: PageInput): Message {
  for (const field of ['name', 'category'] as const) {
    if (input[field] !== undefined && typeof input[field] !== 'string') throw new TypeError(`${field} must be a string`);
  }
  const url = pageUrlOf(input);
  if (typeof url !== 'string' || !URL.canParse(url)) throw new TypeError('page needs properties.url (or context.page.url), an absolute URL');
  return envelope('page', input, {
    ...identity(input), name: input.name, category: input.category, properties: object(input.properties, 'properties'),
  });
}

export function aliasMessage(input: AliasInput): Message {
  const userId = identifier(input.userId, 'userId');
  const previousId = identifier(input.previousId, 'previousId');
  if (userId === undefined || previousId === undefined) throw new TypeError('alias needs userId and previousId');
  return envelope('alias', input, { userId, previousId });
}
