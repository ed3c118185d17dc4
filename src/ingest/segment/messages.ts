// Segment's Tracking API messages (track, identify, page, screen, group, alias) checked and mapped
// to our inputs (decisions §13): userId → external_id, anonymousId → visitor_id, traits.email /
// context.traits → email and traits, event → event_name, messageId → message_id, timestamps
// corrected for the client's clock skew. Each mapped input is then checked by the same checks as
// /v1/events, /v1/persons and /v1/pageviews take, so what the log holds always resolves.

import type { FieldError } from '../../errors.js';
import { fastEvent, fastPageview } from '../fast-path.js';
import { eventBody, type EventInput, pageviewBody, type PageviewInput, personBody, type PersonInput } from '../schemas.js';
import { pointerOf, type SegmentKind, typeOf } from './body.js';
import type { LogOperation } from './operations.js';
import { pageUrl } from './page-url.js';

export const MESSAGE_TYPES = ['track', 'identify', 'page', 'screen', 'group', 'alias'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A fault of one message: the Segment field it names (`userId`, `context.traits`), relative to the message. */
export class MessageFault extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
  }
}

/** Our field names back to Segment's, to word a fault found by our own checks. */
const SEGMENT_FIELD: Record<string, string> = {
  event_name: 'event', external_id: 'userId', user_id: 'userId', visitor_id: 'anonymousId', email: 'traits.email',
  traits: 'traits', properties: 'properties', message_id: 'messageId', timestamp: 'timestamp', url: 'properties.url',
  referrer: 'properties.referrer', title: 'properties.title', name: 'traits.name',
};

/** Segment ids may be strings or numbers (kept as their decimal text, as /v1/events does). */
function id(message: Json, field: string): string | undefined {
  const v = message[field];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  throw new MessageFault(field, 'must be a string');
}

function object(parent: Json, field: string, path = field): Json | undefined {
  const v = parent[field];
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw new MessageFault(path, 'must be an object');
  return v;
}

