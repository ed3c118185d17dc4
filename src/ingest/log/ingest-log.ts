// The durable ingest log of one API node (decisions §13): a request is acknowledged once its record
// is written and fdatasync'd, with every record that arrived meanwhile in the same write and sync
// (group commit). Records live in numbered segment files; a checkpoint says up to where they were
// resolved. Opening the log reads every record after the checkpoint back (a replay: resolution
// dedupes by message id, so a record resolved just before a crash is stored once), cuts a torn
// tail, and deletes the segments wholly resolved. Pending records stay in memory until resolved:
// the backlog bound (config) bounds that memory. A record is a head (what the log and the resolver
// need to know without reading it) and a payload the log does not read.

import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { appendFile, mkdir, open, readdir, readFile, rename, rm, truncate, type FileHandle, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeFrames, encodeFrame } from './frames.js';

/** One acknowledged request: its head (workspace, when it arrived, how many messages it holds) and payload. */
export interface PendingRecord extends RecordHead {
  payload: Buffer;
  /** What its writer keeps in memory beside it until it is resolved (not in the log: gone at a restart). */
  kept?: unknown;
  segment: number;
  end: number;
}

/** What a record's head holds, at the least (its writer may add to it). */
export interface RecordHead {
  ws: string;
  at: number;
  count: number;
  /** Every message is an event (track, screen, group): such records are resolved together. */
  events_only: boolean;
}

/** The log's directory cannot be written (a full disk, lost permissions): an outage, answered 503. */
export class IngestLogUnwritable extends Error {}

