// Units of work on ClickHouse. The control transaction runs first; the unit's analytical rows are
// buffered while it runs and written into the outbox (outbox.ts) in that same transaction, then
// inserted into ClickHouse once it has committed: ClickHouse first would keep rows of persons a
// rollback never created. A unit resolves once ClickHouse has acknowledged its rows.
//
// Reads inside a unit (latest page views, payment state) see ClickHouse, the rows of committed
// units not acknowledged yet, and the unit's own rows. Units run one at a time (the control
// store's write lock), so a read-then-write decides on everything committed before it. State rows
// carry their version, so the answer does not depend on the order in which inserts land:
// subscriptions and invoices by the notification's time (ties: the later arrival), everything else
// by a clock that only moves forward.

import { randomUUID } from 'node:crypto';
import type { PropertyCatalog } from '../../criteria/index.js';
import { stringifyWellFormed, wellFormedIn } from '../../well-formed.js';
import {
  type AnalyticsWrites, type ChannelFields, type EventRecord, type PageviewRecord, type PaymentEventKind, type PaymentEventState,
  type PaymentStateChanges, type PaymentStateKeys, RefusedValue, type Staged, type StoredPaymentState, type UnitOfWork,
} from '../analytics.js';
import type { CustomerRecord, StoredPayment } from '../control/payments.js';
import { type PersonRecord, personTraits, type VisitorRecord } from '../control/people.js';
import { columnOf, type ControlTx } from '../control/store.js';
import { propertyCatalog, recordEventNames, recordPropertyPaths } from '../control/properties.js';
import type { ControlMirror } from '../mirror.js';
import type { ExchangeRate } from '../control/rates.js';
import { RisingClock } from './clock.js';
import type { ClickHouseContext } from './context.js';
import { type Batch, isReadTable, Outbox, type OutboxOptions, quote, type ReadTable, type Row } from './outbox.js';
import { refusedValue } from './refused.js';
import { CLUSTER_QUERY_SETTINGS, propertyObjects } from './schema.js';

export interface UnitsOptions extends Partial<OutboxOptions> {
  /** Forgets a deleted audience's snapshots in ClickHouse, once its control rows are gone. */
  dropSnapshots?: (ws: string, audienceId: string) => Promise<void>;
}

const DEFAULTS: OutboxOptions = { insertRetryMs: 10_000, sweepEveryMs: 30_000 };

/** Year 0 (ISO 8601 allows it) reads back as another time in ClickHouse: refused rather than moved. */
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');

/** An instant as DateTime64(6) text, the way ClickHouse prints it back (so texts compare as times). */
function chTime(at: Date): string {
  if (at.getTime() < FIRST_INSTANT) throw new RefusedValue(`${at.toISOString()} is before year 1, which ClickHouse cannot store`);
  return `${at.toISOString().replace('T', ' ').replace('Z', '')}000`;
}
const fromChTime = (text: string) => new Date(`${text.replace(' ', 'T').slice(0, 23)}Z`);

/** Versions of a subscription or invoice: its notification's time in ms, then this many arrivals of the same ms. */
const TIES = 1_000_000n;

/** Tables whose versions come from the units' version clock. */
const CLOCKED = ['visitors', 'persons', 'payment_customers', 'payment_events', 'payments'];

/** Moves the version clock past every version stored, so a restart on a clock that went back still counts up. */
async function versionsFrom(ctx: ClickHouseContext, versions: RisingClock): Promise<void> {
  const highest = CLOCKED.map((name) => `(SELECT max(version) FROM ${table(ctx, name)})`).join(', ');
  const [row] = await select(ctx, `SELECT toString(greatest(${highest})) AS version`, {});
  versions.movePast(BigInt(row!.version as string));
}

/**
 * The version of a subscription or invoice announced at `created`, or null when the stored one is
 * newer (it stays). Announced the same millisecond: the later arrival wins, as on DuckDB.
 */
function stateVersion(created: Date, stored: Row | undefined): string | null {
  const base = BigInt(created.getTime()) * TIES;
  if (!stored) return String(base);
  const version = BigInt(stored.version as string);
  if (version / TIES > BigInt(created.getTime())) return null;
  return String(version >= base ? version + 1n : base);
}

