// Member exports of a snapshot, streamed: CSV and Parquet are written by the store to a temporary
// file that is streamed back and then deleted; the Arrow IPC stream is the store's own, each engine
// writing it its own way. None holds the whole snapshot in memory.

import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { SplitPlacement } from '../criteria/index.js';
import type { AnalyticsStore } from '../store/analytics.js';

export type ExportFormat = 'csv' | 'parquet' | 'arrow';

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  parquet: 'application/vnd.apache.parquet',
  arrow: 'application/vnd.apache.arrow.stream',
};

/** `placement`: the audience's splits (each member's `split` a column of the file); null without. */
export async function exportMembers(
  analytics: AnalyticsStore, ws: string, snapshotId: number, format: ExportFormat, placement: SplitPlacement | null,
): Promise<Readable> {
  if (format === 'arrow') return Readable.from(await analytics.exportArrow(ws, snapshotId, placement), { objectMode: false });
  const dir = await mkdtemp(join(tmpdir(), 'audience-export-'));
  try {
    const path = join(dir, `members.${format}`);
    await analytics.exportSnapshot(ws, snapshotId, path, format, placement);
    const stream = createReadStream(path);
    stream.once('close', () => void rm(dir, { recursive: true, force: true }));
    return stream;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
