// Resolution of the ingest log in the background (decisions §13): records in the order they were
// acknowledged, through the same Ingest calls as /v1/events, /v1/persons and /v1/pageviews. Records
// holding only events are resolved together (a workspace's events in large calls, made again
// record by record when one fails); any other record waits for those before it, so a workspace's
// identify, page, alias and track calls take effect in their order. A part that fails for itself is
// set aside with its error; an outage of a store is waited out, the record resolved again later.

import { AnalyticsDelayed, DependencyUnavailable } from '../../store/errors.js';
import type { AliasMerge } from '../alias.js';
import type { Ingest } from '../ingest.js';
import { wellFormedIn } from '../../well-formed.js';
import { messagesOf, sentAtOf } from '../segment/body.js';
import { mapMessages, MessageFault } from '../segment/messages.js';
import { scannedEvents } from '../segment/scanned-events.js';
import { kindOf, type LoggedRequest, type LogOperation, type MappedRequest, type OperationKind } from '../segment/operations.js';
import type { IngestLog, PendingRecord } from './ingest-log.js';

/**
 * Messages the resolver takes from the log at a time. A window's events and a call's rows stay
 * alive until they are stored: larger ones outlive young-generation collections, which then copy
 * and promote them. 10,000 (calls of 5,000) spent 7–11 µs an event in garbage collection, 2,500
 * 2.5–5.5, 1,000 as little but more in each call's fixed costs (bench/RESULTS.md, "Segment",
 * seventh session).
 */
const WINDOW_EVENTS = 2_500;
/**
 * The most events of one workspace's event-only records stored in one call: a transaction's fixed
 * costs (dedupe, identity lookups, appenders) are shared by more events than the group commit of
 * /v1/events gathers (it never splits a call).
 */
const EVENTS_PER_CALL = 2_500;
const OUTAGE_RETRY_MS = 1_000;

class Stopped extends Error {}

/** A call not made, as if it had failed (a single record is resolved alone). */
const FAILED = { err: null };

/** Segment page calls always name their visitor (anonymousId, or user:<userId>): no cookieless one is derived. */
const NAMED_VISITOR = { address: '', userAgent: '' };

/** Consecutive records that can be resolved together: runs of event-only records, any other record alone. */
function waves(records: PendingRecord[]): PendingRecord[][] {
  const out: PendingRecord[][] = [];
  for (const record of records) {
    const last = out.at(-1);
    if (last && record.events_only && last[0]!.events_only) last.push(record);
    else out.push([record]);
  }
  return out;
}

/** Consecutive operations of one kind. */
function runs(ops: LogOperation[]): { kind: OperationKind; ops: LogOperation[] }[] {
  const out: { kind: OperationKind; ops: LogOperation[] }[] = [];
  for (const op of ops) {
    const kind = kindOf(op);
    const last = out.at(-1);
    if (last?.kind === kind) last.ops.push(op);
    else out.push({ kind, ops: [op] });
  }
  return out;
}

export class LogResolver {
  private loop: Promise<void> | null = null;
  private stopping = false;
  private drainWaiters: (() => void)[] = [];