/** The row of highest version per key. */
function newestByKey(rows: Iterable<Row>, key: (r: Row) => string): Map<string, Row> {
  const newest = new Map<string, Row>();
  for (const r of rows) {
    const k = key(r);
    const seen = newest.get(k);
    if (!seen || BigInt(r.version as string) > BigInt(seen.version as string)) newest.set(k, r);
  }
  return newest;
}

/**
 * Refuses properties ClickHouse's JSON type cannot store: two keys of one object that differ only
 * by a dot and its escape (`a.b` and `a%2Eb`) are one path there (json_type_escape_dots_in_keys).
 */
function checkPropertyKeys(value: unknown): void {
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (!Array.isArray(v)) {
      const paths = new Map<string, string>();
      for (const key of Object.keys(v)) {
        const path = key.replaceAll('.', '%2E');
        const other = paths.get(path);
        if (other !== undefined) {
          throw new RefusedValue(`the property keys ${JSON.stringify(other)} and ${JSON.stringify(key)} are one path in ClickHouse (a dot in a key is stored as %2E)`);
        }
        paths.set(path, key);
      }
    }
    stack.push(...Object.values(v));
  }
}

/** The value the engine refused, as RefusedValue (the control engine for control writes, ClickHouse for reads); else `err`. */
function asRefusal(ctx: ClickHouseContext, err: unknown): unknown {
  if (err instanceof RefusedValue) return err;
  const reason = ctx.control.dialect.refusal(err) ?? refusedValue(err);
  return reason === null ? err : new RefusedValue(reason);
}

async function select(ctx: ClickHouseContext, query: string, params: Record<string, unknown>): Promise<Row[]> {
  try {
    const result = await ctx.client.query({
      query, query_params: params, format: 'JSONEachRow',
      ...(ctx.cluster === undefined ? {} : { clickhouse_settings: CLUSTER_QUERY_SETTINGS }),
    });
    return await result.json<Row>();
  } catch (err) {
    throw asRefusal(ctx, err);
  }
}

const table = (ctx: ClickHouseContext, name: string) => `${quote(ctx.database)}.${quote(name)}`;

/**
 * The analytical writes of one unit, buffered until its control transaction commits, with the
 * copies of the control rows it changes (the control writes call them: ControlMirror).
 */
class ClickHouseWrites implements AnalyticsWrites, ControlMirror {
  private readonly lines = new Map<string, string[]>();
  private readonly rows = new Map<ReadTable, Row[]>();
  private readonly outboxRows = new Map<ReadTable, Promise<Row[]>>();
  /** Audiences deleted by the unit: their snapshots are dropped after the commit. */
  readonly droppedAudiences: [ws: string, audienceId: string][] = [];
  /** Current rows of subscriptions and invoices read by readPaymentState (`table:id`): the versions written next build on them. */
  private readonly stateRows = new Map<string, Row>();

  constructor(private readonly ctx: ClickHouseContext, private readonly tx: ControlTx, private readonly outbox: Outbox,
    private readonly versions: RisingClock) {}

  /** A version above every one given before, in ns of the clock. */
  private version(): string {
    return String(this.versions.next());
  }

  /** The unit's rows as a batch for the outbox; null when it wrote none. */
  seal(): Batch | null {
    if (this.lines.size === 0) return null;
    const bodies = new Map([...this.lines].map(([name, lines]) => [name, `${lines.join('\n')}\n`]));
    return { token: randomUUID(), bodies, rows: this.rows, stored: new Set(), inFlight: false };
  }

  private line(name: string, text: string): void {
    const lines = this.lines.get(name);
    if (lines) lines.push(text);
    else this.lines.set(name, [text]);
  }

  /** Buffers a row; every string well-formed (ClickHouse refuses a lone surrogate). */
  private add(name: string, row: Row): void {
    const json = JSON.stringify(row);
    const fixed = wellFormedIn(json, row);
    this.line(name, fixed === row ? json : JSON.stringify(fixed));
    if (isReadTable(name)) {
      const rows = this.rows.get(name);
      if (rows) rows.push(fixed);
      else this.rows.set(name, [fixed]);
    }
  }

