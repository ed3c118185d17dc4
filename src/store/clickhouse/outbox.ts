// The outbox between the control store and ClickHouse. A unit of work's analytical rows are
// written, as the NDJSON text each table takes, into the control store's analytics_outbox in the
// unit's own control transaction, with a token fixed there; after the commit they are inserted
// into ClickHouse under that token (a retried insert is stored once) and the outbox rows are
// deleted once ClickHouse has acknowledged them. What a failure or a crash leaves in between is
// inserted again: by the unit for a while, then by the sweeper (at open and periodically).
//
// Batches not yet acknowledged stay in memory too (`pending`): the reads of later units see them,
// whatever the order in which their inserts land.

import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { ClickHouseContext } from './context.js';
import { holdsLateLinks, reloadVisitorLinks } from './links.js';
import { refusedValue } from './refused.js';
import { EVENT_INSERT_SETTINGS } from './schema.js';
import type { ControlTx } from '../control/store.js';
import { AnalyticsDelayed } from '../errors.js';

/** A row as ClickHouse's JSONEachRow reads it: times as text, 64-bit versions as decimal strings. */
export type Row = Record<string, string | number | boolean | null | string[]>;

/** Tables whose rows the reads of a unit look at (latest page views, payment state). */
export const READ_TABLES = ['pageviews', 'subscriptions', 'invoices', 'payment_events'] as const;
export type ReadTable = (typeof READ_TABLES)[number];

export interface Batch {
  token: string;
  /** NDJSON text per table. */
  bodies: Map<string, string>;
  /** The rows of the tables units read, as objects. */
  rows: Map<ReadTable, Row[]>;
  /** Tables ClickHouse has acknowledged. */
  stored: Set<string>;
  /** An insert of this batch is under way (the unit's or the sweeper's). */
  inFlight: boolean;
}

export interface OutboxOptions {
  /** How long a unit retries its insert before answering with an error (the sweeper keeps trying). */
  insertRetryMs: number;
  /** How often the sweeper inserts what is left in the outbox. */
  sweepEveryMs: number;
}

/** Between retries of an insert: doubling from the first, at most the last. */
const BACKOFF_MS = [50, 2000] as const;

export const isReadTable = (table: string): table is ReadTable => (READ_TABLES as readonly string[]).includes(table);

export class Outbox {
  private readonly pending = new Map<string, Batch>();
  private readonly deliveries = new Set<Promise<void>>();
  private readonly closing = new AbortController();
  private readonly timer: NodeJS.Timeout;
  /** Resolves once the rows left by an earlier run are loaded (units wait for it: their reads see them). */
  readonly ready: Promise<void>;

  constructor(private readonly ctx: ClickHouseContext, private readonly options: OutboxOptions) {
    this.ready = this.load();
    this.ready.then(() => this.sweep(), () => undefined);
    this.timer = setInterval(() => this.sweep(), options.sweepEveryMs);
    this.timer.unref();
  }

  /** Writes a unit's batch into the outbox, inside its control transaction. */
  async save(tx: ControlTx, batch: Batch, at: Date): Promise<void> {
    for (const [table, body] of batch.bodies) {
      await tx.run('INSERT INTO analytics_outbox (token, table_name, body, created_at) VALUES ($1, $2, $3, $4)',
        [batch.token, table, body, at]);
    }
  }

  /** Makes a committed batch visible to the reads of later units. */
  add(batch: Batch): void {
    this.pending.set(batch.token, batch);
  }

  /** Rows of `table` committed by units whose insert ClickHouse has not acknowledged yet. */
  *rowsOf(table: ReadTable): Iterable<Row> {
    for (const batch of this.pending.values()) yield* batch.rows.get(table) ?? [];
  }

  /**
   * Inserts a committed batch, retrying within the unit's retry time; resolves once ClickHouse has
   * acknowledged every table and the outbox rows are gone. On a rejection the batch stays pending
   * for the sweeper.
   */
  deliver(batch: Batch): Promise<void> {
    return this.track(this.insertWithRetries(batch, performance.now() + this.options.insertRetryMs));
  }

  /** Inserts every pending batch no insert is under way for (one attempt each). */
  sweep(): Promise<void> {
    const attempts = [...this.pending.values()].filter((b) => !b.inFlight).map((b) => this.track(this.insertOnce(b)).catch((err: unknown) => {
      console.warn(`ClickHouse outbox: ${b.token} not stored yet (${err instanceof Error ? err.message.split('\n')[0] : String(err)}); retried every ${this.options.sweepEveryMs} ms`);
    }));
    return Promise.all(attempts).then(() => undefined);
  }

