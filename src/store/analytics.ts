// The analytical store: what the features need of the side that holds events, page views, payment
// events, visitor links, subscription and invoice state and audience snapshots, and of every query
// over them (estimate, members, refresh, explain). One implementation per engine (store/duckdb/,
// store/clickhouse/), chosen once by store/open.ts; features import this interface, never an
// engine. Queries take the criteria plan: the query layer (store/query/) prints it in the engine's
// dialect and runs it through the engine's driver.
//
// The other side of the seam is the control store (store/control/): workspaces, keys, persons and
// the visitor registry, customers' link states, audience definitions and deliveries, read and
// written in transactions. A write that touches both sides is a unit of work (`unit`).

import type { Breakdown, CompiledQuery, LiftPlan, LiftRow, PropertyCatalog, ReportPlan, Sample, SetPlan, SplitPlacement, SplitRoute } from '../criteria/index.js';
import type { Money } from './control/payments.js';
import type { ControlTx } from './control/store.js';
import type { InvoiceRow, PaymentEventRow, SubscriptionRow } from './layout.js';
import type { ControlMirror } from './mirror.js';
import type { DeliveryRow, SnapshotResult } from './types.js';

export interface EventRecord {
  event_id: string;
  message_id: string | null;
  event_name: string;
  ts: Date;
  person_key: number | null;
  visitor_key: number | null;
  /** The properties object as JSON text with every string well-formed (stringifyWellFormed). */
  properties: string;
  /** The same properties as parsed (strings not yet made well-formed): what typed storage reads. */
  payload: unknown;
}

export interface ChannelFields {
  source: string | null;
  medium: string | null;
  campaign: string | null;
  channel: string;
  channel_category: string;
}

export interface PageviewRecord extends ChannelFields {
  pageview_id: string;
  visitor_key: number;
  ts: Date;
  url: string;
  referrer: string | null;
  title: string | null;
  host: string;
  path: string;
  referrer_host: string | null;
}

/** A visitor newly linked to a person, or moved to another one. */
export interface VisitorLink {
  workspaceId: string;
  visitorId: string;
  visitorKey: number;
  personKey: number;
  /** The visitor is new in this unit of work: nothing stored before it (a deferred customer) names it. */
  created: boolean;
}

export type PaymentEventKind = PaymentEventRow['kind'];

/** Current state of a subscription / an invoice: the export layout's rows, and when the invoice was paid. */
export type SubscriptionState = SubscriptionRow;
export type InvoiceState = InvoiceRow & { paid_at: Date | null };

/** A lifecycle event, live (not withdrawn): one per (kind, object), first_paid_invoice one per customer. */
export interface PaymentEventState extends Money {
  kind: PaymentEventKind;
  customer_id: string;
  object_id: string;
  ts: Date;
}

/** Which payment state a group reads: subscriptions and invoices by id, events by (kind, object) and customers' first paid invoices. */
export interface PaymentStateKeys {
  subscriptions: string[];
  invoices: string[];
  events: { kind: PaymentEventKind; object_id: string }[];
  firstPaidOf: string[];
}

/** The stored state of a subscription or invoice: when the notification it came from was created (null: not recorded). */
export interface StoredState {
  created: Date | null;
}

export interface StoredPaymentState {
  subscriptions: Map<string, StoredState>;
  invoices: Map<string, StoredState & { customer_id: string; paid_at: Date | null }>;
  /** The live events of the keys asked for. */
  events: PaymentEventState[];
}

/** A group's decisions: subscriptions and invoices to insert or overwrite (`stored`: one existed), events removed and added. */
export interface PaymentStateChanges {
  subscriptions: { state: SubscriptionState; created: Date; stored: boolean }[];
  /** The invoice as it is to be stored (a payment time known before is kept in `paid_at`). */
  invoices: { state: InvoiceState; created: Date; stored: boolean }[];
  removed: PaymentEventState[];
  added: PaymentEventState[];
}

/** A member's public ids: a person's, or an anonymous visitor's. */
export interface Member {
  person_id: string | null;
  visitor_id: string | null;
  external_id: string | null;
  email: string | null;
}

/** A member of a snapshot with its profile (a person's key, or minus an anonymous visitor's). */
export interface MemberRow extends Member {
  profile: number;
}