  /** Rows of `name` committed but not acknowledged yet (this process's), and the unit's own. */
  private unacknowledged(name: ReadTable, match: (r: Row) => boolean): Row[] {
    return [...this.outbox.rowsOf(name), ...(this.rows.get(name) ?? [])].filter(match);
  }

  /**
   * Payment state decided from rows not acknowledged yet: with nodes sharing the control store,
   * every node's (the shared outbox, read in this transaction), so a decision never misses what
   * another node committed a moment before; otherwise this process's. (Page views' channel
   * inheritance keeps reading this process's: a moment's lag there is harmless and the rows many.)
   */
  private async unacknowledgedPayments(name: 'subscriptions' | 'invoices' | 'payment_events', match: (r: Row) => boolean): Promise<Row[]> {
    if (!this.ctx.control.shared) return this.unacknowledged(name, match);
    return [...await this.sharedOutbox(name), ...(this.rows.get(name) ?? [])].filter(match);
  }

  /** Every node's unacknowledged rows of a table, read once per unit (its transaction's snapshot does not change). */
  private sharedOutbox(name: ReadTable): Promise<Row[]> {
    let rows = this.outboxRows.get(name);
    if (!rows) {
      rows = this.tx.all('SELECT body FROM analytics_outbox WHERE table_name = $1', [name]).then((bodies) =>
        bodies.flatMap((b) => (b.body as string).split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Row)));
      this.outboxRows.set(name, rows);
    }
    return rows;
  }

  async appendEvents(ws: string, events: EventRecord[], receivedAt: Date): Promise<void> {
    const received = chTime(receivedAt);
    for (const e of events) {
      const properties = JSON.parse(e.properties) as unknown;
      checkPropertyKeys(properties);
      const head = stringifyWellFormed({
        workspace_id: ws, event_id: e.event_id, message_id: e.message_id, event_name: e.event_name, ts: chTime(e.ts),
        person_key: e.person_key ?? 0, visitor_key: e.visitor_key ?? 0, property_objects: propertyObjects(properties), received_at: received,
      });
      // The properties as the text stored (already well-formed), so ClickHouse reads the document as sent.
      this.line('events', `${head.slice(0, -1)},"properties":${e.properties}}`);
    }
  }

  recordPropertyPaths(ws: string, paths: { event_name: string; path: string }[]): Promise<void> {
    return recordPropertyPaths(this.tx, ws, paths);
  }

  recordEventNames(ws: string, names: string[]): Promise<void> {
    return recordEventNames(this.tx, ws, names);
  }

  async latestPageviews(ws: string, visitorKeys: number[]): Promise<Map<number, ChannelFields & { ts: Date }>> {
    const latest = new Map<number, Row>();
    if (visitorKeys.length === 0) return new Map();
    const stored = await select(this.ctx, `SELECT visitor_key, latest AS ts, c.1 AS source, c.2 AS medium, c.3 AS campaign, c.4 AS channel,
        c.5 AS channel_category
      FROM (SELECT visitor_key, toString(max(ts)) AS latest, argMax(tuple(source, medium, campaign, channel, channel_category), ts) AS c
        FROM ${table(this.ctx, 'pageviews')} WHERE workspace_id = {ws:String} AND visitor_key IN {keys:Array(Int64)} GROUP BY visitor_key)`,
    { ws, keys: visitorKeys });
    const wanted = new Set(visitorKeys);
    const unacknowledged = this.unacknowledged('pageviews', (r) => r.workspace_id === ws && wanted.has(Number(r.visitor_key)));
    for (const r of [...stored, ...unacknowledged]) {
      const key = Number(r.visitor_key);
      const seen = latest.get(key);
      if (!seen || (r.ts as string) > (seen.ts as string)) latest.set(key, r);
    }
    return new Map([...latest].map(([key, r]) => [key, {
      ts: fromChTime(r.ts as string),
      source: r.source as string | null,
      medium: r.medium as string | null,
      campaign: r.campaign as string | null,
      channel: r.channel as string,
      channel_category: r.channel_category as string,
    }]));
  }

  async appendPageviews(ws: string, rows: PageviewRecord[]): Promise<void> {
    for (const r of rows) {
      this.add('pageviews', {
        workspace_id: ws, pageview_id: r.pageview_id, visitor_key: r.visitor_key, ts: chTime(r.ts), url: r.url, referrer: r.referrer,
        title: r.title, host: r.host, path: r.path, referrer_host: r.referrer_host, source: r.source, medium: r.medium,
        campaign: r.campaign, channel: r.channel, channel_category: r.channel_category,
      });
    }
  }

  async persons(ws: string, persons: PersonRecord[]): Promise<void> {
    // A row replaces the whole mirror row: it carries the traits as merged in the control store.
    const traits = await personTraits(this.tx, ws, persons.map((p) => p.person_key));
    for (const p of persons) {
      this.add('persons', {
        workspace_id: ws, person_key: p.person_key, person_id: p.person_id, external_id: p.external_id, email: p.email,
        traits: traits.get(p.person_key) ?? '{}', version: this.version(),
      });
    }
  }

  async visitors(ws: string, visitors: VisitorRecord[]): Promise<void> {
    for (const v of visitors) {
      this.add('visitors', { workspace_id: ws, visitor_key: v.visitor_key, visitor_id: v.visitor_id, person_key: v.person_key ?? 0, version: this.version() });
    }
  }

  /** Whom each customer's rows belong to: its person, else its visitor's (criteria read both). */
  async customers(ws: string, customers: CustomerRecord[]): Promise<void> {
    for (const c of customers) {
      this.add('payment_customers', {
        workspace_id: ws, customer_id: c.customer_id, person_key: c.person_key ?? 0, visitor_key: c.visitor_key ?? 0, version: this.version(),
      });
    }
  }

  /** The current rows of these keys of a payment table: ClickHouse's, or newer ones not acknowledged yet. */
  private async currentRows(name: 'subscriptions' | 'invoices', ws: string, key: string, ids: string[], columns: string[]): Promise<Map<string, Row>> {
    if (ids.length === 0) return new Map();
    const stored = await select(this.ctx, `SELECT ${[key, ...columns].join(', ')}, toString(version) AS version
      FROM ${table(this.ctx, name)} WHERE workspace_id = {ws:String} AND ${key} IN {ids:Array(String)}
      ORDER BY version DESC LIMIT 1 BY ${key}`, { ws, ids });
    const wanted = new Set(ids);
    const rows = [...stored, ...await this.unacknowledgedPayments(name, (r) => r.workspace_id === ws && wanted.has(r[key] as string))];
    const current = newestByKey(rows, (r) => r[key] as string);
    for (const [id, r] of current) this.stateRows.set(`${name}:${id}`, r);
    return current;
  }

  async readPaymentState(ws: string, keys: PaymentStateKeys): Promise<StoredPaymentState> {
    const created = (r: Row) => new Date(Number(BigInt(r.version as string) / TIES));
    const subscriptions = await this.currentRows('subscriptions', ws, 'subscription_id', keys.subscriptions, []);
    const invoices = await this.currentRows('invoices', ws, 'invoice_id', keys.invoices, ['customer_id', 'toString(paid_at) AS paid_at']);
    const state: StoredPaymentState = {
      subscriptions: new Map([...subscriptions].map(([id, r]) => [id, { created: created(r) }])),
      invoices: new Map([...invoices].map(([id, r]) => [id, {
        created: created(r), customer_id: r.customer_id as string, paid_at: r.paid_at === null ? null : fromChTime(r.paid_at as string),
      }])),
      events: [],
    };
    if (keys.events.length === 0 && keys.firstPaidOf.length === 0) return state;
    // Kinds hold no colon: `kind:object` names one (kind, object).
    const events = new Set(keys.events.map((e) => `${e.kind}:${e.object_id}`));
    const customers = new Set(keys.firstPaidOf);
    const stored = await select(this.ctx, `SELECT workspace_id, kind, customer_id, object_id, toString(ts) AS ts, amount, currency, deleted,
        toString(version) AS version
      FROM ${table(this.ctx, 'payment_events')} WHERE workspace_id = {ws:String}
        AND (concat(kind, ':', object_id) IN {events:Array(String)} OR kind = 'first_paid_invoice' AND customer_id IN {customers:Array(String)})
      ORDER BY version DESC LIMIT 1 BY kind, customer_id, object_id`, { ws, events: [...events], customers: [...customers] });
    const unacknowledged = await this.unacknowledgedPayments('payment_events', (r) => r.workspace_id === ws
      && (events.has(`${r.kind as string}:${r.object_id as string}`) || (r.kind === 'first_paid_invoice' && customers.has(r.customer_id as string))));
    const current = newestByKey([...stored, ...unacknowledged], (r) => `${r.kind as string}\0${r.customer_id as string}\0${r.object_id as string}`);
    state.events = [...current.values()].filter((r) => Number(r.deleted) === 0).map((r) => ({
      kind: r.kind as PaymentEventKind, customer_id: r.customer_id as string, object_id: r.object_id as string, ts: fromChTime(r.ts as string),
      amount: r.amount === null ? null : Number(r.amount), currency: r.currency as string | null,
    }));
    return state;
  }

  async writePaymentState(ws: string, changes: PaymentStateChanges): Promise<void> {
    // Two units deciding one customer's first paid invoice on two nodes: both write the customer's
    // row, so the second waits for the first and runs again from a snapshot that has its rows.
    const deciding = [...changes.removed, ...changes.added].filter((e) => e.kind === 'first_paid_invoice').map((e) => e.customer_id);
    if (this.ctx.control.shared && deciding.length > 0) {
      await this.tx.run(`UPDATE payment_customers SET updated_at = updated_at
        WHERE workspace_id = $1 AND customer_id IN (SELECT ${this.tx.dialect.texts('$2')})`, [ws, columnOf([...new Set(deciding)])]);
    }
    for (const { state: s, created } of changes.subscriptions) {
      const version = stateVersion(created, this.stateRows.get(`subscriptions:${s.subscription_id}`));
      if (version === null) continue;
      this.add('subscriptions', {
        workspace_id: ws, subscription_id: s.subscription_id, customer_id: s.customer_id, status: s.status, price_id: s.price_id,
        product_id: s.product_id, interval: s.interval, amount: s.amount, currency: s.currency, cancel_at_period_end: s.cancel_at_period_end,
        created_at: chTime(s.created_at), version,
      });
    }
    for (const { state: i, created } of changes.invoices) {
      const version = stateVersion(created, this.stateRows.get(`invoices:${i.invoice_id}`));
      if (version === null) continue;
      this.add('invoices', {
        workspace_id: ws, invoice_id: i.invoice_id, customer_id: i.customer_id, subscription_id: i.subscription_id, status: i.status,
        amount_due: i.amount_due, amount_paid: i.amount_paid, currency: i.currency, created_at: chTime(i.created_at),
        paid_at: i.paid_at === null ? null : chTime(i.paid_at), version,
      });
    }
    // Withdrawn first: an event removed and added again ends with the added row's higher version.
    for (const e of changes.removed) this.addEvent(ws, e, 1);
    for (const e of changes.added) this.addEvent(ws, e, 0);
  }

  private addEvent(ws: string, e: PaymentEventState, deleted: 0 | 1): void {
    this.add('payment_events', {
      workspace_id: ws, kind: e.kind, customer_id: e.customer_id, object_id: e.object_id, ts: chTime(e.ts), amount: e.amount, currency: e.currency,
      version: this.version(), deleted,
    });
  }

  /** What the revenue report's one-time payments read: an invoice's payment counts the invoice instead, if stored. */
  async payments(ws: string, payments: StoredPayment[]): Promise<void> {
    for (const p of payments) {
      this.add('payments', {
        workspace_id: ws, payment_id: p.payment_id, customer_id: p.customer_id, amount: p.amount, currency: p.currency,
        paid_at: p.paid_at === null ? null : chTime(p.paid_at), invoice_id: p.invoice_id, version: this.version(),
      });
    }
  }

  async exchangeRates(ws: string, rates: ExchangeRate[]): Promise<void> {
    for (const r of rates) this.add('exchange_rates', { workspace_id: ws, currency: r.currency, day: r.day, per_eur: r.perEur, version: this.version() });
  }

  async dropSnapshots(ws: string, audienceId: string): Promise<void> {
    this.droppedAudiences.push([ws, audienceId]);
  }

  /** Events are rewritten by a mutation once the merge has committed (ClickHouseAnalytics.finishPersonMove). */
  async movePersonEvents(): Promise<void> {}
}