function text(parent: Json, field: string, path = field): string | undefined {
  const v = parent[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new MessageFault(path, 'must be a string');
  return v;
}

function instant(message: Json, field: string): number | undefined {
  const v = message[field];
  if (v === undefined || v === null) return undefined;
  const ms = typeof v === 'string' ? Date.parse(v) : NaN;
  if (Number.isNaN(ms)) throw new MessageFault(field, 'must be an ISO 8601 date-time');
  return ms;
}

/**
 * When the message happened, as Segment corrects it: `timestamp` (or RudderStack's
 * `originalTimestamp`) shifted by the client's clock skew, receivedAt − sentAt, when `sentAt`
 * (the message's, else the batch's) is given; the receive time when the message has no time.
 */
function correctedTime(message: Json, receivedAt: number, batchSentAt: number | undefined): string {
  const at = instant(message, 'timestamp') ?? instant(message, 'originalTimestamp');
  const sentAt = instant(message, 'sentAt') ?? batchSentAt;
  const ms = at === undefined ? receivedAt : sentAt === undefined ? at : at + (receivedAt - sentAt);
  const corrected = new Date(ms);
  if (Number.isNaN(corrected.getTime())) throw new MessageFault('timestamp', 'is out of range');
  return corrected.toISOString();
}

interface Common {
  external_id?: string;
  visitor_id?: string;
  message_id: string;
  timestamp: string;
  context?: Json;
  /** context.traits, for the calls whose traits are not top-level. */
  contextTraits?: Json;
}

/** The message id of a message that has none: drawn when the request arrives, read back from its record when resolved. */
export type DrawnId = () => string;

function common(message: Json, receivedAt: number, batchSentAt: number | undefined, drawId: DrawnId, needsId = true): Common {
  const external_id = id(message, 'userId');
  const visitor_id = id(message, 'anonymousId');
  if (needsId && external_id === undefined && visitor_id === undefined) throw new MessageFault('userId', 'userId or anonymousId is required');
  const context = object(message, 'context');
  const contextTraits = context && object(context, 'traits', 'context.traits');
  return {
    external_id, visitor_id, context, contextTraits,
    message_id: id(message, 'messageId') ?? drawId(),
    timestamp: correctedTime(message, receivedAt, batchSentAt),
  };
}

const emailOf = (traits: Json | undefined): string | undefined => (typeof traits?.email === 'string' ? traits.email : undefined);

/** The value of `schema` for `input`, or the fault of its first issue in Segment's words. */
function checked<T>(input: T, fast: (v: unknown) => T | null, schema: typeof eventBody | typeof personBody | typeof pageviewBody): T {
  const quick = fast(input);
  if (quick) return quick;
  const result = schema.safeParse(input);
  if (result.success) return result.data as T;
  const issue = result.error.issues[0]!;
  const [head, ...rest] = issue.path.map(String);
  const field = [SEGMENT_FIELD[head ?? ''] ?? head, ...rest].filter(Boolean).join('.');
  throw new MessageFault(field, issue.message);
}

const checkedEvent = (input: EventInput) => checked(input, fastEvent, eventBody);
const checkedPageview = (input: PageviewInput) => checked(input, fastPageview, pageviewBody);
const checkedPerson = (input: PersonInput) => checked(input, () => null, personBody);

/** An event of `name` with the message's identity and `properties`. */
function event(c: Common, name: unknown, properties: Json | undefined): LogOperation {
  const traits = c.contextTraits;
  const input: EventInput = { event_name: name as string };
  if (c.external_id !== undefined) input.external_id = c.external_id;
  if (emailOf(traits) !== undefined) input.email = emailOf(traits);
  if (c.visitor_id !== undefined) input.visitor_id = c.visitor_id;
  if (traits !== undefined) input.traits = traits;
  if (properties !== undefined) input.properties = properties;
  input.timestamp = c.timestamp;
  input.message_id = c.message_id;
  return { event: checkedEvent(input) };
}

function identify(message: Json, c: Common): LogOperation[] {
  const traits = { ...c.contextTraits, ...object(message, 'traits') };
  const input: PersonInput = {};
  if (c.external_id !== undefined) input.external_id = c.external_id;
  if (emailOf(traits) !== undefined) input.email = emailOf(traits);
  if (typeof traits.name === 'string') input.name = traits.name;
  if (c.visitor_id !== undefined) input.visitor_id = c.visitor_id;
  if (Object.keys(traits).length > 0) input.traits = traits;
  return [{ person: checkedPerson(input) }];
}

/**
 * A page view of the message's visitor; with a userId too, the visitor is first linked to that
 * person, as /v1/persons would. Without an anonymousId the page view belongs to a visitor named
 * after the user (`user:<userId>`), linked to it, so it still counts for the person.
 */
function page(message: Json, c: Common): LogOperation[] {
  const properties = object(message, 'properties');
  const context = c.context && object(c.context, 'page', 'context.page');
  const visitor = c.visitor_id ?? `user:${c.external_id!}`;
  const url = pageUrl(properties, context, c.context && object(c.context, 'campaign', 'context.campaign'));
  if (url === undefined) throw new MessageFault('properties.url', 'a page call needs properties.url, context.page.url or a path');
  const referrer = text(properties ?? {}, 'referrer', 'properties.referrer') ?? text(context ?? {}, 'referrer', 'context.page.referrer');
  const title = text(properties ?? {}, 'title', 'properties.title') ?? text(context ?? {}, 'title', 'context.page.title') ?? text(message, 'name');
  const input: PageviewInput = { visitor_id: visitor, url, timestamp: c.timestamp, message_id: c.message_id };
  if (referrer) input.referrer = referrer;
  if (title !== undefined) input.title = title;
  const ops: LogOperation[] = [];
  if (c.external_id !== undefined) ops.push({ person: checkedPerson({ external_id: c.external_id, visitor_id: visitor }) });
  ops.push({ pageview: checkedPageview(input) });
  return ops;
}

function alias(message: Json): LogOperation[] {
  const previous_id = id(message, 'previousId');
  const user_id = id(message, 'userId');
  if (previous_id === undefined) throw new MessageFault('previousId', 'is required');
  if (user_id === undefined) throw new MessageFault('userId', 'is required');
  checkedPerson({ external_id: user_id, visitor_id: previous_id });
  return [{ alias: { previous_id, user_id } }];
}

/** The log operations of one message of type `type`; throws MessageFault naming the field at fault. */
export function operationsOf(type: MessageType, message: Json, receivedAt: number, batchSentAt: number | undefined, drawId: DrawnId): LogOperation[] {
  if (type === 'alias') return alias(message);
  const c = common(message, receivedAt, batchSentAt, drawId);
  switch (type) {
    case 'track': {
      const name = message.event;
      if (typeof name !== 'string' || name === '') throw new MessageFault('event', 'is required: a non-empty string');
      return [event(c, name, object(message, 'properties'))];
    }
    case 'identify': return identify(message, c);
    case 'page': return page(message, c);
    case 'screen': return [event(c, 'screen', { ...object(message, 'properties'), ...(typeof message.name === 'string' ? { name: message.name } : {}) })];
    case 'group': {
      const groupId = id(message, 'groupId');
      if (groupId === undefined) throw new MessageFault('groupId', 'is required');
      return [event(c, 'group', { ...object(message, 'traits'), group_id: groupId })];
    }
  }
}

/** A message's fault: where it is in its body, and the field at fault. */
export interface MessageFaultAt {
  index: number;
  fault: FieldError;
}

/**
 * The operations of a body's `messages` (of a route of `kind`), and the faults of those that have
 * any (none: all valid). `drawnId(index)` gives the message id of a message that has none.
 */
export function mapMessages(
  kind: SegmentKind, messages: unknown[], receivedAt: number, batchSentAt: number | undefined, drawnId: (index: number) => string,
): { ops: LogOperation[]; faults: MessageFaultAt[] } {
  const ops: LogOperation[] = [];
  const faults: MessageFaultAt[] = [];
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index];
    try {
      if (!isObject(message)) throw new MessageFault('', 'must be an object');
      for (const op of operationsOf(typeOf(kind, message), message, receivedAt, batchSentAt, () => drawnId(index))) ops.push(op);
    } catch (err) {
      if (!(err instanceof MessageFault)) throw err;
      const pointer = pointerOf(kind, index);
      const field = `${pointer}${err.field ? `/${err.field.replaceAll('.', '/')}` : ''}`;
      faults.push({ index, fault: { field, message: err.message, ...(kind === 'batch' ? { index } : {}) } });
    }
  }
  return { ops, faults };
}