export interface DiffMember extends MemberRow {
  change: 'added' | 'removed';
  /** Its split, set by the deliverer when the audience has splits (audiences/splits.ts). */
  split?: string;
}

export interface SnapshotInput {
  ws: string;
  audienceId: string;
  at: Date;
  nextRefreshAt: Date;
  /** The audience's criteria planned at `at`. */
  plan: SetPlan;
  /** Destinations that receive this snapshot's diff. */
  destinationIds: string[];
  limitMs: number;
  /** Aborted when the service stops: the refresh is interrupted and rolled back. */
  signal?: AbortSignal;
}

/** More estimates are under way than the queue allows; retrying after `retryAfterMs` finds room. */
export class EstimatesBusy extends Error {
  constructor(readonly retryAfterMs: number) {
    super('too many estimates at once');
  }
}

/** The engine refused a value of the input (malformed JSON, a cast, a number out of range): the input's fault. */
export class RefusedValue extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * What the estimates have done since the store opened (tests and operators read it). A place to run
 * is a connection on DuckDB, a slot of the store's own queue on ClickHouse.
 */
export interface EstimateStats {
  /** Estimates running their query now. */
  running: number;
  /** Estimates under way without a place to run: before their query, or waiting for one. */
  waiting: number;
  /** Queries of estimates that got a place and ran (an estimate past its exact count runs a sampled one too). */
  started: number;
  /** Queries of estimates whose budget ran out before they got a place: they never ran. */
  expired: number;
  /** Estimates turned away at once because the queue was full. */
  refused: number;
}

/**
 * An estimate's place, taken when its request starts: its budget runs from then, and a full queue
 * refuses it before any work. End it on every path.
 */
export interface EstimateTurn {
  /** When the budget runs out (a performance.now() time). */
  readonly deadline: number;
  /**
   * The number of profiles of `plan` in the workspace (of its sampled part, with a sample) within
   * what is left of the budget, or before `by` when that is earlier; null past it.
   */
  count(plan: SetPlan, workspaceId: string, options?: { sample?: Sample; by?: number }): Promise<number | null>;
  /** The profiles of `plan` per value of `breakdown` (the most frequent BREAKDOWN_TOP) and in all; null past the budget (or `by`). */
  breakdown(plan: SetPlan, workspaceId: string, breakdown: Breakdown, options?: { by?: number }): Promise<BreakdownCounts | null>;
  /** The profiles in any of `plans` per membership mask (bit i set: in plans[i]); null past the budget. */
  overlap(plans: SetPlan[], workspaceId: string): Promise<Map<number, number> | null>;
  /** The revenue report's figures within what is left of the budget; null past it. */
  revenue(report: ReportPlan, workspaceId: string): Promise<RevenueRow[] | null>;
  /** The earliest money row of the report's range without an exchange rate to its currency (none: empty); null past the budget. */
  missingRate(report: ReportPlan, workspaceId: string): Promise<RateGap[] | null>;
  /** The lift report's rows within what is left of the budget; null past it. */
  lift(plan: LiftPlan, workspaceId: string): Promise<LiftRow[] | null>;
  /** Gives the place back (again is harmless). */
  end(): void;
}

/** An audience's size and its most frequent values of a breakdown, most first. */
export interface BreakdownCounts {
  total: number;
  top: { value: string | null; count: number }[];
}

/**
 * One row of a revenue report, at one of four levels (grouping(bucket, group, currency)): 0 the
 * money of a bucket, group and currency; 1 the counts of a bucket and group; 6 the money of a
 * currency over the range; 7 the counts over the range. Amounts in minor units.
 */
export interface RevenueRow {
  level: 0 | 1 | 6 | 7;
  bucket: string | null;
  group: string | null;
  currency: string | null;
  paid: number;
  refunded: number;
  refund_count: number;
  paying: number;
  new_paying: number;
}

/** A currency without an exchange rate on a day (`YYYY-MM-DD`) of a revenue report's range. */
export interface RateGap {
  currency: string;
  day: string;
}

export interface FirstTouchChannels {
  visitors: Map<number, string>;
  persons: Map<number, string>;
}