interface Append {
  record: RecordHead;
  payload: Buffer;
  kept: unknown;
  frame: Buffer[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

const SEGMENT = /^(\d{12})\.log$/;
const segmentName = (n: number) => `${String(n).padStart(12, '0')}.log`;
export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;

export class IngestLog {
  private readonly queue: Append[] = [];
  private flushing = false;
  private pending: PendingRecord[] = [];
  private head = 0;
  private pendingEvents = 0;
  private readonly perWorkspace = new Map<string, number>();
  private waiters: (() => void)[] = [];
  private checkpointWrite: Promise<void> | null = null;
  /** Where the checkpoint is to move next; writes in a row keep only the latest. */
  private checkpointTarget: { segment: number; offset: number } | null = null;
  appendedEvents = 0;
  /** Messages of appends under way (not yet synced): with the backlog, what a bound must count. */
  appendingEvents = 0;
  resolvedEvents = 0;
  setAside = 0;

  private constructor(
    readonly dir: string,
    private fh: FileHandle,
    private segment: number,
    private size: number,
    private readonly segmentBytes: number,
  ) {}

  static async open(dir: string, segmentBytes = DEFAULT_SEGMENT_BYTES): Promise<IngestLog> {
    await mkdir(dir, { recursive: true });
    lockDirectory(dir);
    const checkpoint = await readCheckpoint(dir);
    const segments = (await readdir(dir)).map((name) => SEGMENT.exec(name)).filter((m) => m !== null).map((m) => Number(m[1])).sort((a, b) => a - b);
    const replayed: PendingRecord[] = [];
    let last = Math.max(checkpoint.segment, 1);
    let size = 0;
    for (const n of segments) {
      if (n < checkpoint.segment) {
        await rm(join(dir, segmentName(n)));
        continue;
      }
      const data = await readFile(join(dir, segmentName(n)));
      const { frames, end } = decodeFrames(data, n === checkpoint.segment ? checkpoint.offset : 0);
      for (const { head, payload, end: frameEnd } of frames) replayed.push({ ...(JSON.parse(head) as RecordHead), payload, segment: n, end: frameEnd });
      if (end < data.length) await truncate(join(dir, segmentName(n)), end);
      last = n;
      size = end;
    }
    const fh = await openSegment(dir, last);
    const log = new IngestLog(dir, fh, last, size, segmentBytes);
    for (const record of replayed) log.enqueue(record);
    return log;
  }

  /** Resolves once `record` and its payload are durably in the log, with others arriving meanwhile; `kept` stays in memory with it. */
  append(record: RecordHead, payload: Buffer, kept?: unknown): Promise<void> {
    this.appendingEvents += record.count;
    return new Promise((resolve, reject) => {
      this.queue.push({ record, payload, kept, frame: encodeFrame(JSON.stringify(record), payload), resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, this.queue.length);
        const start = this.size;
        try {
          await this.write(group.flatMap((a) => a.frame));
        } catch (err) {
          for (const a of group) this.appendingEvents -= a.record.count;
          for (const a of group) a.reject(err);
          continue;
        }
        let end = start;
        for (const a of group) {
          this.appendingEvents -= a.record.count;
          end += a.frame[0]!.length + a.frame[1]!.length;
          this.enqueue({ ...a.record, payload: a.payload, kept: a.kept, segment: this.segment, end });
          a.resolve();
        }
        for (const wake of this.waiters.splice(0)) wake();
        if (this.size >= this.segmentBytes) await this.roll();
      }
    } finally {
      this.flushing = false;
    }
  }

  private async write(frames: Buffer[]): Promise<void> {
    const total = frames.reduce((n, f) => n + f.length, 0);
    try {
      const { bytesWritten } = await this.fh.writev(frames);
      if (bytesWritten !== total) throw new Error(`wrote ${bytesWritten} of ${total} bytes`);
      await this.fh.datasync();
      this.size += total;
    } catch (err) {
      // What was written of an unsynced group is cut, so a later group follows the last good record.
      await this.fh.truncate(this.size).catch(() => undefined);
      throw new IngestLogUnwritable(`the ingest log (${this.dir}) could not be written: ${(err as Error).message}`, { cause: err });
    }
  }

  private async roll(): Promise<void> {
    await this.fh.close();
    this.segment += 1;
    this.size = 0;
    this.fh = await openSegment(this.dir, this.segment);
  }

  private enqueue(record: PendingRecord): void {
    this.pending.push(record);
    this.pendingEvents += record.count;
    this.appendedEvents += record.count;
    this.perWorkspace.set(record.ws, (this.perWorkspace.get(record.ws) ?? 0) + record.count);
  }

  /** The oldest pending records, in order, up to `maxEvents` messages (at least one record); they stay pending until `settle`. */
  peek(maxEvents: number): PendingRecord[] {
    const out: PendingRecord[] = [];
    let events = 0;
    for (let i = this.head; i < this.pending.length; i++) {
      const record = this.pending[i]!;
      if (out.length > 0 && events + record.count > maxEvents) break;
      out.push(record);
      events += record.count;
    }
    return out;
  }

  /** The `n` oldest pending records are resolved: the checkpoint moves past them. */
  settle(n: number): void {
    let last: PendingRecord | undefined;
    for (let i = 0; i < n; i++) {
      last = this.pending[this.head++]!;
      last.kept = undefined;
      this.pendingEvents -= last.count;
      this.resolvedEvents += last.count;
      const left = this.perWorkspace.get(last.ws)! - last.count;
      if (left === 0) this.perWorkspace.delete(last.ws);
      else this.perWorkspace.set(last.ws, left);
    }
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
    if (last) this.writeCheckpoint(last.segment, last.end);
  }

  /** Resolves at the next durable append (at once when records are pending). */
  appended(): Promise<void> {
    if (this.head < this.pending.length) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Wakes whoever waits in `appended` (the resolver stopping). */
  wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Messages acknowledged but not yet resolved, and how long the oldest has waited. */
  backlog(now = Date.now(), ws?: string): { events: number; seconds: number; workspace_events?: number } {
    const oldest = this.pending[this.head];
    const seconds = oldest ? Math.max(0, (now - oldest.at) / 1000) : 0;
    return { events: this.pendingEvents, seconds, ...(ws === undefined ? {} : { workspace_events: this.perWorkspace.get(ws) ?? 0 }) };
  }

  /** Keeps a record part that cannot be resolved, with its error, in poisoned.jsonl (synced: it is the only copy). */
  async setAsideRecord(entry: Record<string, unknown>): Promise<void> {
    const path = join(this.dir, 'poisoned.jsonl');
    await appendFile(path, `${JSON.stringify(entry)}\n`, { flush: true });
    this.setAside += 1;
  }

  /**
   * The checkpoint is rewritten whole, synced, then renamed over the last one and the directory
   * synced, so it never points before a segment deleted after it. Writes asked while one runs are
   * folded into one, at the latest position. Segments before it then go.
   */
  private writeCheckpoint(segment: number, offset: number): void {
    this.checkpointTarget = { segment, offset };
    this.checkpointWrite ??= this.writeCheckpoints().finally(() => { this.checkpointWrite = null; });
  }

  private async writeCheckpoints(): Promise<void> {
    for (let target = this.checkpointTarget; target !== null; target = this.checkpointTarget) {
      this.checkpointTarget = null;
      try {
        const tmp = join(this.dir, 'checkpoint.json.tmp');
        await writeFile(tmp, JSON.stringify(target), { flush: true });
        await rename(tmp, join(this.dir, 'checkpoint.json'));
        await syncDirectory(this.dir);
        for (const name of await readdir(this.dir)) {
          const m = SEGMENT.exec(name);
          if (m && Number(m[1]) < target.segment) await rm(join(this.dir, name), { force: true });
        }
      } catch {
        // The older checkpoint stands: a replay from it finds its records already stored.
      }
    }
  }

  async close(): Promise<void> {
    while (this.flushing) await new Promise((r) => setTimeout(r, 5));
    await this.checkpointWrite;
    await this.fh.close();
    await rm(join(this.dir, 'lock'), { force: true });
  }
}

/** A segment opened for appends; its directory entry synced, so a synced record is not lost with the file's name. */
async function openSegment(dir: string, n: number): Promise<FileHandle> {
  const fh = await open(join(dir, segmentName(n)), 'a');
  await syncDirectory(dir);
  return fh;
}

async function syncDirectory(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function readCheckpoint(dir: string): Promise<{ segment: number; offset: number }> {
  try {
    const { segment, offset } = JSON.parse(await readFile(join(dir, 'checkpoint.json'), 'utf8')) as { segment: number; offset: number };
    return { segment, offset };
  } catch {
    return { segment: 0, offset: 0 };
  }
}

/** One process per log directory: a second node given the same directory would interleave records. */
function lockDirectory(dir: string): void {
  const path = join(dir, 'lock');
  try {
    const holder = Number(readFileSync(path, 'utf8'));
    if (holder !== process.pid && alive(holder)) {
      throw new Error(`the ingest log ${dir} is in use by process ${holder}; give each API node its own INGEST_LOG_DIR`);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof SyntaxError)) throw err;
  }
  const fd = openSync(path, 'w');
  writeSync(fd, String(process.pid));
  closeSync(fd);
}

function alive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