  constructor(
    private readonly log: IngestLog,
    private readonly ingest: Ingest,
    private readonly merge: AliasMerge,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Finishes the wave under way (an outage's retry is abandoned: its records replay at the next start); `start` resumes. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.log.wake();
    await this.loop;
    this.loop = null;
    this.stopping = false;
  }

  /** Resolves once nothing acknowledged is left to resolve. */
  drained(): Promise<void> {
    if (this.log.backlog().events === 0 && this.log.peek(1).length === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      await this.log.appended();
      const records = this.log.peek(WINDOW_EVENTS);
      try {
        for (const wave of waves(records)) {
          if (wave[0]!.events_only) await this.resolveEvents(wave);
          else await this.resolveRecord(wave[0]!);
          this.log.settle(wave.length);
        }
      } catch (err) {
        if (!(err instanceof Stopped)) this.onError(err);
        if (!(err instanceof Stopped)) await new Promise((r) => setTimeout(r, OUTAGE_RETRY_MS));
      }
      if (this.log.peek(1).length === 0) for (const wake of this.drainWaiters.splice(0)) wake();
    }
  }

  /**
   * Event-only records: each workspace's events in calls of up to EVENTS_PER_CALL, the workspaces
   * at once. A call that fails for itself is made again record by record, so that a record is only
   * ever set aside for itself.
   */
  private async resolveEvents(wave: PendingRecord[]): Promise<void> {
    const calls = new Map<string, { record: PendingRecord; ops: LogOperation[] }[][]>();
    const sizes = new Map<string, number>();
    for (const record of wave) {
      const ops = await this.operations(record);
      if (ops.length === 0) continue;
      const ofWorkspace = calls.get(record.ws) ?? calls.set(record.ws, [[]]).get(record.ws)!;
      const size = sizes.get(record.ws) ?? 0;
      const full = size > 0 && size + ops.length > EVENTS_PER_CALL;
      if (full) ofWorkspace.push([]);
      ofWorkspace.at(-1)!.push({ record, ops });
      sizes.set(record.ws, (full ? 0 : size) + ops.length);
    }
    await Promise.all([...calls].map(async ([ws, ofWorkspace]) => {
      for (const call of ofWorkspace) {
        const failed = call.length > 1 ? await this.attempt(() => this.apply(ws, 'event', call.flatMap((c) => c.ops))) : FAILED;
        if (failed !== null) for (const { record, ops } of call) await this.resolveRun(ws, record.at, 'event', ops);
      }
    }));
  }

  private async resolveRecord(record: PendingRecord): Promise<void> {
    const { ws, at } = record;
    for (const run of runs(await this.operations(record))) await this.resolveRun(ws, at, run.kind, run.ops);
  }

  /**
   * The record's operations: its body mapped again as when it arrived (the same receive time and
   * drawn message ids), read straight from its bytes when the acknowledging path's scan takes it. A message that no longer maps (the check on arrival let it through) is
   * set aside with its fault; an unreadable record, whole.
   */
  private async operations(record: PendingRecord): Promise<LogOperation[]> {
    if (record.kept !== undefined) return record.kept as LogOperation[];
    if ('ops' in record) return (record as PendingRecord & MappedRequest).ops;
    const { ws, at, kind, received, drawn_ids } = record as PendingRecord & LoggedRequest;
    const scanned = record.events_only ? scannedEvents(record.payload, kind, received, (index) => drawn_ids?.[index]) : null;
    if (scanned !== null) return scanned;
    const text = record.payload.toString('utf8');
    let messages: unknown[];
    let mapped: ReturnType<typeof mapMessages>;
    try {
      const body = wellFormedIn(text, JSON.parse(text) as Record<string, unknown>);
      messages = messagesOf(kind, body);
      mapped = mapMessages(kind, messages, received, sentAtOf(body), (index) => {
        const drawn = drawn_ids?.[index];
        if (drawn === undefined) throw new MessageFault('messageId', 'has no message id drawn when it arrived');
        return drawn;
      });
    } catch (err) {
      await this.setAside({ ws, at, body: text }, err);
      return [];
    }
    for (const { index, fault } of mapped.faults) await this.setAside({ ws, at, message: messages[index] }, new Error(`${fault.field}: ${fault.message}`));
    return mapped.ops;
  }

  private async setAside(entry: Record<string, unknown>, err: unknown): Promise<void> {
    await this.log.setAsideRecord({ ...entry, error: err instanceof Error ? err.message : String(err), set_aside_at: new Date().toISOString() });
    this.onError(err);
  }

  private async resolveRun(ws: string, at: number, kind: OperationKind, ops: LogOperation[]): Promise<void> {
    const failed = await this.attempt(() => this.apply(ws, kind, ops));
    if (failed !== null) await this.setAside({ ws, at, ops }, failed.err);
  }

  /** Runs `apply` until it is done, waiting out an outage of a store; what made it fail for itself, or null. */
  private async attempt(apply: () => Promise<void>): Promise<{ err: unknown } | null> {
    for (;;) {
      try {
        await apply();
        return null;
      } catch (err) {
        if (err instanceof AnalyticsDelayed) return null; // stored; the analytical rows follow from the outbox
        if (!(err instanceof DependencyUnavailable)) return { err };
        if (this.stopping) throw new Stopped();
        await new Promise((r) => setTimeout(r, OUTAGE_RETRY_MS));
      }
    }
  }

  private async apply(ws: string, kind: OperationKind, ops: LogOperation[]): Promise<void> {
    switch (kind) {
      case 'event':
        await this.ingest.events(ws, ops.map((op) => (op as Extract<LogOperation, { event: unknown }>).event));
        return;
      case 'pageview':
        await this.ingest.pageviews(ws, ops.map((op) => (op as Extract<LogOperation, { pageview: unknown }>).pageview), NAMED_VISITOR);
        return;
      case 'person':
        for (const op of ops) await this.ingest.person(ws, (op as Extract<LogOperation, { person: unknown }>).person);
        return;
      case 'alias':
        for (const op of ops) await this.merge.mergeAlias(ws, (op as Extract<LogOperation, { alias: unknown }>).alias);
    }
  }
}
