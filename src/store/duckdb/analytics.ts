// The analytical store on DuckDB: the same database as the control store, so a unit of work is one
// DuckDB transaction and the criteria SQL joins the control tables (visitors, payment_customers,
// persons) directly.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { CompiledQuery, PropertyCatalog, SplitPlacement, SplitRoute } from '../../criteria/index.js';
import {
  type AnalyticsStore, type AnalyticsWrites, type ChannelFields, type DiffMember, type ErasedRows, type EventRecord,
  type MemberRow, type PageviewRecord, type PaymentStateChanges, type PaymentStateKeys, RefusedValue,
  type SnapshotInput, type Staged, type StoredPaymentState, type UnitOfWork,
} from '../analytics.js';
import { NO_COPIES } from '../mirror.js';
import type { DeliveryRow, SnapshotResult } from '../types.js';
import { QueriedStore } from '../query/forwarding.js';
import { CriteriaQueries } from '../query/queries.js';
import { controlTx } from './control.js';
import type { Store } from './db.js';
import { countKeys, eraseBefore, eraseKeys, freezeAttribution, movePersonEvents } from './erase.js';
import { appendEvents } from './events.js';
import { appendPageviews, latestPageviews } from './pageviews.js';
import { readPaymentState, writePaymentState } from './payments.js';
import { propertyCatalog, recordEventNames, recordPropertyPaths } from './properties.js';
import { refusedValue } from './refused.js';
import {
  acknowledgePage, arrowMembers, copyMembers, deliveryPage, dropSnapshots, finishDelivery, membersPage, startDelivery, writeSnapshot,
} from './snapshots.js';

/** The analytical writes of a unit, on its transaction's connection. */
class DuckDBWrites implements AnalyticsWrites {
  constructor(private readonly store: Store, private readonly tx: DuckDBConnection) {}

  async appendEvents(ws: string, events: EventRecord[], receivedAt: Date): Promise<void> {
    if (events.length === 0) return;
    const typed = await this.store.typed.rows(this.tx, ws, events);
    return appendEvents(this.tx, ws, events, receivedAt, typed);
  }

  recordPropertyPaths(ws: string, paths: { event_name: string; path: string }[]): Promise<void> {
    return recordPropertyPaths(this.tx, ws, paths);
  }

  recordEventNames(ws: string, names: string[]): Promise<void> {
    return recordEventNames(this.tx, ws, names);
  }

  latestPageviews(ws: string, visitorKeys: number[]): Promise<Map<number, ChannelFields & { ts: Date }>> {
    return latestPageviews(this.tx, ws, visitorKeys);
  }

  appendPageviews(ws: string, rows: PageviewRecord[]): Promise<void> {
    return appendPageviews(this.tx, ws, rows);
  }

  readPaymentState(ws: string, keys: PaymentStateKeys): Promise<StoredPaymentState> {
    return readPaymentState(this.tx, ws, keys);
  }

  writePaymentState(ws: string, changes: PaymentStateChanges): Promise<void> {
    return writePaymentState(this.tx, ws, changes);
  }

  dropSnapshots(ws: string, audienceId: string): Promise<void> {
    return dropSnapshots(this.tx, ws, audienceId);
  }

  async movePersonEvents(ws: string, fromKey: number, intoKey: number): Promise<void> {
    await movePersonEvents(this.tx, ws, fromKey, intoKey);
  }
}

export class DuckDBAnalytics extends QueriedStore<CompiledQuery> implements AnalyticsStore {
  /** Also starts filling typed payload columns left to fill (a migrated database, an interrupted fill). */
  constructor(private readonly store: Store) {
    super(new CriteriaQueries(store.driver));
    store.typed.kick();
  }

  /**
   * The criteria, member lists and revenue report read the control store's persons, visitors,
   * payment_customers and payments, written in this same transaction: no copies to keep.
   */
  unit<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<T> {
    return this.store.transaction((tx) => fn({
      control: controlTx(this.store, tx), mirror: NO_COPIES, analytics: new DuckDBWrites(this.store, tx),
    })).catch((err: unknown) => {
      const reason = refusedValue(err);
      throw reason === null ? err : new RefusedValue(reason);
    });
  }

  /** One transaction holds both sides: stored once it commits. */
  async stage<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<Staged<T>> {
    return { value: await this.unit(fn), stored: Promise.resolve() };
  }

  countKeys(ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows> {
    return countKeys(this.store, ws, personKeys, visitorKeys);
  }

  freezeAttribution(ws: string, customerIds: string[]): Promise<void> {
    return freezeAttribution(this.store, ws, customerIds);
  }

  eraseKeys(ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows> {
    return eraseKeys(this.store, ws, personKeys, visitorKeys);
  }

  eraseBefore(ws: string, before: Date): Promise<ErasedRows> {
    return eraseBefore(this.store, ws, before);
  }

  /** The merge's unit moved them: one writer at a time, nothing can have landed since (0 unless it did). */
  finishPersonMove(ws: string, fromKey: number, intoKey: number): Promise<number> {
    return this.store.transaction((tx) => movePersonEvents(tx, ws, fromKey, intoKey));
  }

  propertyCatalog(ws: string): Promise<PropertyCatalog> {
    return propertyCatalog(this.store, ws);
  }

  async refresh(input: SnapshotInput): Promise<SnapshotResult> {
    return writeSnapshot(this.store, { ...input, plan: await this.store.driver.prepare(input.plan, input.ws) });
  }

  membersPage(ws: string, snapshotId: number, after: bigint | null, limit: number): Promise<MemberRow[]> {
    return membersPage(this.store, ws, snapshotId, after, limit);
  }

  exportSnapshot(ws: string, snapshotId: number, path: string, format: 'csv' | 'parquet', placement: SplitPlacement | null): Promise<void> {
    return copyMembers(this.store, ws, snapshotId, path, format, placement);
  }

  exportArrow(ws: string, snapshotId: number, placement: SplitPlacement | null): Promise<AsyncIterable<Uint8Array>> {
    return arrowMembers(this.store, ws, snapshotId, placement);
  }

  startDelivery(d: DeliveryRow, pageSize: number, at: Date, limitMs: number, route?: SplitRoute | null): Promise<DeliveryRow> {
    return startDelivery(this.store, d, pageSize, at, limitMs, route);
  }

  deliveryPage(d: DeliveryRow, page: number): Promise<DiffMember[]> {
    return deliveryPage(this.store, d, page);
  }

  acknowledgePage(d: DeliveryRow, page: number, skipped: number): Promise<void> {
    return acknowledgePage(this.store, d, page, skipped);
  }

  finishDelivery(d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void> {
    return finishDelivery(this.store, d, status, error, at);
  }
}