/**
 * The analytical writes of one unit of work, with the reads they depend on. Rows written here are
 * stored when the unit resolves, and kept only if the unit's control transaction commits.
 */
export interface AnalyticsWrites {
  appendEvents(ws: string, events: EventRecord[], receivedAt: Date): Promise<void>;
  /** Records property paths seen on event names (the compiler's payload whitelist); known ones stay. */
  recordPropertyPaths(ws: string, paths: { event_name: string; path: string }[]): Promise<void>;
  /** Records event names received, with properties or not (for the compile's unknown_event warning); known ones stay. */
  recordEventNames(ws: string, names: string[]): Promise<void>;
  /** Each visitor's latest stored page view: its time and channel fields. */
  latestPageviews(ws: string, visitorKeys: number[]): Promise<Map<number, ChannelFields & { ts: Date }>>;
  appendPageviews(ws: string, rows: PageviewRecord[]): Promise<void>;
  /** The stored payment state a group of notifications reads (attribution/group.ts decides on it in memory). */
  readPaymentState(ws: string, keys: PaymentStateKeys): Promise<StoredPaymentState>;
  /** What a group of notifications changed in it, as decided: rows to write, lifecycle events gone and new. */
  writePaymentState(ws: string, changes: PaymentStateChanges): Promise<void>;
  /**
   * Forgets an audience's snapshots: members, diffs, work lists and the control store's record of
   * them. Called in the unit that deletes the audience, before its deliveries go (an engine finds
   * the work lists through them).
   */
  dropSnapshots(ws: string, audienceId: string): Promise<void>;
  /**
   * A person merge (people/merge.ts): the events of person `fromKey` become `intoKey`'s in this
   * unit, where the engine can change stored rows in it (DuckDB); elsewhere finishPersonMove does.
   */
  movePersonEvents(ws: string, fromKey: number, intoKey: number): Promise<void>;
}

/**
 * One unit of work: control rows on `control`, analytical rows through `analytics`. The engine's
 * copies of control rows (`mirror`) are written by the control writes that change them
 * (control/people.ts, control/payments.ts take the unit), never by a feature.
 */
export interface UnitOfWork {
  control: ControlTx;
  mirror: ControlMirror;
  analytics: AnalyticsWrites;
}

/** A unit of work whose control transaction has committed. */
export interface Staged<T> {
  value: T;
  /**
   * Settles once the unit's analytical rows are stored. A rejection never calls for running the
   * unit again: its control writes are kept, and so are its rows, which the store writes later.
   */
  stored: Promise<void>;
}

/** Analytical rows a privacy delete or the retention erased. */
export interface ErasedRows {
  events: number;
  pageviews: number;
}

export interface AnalyticsStore {
  /**
   * Runs `fn` as one unit of work: its control writes in one control transaction, its analytical
   * writes with them. Resolves once both are stored; when `fn` throws, neither is kept. A value the
   * engine refuses fails the unit with RefusedValue.
   */
  unit<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<T>;
  /**
   * `unit` in two phases, for callers that group units (ingest's group commit): resolves once the
   * control transaction commits (when `fn` or the commit fails, nothing is kept and the unit may be
   * retried); then `stored` settles when the analytical rows are stored.
   */
  stage<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<Staged<T>>;

