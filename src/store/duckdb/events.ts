// Event writes: message-id dedupe and the bulk append of a validated, resolved batch.

import type { EventRecord } from '../analytics.js';
import { column, texts } from './columns.js';
import type { Tx } from '../control/people.js';
import { timestamp } from './time.js';

/** Records message ids and returns those not seen before in the workspace. */
export async function claimMessageIds(tx: Tx, ws: string, messageIds: string[]): Promise<Set<string>> {
  const fresh = new Set<string>();
  if (messageIds.length === 0) return fresh;
  const reader = await tx.runAndReadAll(`INSERT INTO event_messages (workspace_id, message_id)
    SELECT $1, unnest(${texts('$2')}) ON CONFLICT DO NOTHING RETURNING message_id`, [ws, column(messageIds)]);
  for (const row of reader.getRowObjectsJS()) fresh.add(row.message_id as string);
  return fresh;
}

/**
 * Appends events with DuckDB's appender. (One INSERT whose parameter is the rows' JSON text frees
 * the event loop but took longer inside the write transaction, which is what bounds ingest.)
 */
export async function appendEvents(tx: Tx, ws: string, events: EventRecord[], receivedAt: Date): Promise<void> {
  if (events.length === 0) return;
  const appender = await tx.createAppender('events');
  const received = timestamp(receivedAt);
  for (const e of events) {
    appender.appendVarchar(ws);
    appender.appendVarchar(e.event_id);
    if (e.message_id === null) appender.appendNull();
    else appender.appendVarchar(e.message_id);
    appender.appendVarchar(e.event_name);
    appender.appendTimestamp(timestamp(e.ts));
    if (e.person_key === null) appender.appendNull();
    else appender.appendBigInt(BigInt(e.person_key));
    if (e.visitor_key === null) appender.appendNull();
    else appender.appendBigInt(BigInt(e.visitor_key));
    appender.appendVarchar(e.properties);
    appender.appendTimestamp(received);
    appender.endRow();
  }
  appender.closeSync();
}
