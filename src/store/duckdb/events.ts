// Event writes: the bulk append of a validated, resolved batch.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { EventRecord } from '../analytics.js';
import { timestamp } from './time.js';
import type { TypedRows } from './typed.js';

/**
 * Appends events with DuckDB's appender, each row's typed payload columns after its own. (One INSERT whose parameter is the rows' JSON text frees
 * the event loop but took longer inside the write transaction, which is what bounds ingest.)
 */
export async function appendEvents(tx: DuckDBConnection, ws: string, events: EventRecord[], receivedAt: Date, typed: TypedRows): Promise<void> {
  if (events.length === 0) return;
  const appender = await tx.createAppender('events');
  const received = timestamp(receivedAt);
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
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
    typed.append(appender, i);
    appender.endRow();
  }
  appender.closeSync();
}
