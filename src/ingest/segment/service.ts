// The Segment-compatible tracking API's feature (decisions §13): a request's messages are checked
// and mapped, its body appended durably to this node's ingest log, and acknowledged; the resolver stores
// them in the background through Ingest. Past the backlog bound, requests are refused with 503 and
// Retry-After (a status Segment's and RudderStack's clients retry) rather than grow without limit.

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError, invalidRequest } from '../../errors.js';
import { type AliasMerge, personMergeAlias } from '../alias.js';
import type { Ingest } from '../ingest.js';
import type { Stores } from '../../store/open.js';
import { IngestLog, IngestLogUnwritable } from '../log/ingest-log.js';
import { LogResolver } from '../log/resolver.js';
import { messagesOf, type SegmentKind, sentAtOf, typeOf } from './body.js';
import { mapMessages } from './messages.js';
import type { LoggedRequest, LogOperation } from './operations.js';
import { correctedTimesInRange, type ScannedBody } from './scan.js';

export interface IngestLogOptions {
  /** This node's log directory (INGEST_LOG_DIR); a temporary one, removed at close, when unset. */
  dir?: string;
  /** Unresolved messages past which requests answer 503 (INGEST_BACKLOG_MAX_EVENTS). */
  maxBacklogEvents?: number;
  segmentBytes?: number;
  /** How alias merges; personMergeAlias unless given. */
  aliasMerge?: AliasMerge;
}

export const DEFAULT_MAX_BACKLOG_EVENTS = 1_000_000;
const BACKLOG_RETRY_AFTER_SECONDS = 5;
const LOG_RETRY_AFTER_SECONDS = 5;

/** A request's body as the route read it: its kind, its JSON, its messages (body.ts), and its bytes (decompressed). */
export interface SegmentRequest {
  kind: SegmentKind;
  body: Record<string, unknown>;
  messages: unknown[];
  bytes: Buffer | undefined;
}

/** Unresolved messages up to which a record's mapped operations stay in memory beside it (bounding that memory). */
const KEPT_OPERATIONS_EVENTS = 50_000;

const EVENT_TYPES = new Set(['track', 'screen', 'group']);


export interface IngestStatus {
  backlog_events: number;
  backlog_seconds: number;
  workspace_backlog_events?: number;
  appended_events: number;
  resolved_events: number;
  set_aside: number;
  max_backlog_events: number;
}

export class SegmentIngest {
  private constructor(
    readonly log: IngestLog,
    readonly resolver: LogResolver,
    private readonly maxBacklogEvents: number,
    private readonly clock: () => Date,
    private readonly temporaryDir: string | null,
  ) {}

  static async open(ingest: Ingest, stores: Stores, options: IngestLogOptions, clock: () => Date, onError: (err: unknown) => void): Promise<SegmentIngest> {
    const temporaryDir = options.dir === undefined ? await mkdtemp(join(tmpdir(), 'ingest-log-')) : null;
    const log = await IngestLog.open(options.dir ?? temporaryDir!, options.segmentBytes);
    const resolver = new LogResolver(log, ingest, options.aliasMerge ?? personMergeAlias(ingest, stores, clock), onError);
    resolver.start();
    return new SegmentIngest(log, resolver, options.maxBacklogEvents ?? DEFAULT_MAX_BACKLOG_EVENTS, clock, temporaryDir);
  }

  /**
   * Checks and maps the request's messages (400 naming each bad field, nothing kept), then resolves
   * once its body is durably in the log; the resolver maps it again from the record, to the same
   * operations.
   */
  async accept(ws: string, { kind, body, messages, bytes }: SegmentRequest): Promise<void> {
    const received = this.clock().getTime();
    const drawn: Record<number, string> = {};
    let draws = 0;
    const { ops, faults } = mapMessages(kind, messages, received, sentAtOf(body), (index) => {
      draws++;
      return (drawn[index] = randomUUID());
    });
    if (faults.length > 0) throw invalidRequest(faults.map((f) => f.fault));
    const eventsOnly = messages.every((m) => EVENT_TYPES.has(typeOf(kind, m)));
    // The write key is no part of what is kept.
    const payload = bytes === undefined || 'writeKey' in body ? Buffer.from(JSON.stringify({ ...body, writeKey: undefined })) : bytes;
    await this.append(ws, { kind, received, count: messages.length, eventsOnly, drawn: draws > 0 ? drawn : undefined }, payload, ops);
  }

  /**
   * A body the scan vouched for (track calls): appended as it came, with no mapping now (the
   * resolver maps it). A message whose corrected time falls out of the years a timestamp may
   * name takes the full path, which words its fault.
   */
  async acceptScanned(ws: string, kind: SegmentKind, scanned: ScannedBody): Promise<void> {
    const received = this.clock().getTime();
    if (!correctedTimesInRange(scanned, received)) {
      const body = JSON.parse(scanned.bytes.toString('utf8')) as Record<string, unknown>;
      return this.accept(ws, { kind, body, messages: messagesOf(kind, body), bytes: scanned.bytes });
    }
    let drawn: Record<number, string> | undefined;
    for (const index of scanned.withoutId) (drawn ??= {})[index] = randomUUID();
    await this.append(ws, { kind, received, count: scanned.count, eventsOnly: true, drawn }, scanned.bytes, undefined);
  }

  /** Past the backlog bound, 503; else the record appended (its operations kept beside it while the resolver keeps up). */
  private async append(ws: string, record: { kind: SegmentKind; received: number; count: number; eventsOnly: boolean; drawn: Record<number, string> | undefined },
    payload: Buffer, ops: LogOperation[] | undefined): Promise<void> {
    const backlog = this.log.backlog();
    const waiting = backlog.events + this.log.appendingEvents;
    if (waiting + record.count > this.maxBacklogEvents) {
      throw new AppError('ingest_backlog', `${waiting} messages wait to be resolved (bound ${this.maxBacklogEvents}); retry in ${BACKLOG_RETRY_AFTER_SECONDS} s`,
        { retry_after_seconds: BACKLOG_RETRY_AFTER_SECONDS });
    }
    const head: LoggedRequest = {
      ws, at: Date.now(), count: record.count, events_only: record.eventsOnly, kind: record.kind, received: record.received,
      ...(record.drawn ? { drawn_ids: record.drawn } : {}),
    };
    // While the resolver keeps up, it takes these operations rather than map the body again.
    const kept = waiting < KEPT_OPERATIONS_EVENTS ? ops : undefined;
    await this.log.append(head, payload, kept).catch((err: unknown) => {
      if (!(err instanceof IngestLogUnwritable)) throw err;
      throw new AppError('unavailable', `${err.message}; retry in ${LOG_RETRY_AFTER_SECONDS} s`, { retry_after_seconds: LOG_RETRY_AFTER_SECONDS });
    });
  }

  status(ws?: string): IngestStatus {
    const { events, seconds, workspace_events } = this.log.backlog(Date.now(), ws);
    return {
      backlog_events: events, backlog_seconds: seconds, ...(workspace_events === undefined ? {} : { workspace_backlog_events: workspace_events }),
      appended_events: this.log.appendedEvents, resolved_events: this.log.resolvedEvents, set_aside: this.log.setAside, max_backlog_events: this.maxBacklogEvents,
    };
  }

  async close(): Promise<void> {
    await this.resolver.stop();
    await this.log.close();
    if (this.temporaryDir) await rm(this.temporaryDir, { recursive: true, force: true });
  }
}
