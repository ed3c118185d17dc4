// Event writes: the bulk append of a validated, resolved batch.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { EventRecord } from '../analytics.js';
import { timestamp } from './time.js';

/**
 * Appends events with DuckDB's appender. (One INSERT whose parameter is the rows' JSON text frees
 * the event loop but took longer inside the write transaction, which is what bounds ingest.)
 */
export async function appendEvents(tx: DuckDBConnection, ws: string, events: EventRecord[], receivedAt: Date): Promise<void> {
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