  /** Stops the sweeper and the retries; inserts under way finish. What is left is kept for the next start. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.closing.abort();
    await this.ready.catch(() => undefined);
    await Promise.allSettled([...this.deliveries]);
  }

  private track(delivery: Promise<void>): Promise<void> {
    this.deliveries.add(delivery);
    const done = () => this.deliveries.delete(delivery);
    delivery.then(done, done);
    return delivery;
  }

  private async load(): Promise<void> {
    const rows = await this.ctx.control.all('SELECT token, table_name, body FROM analytics_outbox ORDER BY created_at');
    for (const r of rows) {
      const token = r.token as string;
      const table = r.table_name as string;
      const body = r.body as string;
      let batch = this.pending.get(token);
      if (!batch) this.pending.set(token, (batch = { token, bodies: new Map(), rows: new Map(), stored: new Set(), inFlight: false }));
      batch.bodies.set(table, body);
      if (isReadTable(table)) batch.rows.set(table, body.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Row));
    }
  }

  private async insertWithRetries(batch: Batch, deadline: number): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.insertOnce(batch, deadline);
      } catch (err) {
        // A refused value is refused again: only the sweeper (and an operator) try it further.
        if (refusedValue(err) !== null || this.closing.signal.aborted) throw this.kept(err);
        const wait = Math.min(BACKOFF_MS[0] * 2 ** attempt, BACKOFF_MS[1]);
        if (performance.now() + wait > deadline) throw this.kept(err);
        await this.sleep(wait);
      }
    }
  }

  /**
   * The unit's control rows are committed and its analytical rows kept here: 503 saying so, not a
   * plain 500. ClickHouse's own message stays out of the answer (it can quote the statement).
   */
  private kept(err: unknown): AnalyticsDelayed {
    return new AnalyticsDelayed({ cause: err });
  }

  /**
   * One attempt. With a `deadline`, the unit's, the unit stops waiting then; the insert goes on
   * and the batch stays taken until it settles. Stopping the insert itself would not unqueue rows
   * ClickHouse already took (an async insert's queue; chDB runs on), and a sweep meanwhile would
   * insert them a second time.
   */
  private insertOnce(batch: Batch, deadline?: number): Promise<void> {
    if (batch.inFlight) return Promise.reject(new Error('an insert of this batch is under way'));
    batch.inFlight = true;
    const attempt = this.track(this.insertAll(batch).finally(() => { batch.inFlight = false; }));
    if (deadline === undefined) return attempt;
    attempt.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the insert is still under way at the unit\'s deadline')), Math.max(0, deadline - performance.now()));
    });
    return Promise.race([attempt, late]).finally(() => clearTimeout(timer));
  }

  private async insertAll(batch: Batch): Promise<void> {
    // Every table's insert settles before the batch is free again: a refusal of one while another
    // is still under way would let the next sweep insert that other one a second time.
    const inserts = await Promise.allSettled([...batch.bodies].filter(([table]) => !batch.stored.has(table)).map(async ([table, body]) => {
      await this.insert(table, body, `${batch.token}:${table}`);
      if (table === 'visitors' && holdsLateLinks(body)) await reloadVisitorLinks(this.ctx);
      batch.stored.add(table);
    }));
    const refused = inserts.find((insert) => insert.status === 'rejected');
    if (refused !== undefined) throw refused.reason;
    await this.ctx.control.run('DELETE FROM analytics_outbox WHERE token = $1', [batch.token]);
    this.pending.delete(batch.token);
  }

  /**
   * One table's rows with async_insert (ClickHouse batches small inserts) waiting for the flush, so
   * the acknowledgement means stored. Settings in the statement itself: chDB keeps per-query
   * settings on its session, and a stale deduplication token there would drop another insert.
   */
  private async insert(table: string, body: string, token: string): Promise<void> {
    const settings: Record<string, string | number> = {
      async_insert: 1, wait_for_async_insert: 1, async_insert_deduplicate: 1, insert_deduplication_token: token,
      ...(table === 'events' ? EVENT_INSERT_SETTINGS : {}),
      // A Distributed table acknowledges once the shard has the rows, not when it has queued them.
      ...(this.ctx.cluster === undefined ? {} : { distributed_foreground_insert: 1 }),
    };
    const clause = Object.entries(settings).map(([k, v]) => `${k} = ${typeof v === 'number' ? v : `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`}`).join(', ');
    const result = await this.ctx.client.exec({
      query: `INSERT INTO ${quote(this.ctx.database)}.${quote(table)} SETTINGS ${clause} FORMAT JSONEachRow`,
      values: Readable.from([body]),
    });
    // The (empty) answer holds the connection until it is read.
    await finished(result.stream.resume());
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.closing.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
  }
}

export const quote = (identifier: string): string => `\`${identifier.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
