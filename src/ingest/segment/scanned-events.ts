// The resolver's reading of a logged body the acknowledging path's scan vouched for (track calls):
// the scan run again, locating each message's strings, and the events built from those bytes as
// mapMessages builds them from JSON.parse's value. No string of the whole body (a large object
// for the collector) and no parsed message are made: only each event's fields and properties.

import type { EventInput } from '../schemas.js';
import type { SegmentKind } from './body.js';
import type { LogOperation } from './operations.js';
import { correctedTimesInRange, scanSegmentBody, Span, SPAN_FIELDS } from './scan.js';

/**
 * The operations mapMessages gives for `bytes` (a body of a route of `kind`, received at
 * `received`), when the scan accepts it and every message without an id has one drawn; else null
 * (the full path maps it, and words what it finds at fault).
 */
export function scannedEvents(bytes: Buffer, kind: SegmentKind, received: number, drawnId: (index: number) => string | undefined): LogOperation[] | null {
  const scanned = scanSegmentBody(bytes, kind, true);
  if (scanned === null || !correctedTimesInRange(scanned, received)) return null;
  const { at, sentAt, batchSentAt, count } = scanned;
  const spans = scanned.spans!;
  const ops: LogOperation[] = new Array(count);
  // Every string but the properties' JSON is ASCII (the scan checked it).
  const ascii = (o: number) => bytes.toString('latin1', spans[o], spans[o + 1]);
  for (let i = 0; i < count; i++) {
    const o = i * 2 * SPAN_FIELDS;
    const messageId = spans[o + 2 * Span.MessageId] === -1 ? drawnId(i) : ascii(o + 2 * Span.MessageId);
    if (messageId === undefined) return null;
    // correctedTime: the message's time shifted by its client's clock skew, or the receive time.
    const sent = Number.isNaN(sentAt[i]!) ? batchSentAt : sentAt[i]!;
    const ms = Number.isNaN(at[i]!) ? received : sent === undefined ? at[i]! : at[i]! + (received - sent);
    // Keys in the order fastEvent gives them.
    const event: EventInput = { event_name: ascii(o + 2 * Span.Event) };
    if (spans[o + 2 * Span.UserId] !== -1) event.external_id = ascii(o + 2 * Span.UserId);
    if (spans[o + 2 * Span.AnonymousId] !== -1) event.visitor_id = ascii(o + 2 * Span.AnonymousId);
    const properties = o + 2 * Span.Properties;
    if (spans[properties] !== -1) event.properties = JSON.parse(bytes.toString('utf8', spans[properties], spans[properties + 1])) as Record<string, unknown>;
    event.timestamp = new Date(ms).toISOString();
    event.message_id = messageId;
    ops[i] = { event };
  }
  return ops;
}