  /**
   * Erases the events and page views of these persons and visitors, and the engine's copies of
   * them (privacy deletes, after their control rows went). Resolves once no such row is stored
   * (ClickHouse: its mutations finished); the counts of the rows erased.
   */
  eraseKeys(ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows>;
  /**
   * After a merge committed (and the transactions older than it ended): no stored row is left of
   * person `fromKey`, its events being `intoKey`'s. Resolves once that is so (ClickHouse: its
   * mutations finished); the events moved here.
   */
  finishPersonMove(ws: string, fromKey: number, intoKey: number): Promise<number>;
  /** The events and page views of these persons and visitors that eraseKeys would erase now (a request's own counts). */
  countKeys(ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows>;
  /**
   * Keeps the revenue attribution of these payment customers (privacy deletes, before their person
   * and visitors go): the profile each is attributed through and its touches, which the revenue
   * report reads once the profile is gone. Harmless when run again.
   */
  freezeAttribution(ws: string, customerIds: string[]): Promise<void>;
  /** Erases the workspace's events and page views older than `before` (retention). */
  eraseBefore(ws: string, before: Date): Promise<ErasedRows>;

  /** Property paths seen per event name in the workspace: what payload filters may name. */
  propertyCatalog(ws: string): Promise<PropertyCatalog>;

  /**
   * Takes an estimate's place; its budget of `budgetMs` starts now, so what the caller does before
   * its count, and a wait for the engine, spend it. Past the budget the query is stopped inside the
   * engine (or never starts) and the count is null. Throws EstimatesBusy at once when the queue is full.
   */
  estimateTurn(budgetMs: number): EstimateTurn;
  /** A count within `budgetMs`, in a place of its own (explain: one count per subtree). */
  countWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<number | null>;
  /** The estimates' state and counters since the store opened (tests and operators read them). */
  estimateStats(): EstimateStats;
  /** The engine's query for the count of `plan`, as it runs, with its parameters. */
  countQuery(plan: SetPlan, ws: string): Promise<CompiledQuery>;
  /** The engine's profile of the count of `plan` as it ran, operator by operator; null past `budgetMs`. */
  profileWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<string | null>;

  /** The members of `plan`, by person_id then visitor_id (people first), written to `path`; the row count. */
  writeMembers(plan: SetPlan, ws: string, path: string, format: 'csv' | 'parquet'): Promise<number>;
  /** The same rows, in memory. */
  listMembers(plan: SetPlan, ws: string): Promise<Member[]>;

  /**
   * First-touch channel: the channel_category of the earliest page view, per visitor and per person
   * (over all the visitors linked to the person now). Absent keys have no page view.
   */
  firstTouchChannels(ws: string, of: { visitorKeys?: number[]; personKeys?: number[] }): Promise<FirstTouchChannels>;

  /**
   * Refreshes an audience: the new snapshot's members, its diff to the current one, a pending delivery
   * per destination that has something to receive, then the audience points at it. Control rows
   * written with it (control/audiences.ts adoptSnapshot): the audience's pointer, status and times;
   * its deliveries and destinations' acknowledged states. Within `limitMs`; past it (or on `signal`) nothing is kept and the previous
   * snapshot stays.
   */
  refresh(input: SnapshotInput): Promise<SnapshotResult>;
  /** A page of a snapshot's members after profile `after`, by profile. */
  membersPage(ws: string, snapshotId: number, after: bigint | null, limit: number): Promise<MemberRow[]>;
  /** Writes a snapshot's members, by profile, to `path` (a file the caller chose); with `placement`, each member's `split` too. */
  exportSnapshot(ws: string, snapshotId: number, path: string, format: 'csv' | 'parquet', placement: SplitPlacement | null): Promise<void>;
  /**
   * A snapshot's members, by profile, as an Arrow IPC stream (schema, record batches, end marker):
   * person_id, visitor_id, external_id, email as nullable Utf8, a schema alone when there are none.
   * Each engine writes it its own way, in batches (never the whole snapshot in memory on our side);
   * it resolves once the engine has answered, so a failed query throws here. With `placement`, a
   * `split` column (Utf8) too.
   */
  exportArrow(ws: string, snapshotId: number, placement: SplitPlacement | null): Promise<AsyncIterable<Uint8Array>>;

  /**
   * Starts a pending delivery: its work list is its snapshot against what the destination has
   * acknowledged; older deliveries of the destination that never started are superseded. Reads the
   * destination's acknowledged state and writes the deliveries' (control). Within `limitMs`. With
   * `route`, its logged added and removed counts are only the members of the routed splits (the
   * pages still hold every change; the deliverer sends the routed ones).
   */
  startDelivery(d: DeliveryRow, pageSize: number, at: Date, limitMs: number, route?: SplitRoute | null): Promise<DeliveryRow>;
  /** Page `page` of a started delivery, added first, by profile, with the members' details. */
  deliveryPage(d: DeliveryRow, page: number): Promise<DiffMember[]>;
  /** Records page `page` as acknowledged by the destination, with the delivery's progress (control). */
  acknowledgePage(d: DeliveryRow, page: number, skipped: number): Promise<void>;
  /** Ends a delivery; a delivered one's snapshot becomes what its destination has acknowledged. */
  finishDelivery(d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void>;
}
