// Event writes: the bulk append of a validated, resolved batch.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { EventRecord } from '../analytics.js';
import { appendRows, type ChunkColumn, constantInstant, constantText, instant, int64, text } from './chunks.js';
import type { TypedRows } from './typed.js';

/** The events table's own columns, in its order: a column added by a migration gets its line here. */
const eventColumns = (ws: string, receivedAt: Date): ChunkColumn<EventRecord>[] => [
  constantText(ws),
  text((e) => e.event_id),
  text((e) => e.message_id),
  text((e) => e.event_name),
  instant((e) => e.ts),
  int64((e) => e.person_key),
  int64((e) => e.visitor_key),
  text((e) => e.properties),
  constantInstant(receivedAt),
];

/**
 * Appends events in data chunks (store/duckdb/chunks.ts), each row's typed payload columns
 * (store/duckdb/typed.ts, added after the table's own) after its own. (One INSERT whose parameter
 * is the rows' JSON text frees the event loop but took longer inside the write transaction, which
 * is what bounds ingest.)
 */
export async function appendEvents(tx: DuckDBConnection, ws: string, events: EventRecord[], receivedAt: Date, typed: TypedRows): Promise<void> {
  await appendRows(tx, 'events', [...eventColumns(ws, receivedAt), ...typed.columns], events);
}