export class ClickHouseUnits {
  private readonly outbox: Outbox;
  /** The versions of the rows this store writes, in ns of the clock. */
  private readonly versions = new RisingClock(1_000_000n);
  /** The version clock moved past the stored versions; null until it has been (a failure is tried again). */
  private clock: Promise<void> | null = null;

  constructor(readonly ctx: ClickHouseContext, private readonly options: UnitsOptions = {}) {
    this.outbox = new Outbox(ctx, { insertRetryMs: options.insertRetryMs ?? DEFAULTS.insertRetryMs, sweepEveryMs: options.sweepEveryMs ?? DEFAULTS.sweepEveryMs });
    this.clockReady().catch(() => undefined);
  }

  private clockReady(): Promise<void> {
    this.clock ??= versionsFrom(this.ctx, this.versions).catch((err: unknown) => {
      this.clock = null;
      throw err;
    });
    return this.clock;
  }

  async unit<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<T> {
    const staged = await this.stage(fn);
    await staged.stored;
    return staged.value;
  }

  async stage<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<Staged<T>> {
    // Units start once the outbox is loaded (their reads see what it holds) and the clock is set.
    await Promise.all([this.outbox.ready, this.clockReady()]);
    const { value, batch, dropped } = await this.ctx.control.transaction(async (tx) => {
      const writes = new ClickHouseWrites(this.ctx, tx, this.outbox, this.versions);
      const result = await fn({ control: tx, mirror: writes, analytics: writes });
      const sealed = writes.seal();
      if (sealed) {
        // The token is fixed here, with the rows: a retried insert is the same insert.
        await this.outbox.save(tx, sealed, new Date());
        tx.afterCommit(() => this.outbox.add(sealed));
      }
      return { value: result, batch: sealed, dropped: writes.droppedAudiences };
    }).catch((err: unknown) => {
      throw asRefusal(this.ctx, err);
    });
    const stored = this.store(batch, dropped);
    // The caller takes `stored` after this resolves; until then a rejection is not unhandled.
    stored.catch(() => undefined);
    return { value, stored };
  }

  private async store(batch: Batch | null, dropped: [string, string][]): Promise<void> {
    if (batch) await this.outbox.deliver(batch);
    for (const [ws, audienceId] of dropped) {
      // Snapshots of a deleted audience are never read again: a failure leaves rows nobody points at.
      await this.options.dropSnapshots?.(ws, audienceId).catch((err: unknown) => {
        console.warn(`ClickHouse: the snapshots of deleted audience ${audienceId} stay (${err instanceof Error ? err.message : String(err)})`);
      });
    }
  }

  /** Property paths live in the control store, written by the units' control transactions. */
  propertyCatalog(ws: string): Promise<PropertyCatalog> {
    return propertyCatalog(this.ctx.control, ws);
  }

  /** Inserts what is left in the outbox now (the sweeper does it periodically). */
  sweep(): Promise<void> {
    return this.outbox.sweep();
  }

  /** Stops the sweeper and the retries, after the inserts under way and the clock's read. */
  async close(): Promise<void> {
    // Started at construction: an app closed before any unit ran has not waited for it (chDB
    // refuses the next session while a closed one still runs a query).
    await this.clock?.catch(() => undefined);
    await this.outbox.close();
  }
}
