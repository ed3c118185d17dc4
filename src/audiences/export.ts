// Member exports of a snapshot, streamed: CSV and Parquet are written by the store to a temporary
// file that is streamed back and then deleted; Arrow IPC is built chunk by chunk from the store's
// streamed rows. Neither holds the whole snapshot in memory.

import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { AsyncByteQueue, RecordBatchStreamWriter, Table, Utf8, vectorFromArray } from 'apache-arrow';
import type { AnalyticsStore, Member } from '../store/analytics.js';

export type ExportFormat = 'csv' | 'parquet' | 'arrow';

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  parquet: 'application/vnd.apache.parquet',
  arrow: 'application/vnd.apache.arrow.stream',
};

const COLUMNS = ['person_id', 'visitor_id', 'external_id', 'email'] as const;

export async function exportMembers(analytics: AnalyticsStore, ws: string, snapshotId: number, format: ExportFormat): Promise<Readable> {
  if (format === 'arrow') return Readable.from(arrowIpc(analytics.streamSnapshot(ws, snapshotId)));
  const dir = await mkdtemp(join(tmpdir(), 'audience-export-'));
  try {
    const path = join(dir, `members.${format}`);
    await analytics.exportSnapshot(ws, snapshotId, path, format);
    const stream = createReadStream(path);
    stream.once('close', () => void rm(dir, { recursive: true, force: true }));
    return stream;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Collects what the writer emits, so each batch's bytes can be handed on as soon as it is written. */
class Collected extends AsyncByteQueue {
  readonly chunks: Uint8Array[] = [];

  override write(value: Uint8Array): void {
    if (value.byteLength > 0) this.chunks.push(value);
  }

  take(): Buffer {
    return Buffer.concat(this.chunks.splice(0));
  }
}

function batchOf(rows: Member[]): Table {
  return new Table(Object.fromEntries(COLUMNS.map((c) => [c, vectorFromArray(rows.map((r) => r[c] ?? null), new Utf8())])));
}

/** An Arrow IPC stream of the rows: the schema, one record batch per chunk of the store's, the end marker. */
async function* arrowIpc(chunks: AsyncIterable<Member[]>): AsyncGenerator<Buffer> {
  const sink = new Collected();
  const writer = new RecordBatchStreamWriter();
  writer.reset(sink);
  let wrote = false;
  for await (const rows of chunks) {
    if (rows.length === 0) continue;
    writer.write(batchOf(rows));
    wrote = true;
    yield sink.take();
  }
  // An empty snapshot still has a schema.
  if (!wrote) writer.write(batchOf([]));
  writer.finish();
  yield sink.take();
}
