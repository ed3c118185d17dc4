// The analytical store on DuckDB: the same database as the control store, so a unit of work is one
// DuckDB transaction and the criteria SQL joins the control tables (visitors, payment_customers,
// persons) directly.

import type { DuckDBConnection } from '@duckdb/node-api';
import {
  type CompiledQuery, printBreakdown, printCount, printMembers, printOverlap, printRevenue, type PropertyCatalog, type ReportPlan, type SetPlan,
  withTypedPaths,
} from '../../criteria/index.js';
import {
  type AnalyticsStore, type AnalyticsWrites, type ChannelFields, type DiffMember, type EstimateStats, type EstimateTurn, type EventRecord,
  type FirstTouchChannels, type Member, type MemberRow, type PageviewRecord, type PaymentStateChanges, type PaymentStateKeys, RefusedValue,
  type SnapshotInput, type Staged, type StoredPaymentState, type UnitOfWork,
} from '../analytics.js';
import { NO_COPIES } from '../mirror.js';
import type { DeliveryRow, SnapshotResult } from '../types.js';
import { breakdownOf, countOf, overlapOf, revenueRow } from '../estimate-rows.js';
import { controlTx } from './control.js';
import type { Store } from './db.js';
import { appendEvents } from './events.js';
import { appendPageviews, firstTouchChannels, latestPageviews } from './pageviews.js';
import { readPaymentState, writePaymentState } from './payments.js';
import { propertyCatalog, recordPropertyPaths } from './properties.js';
import { refusedValue } from './refused.js';
import { TypedColumns } from './typed.js';
import {
  acknowledgePage, arrowMembers, copyMembers, deliveryPage, dropSnapshots, finishDelivery, membersPage, startDelivery, writeSnapshot,
} from './snapshots.js';

/** The members of a criteria query by public ids: the same rows from a directory read in place and from its import. */
function membersByIds(plan: SetPlan, ws: string): CompiledQuery {
  const query = printMembers(plan, ws);
  return {
    sql: `SELECT person_id, visitor_id, external_id, email FROM (${query.sql}) AS members ORDER BY person_id NULLS LAST, visitor_id`,
    params: query.params,
  };
}

/** The analytical writes of a unit, on its transaction's connection. */
class DuckDBWrites implements AnalyticsWrites {
  constructor(private readonly store: Store, private readonly tx: DuckDBConnection) {}

  async appendEvents(ws: string, events: EventRecord[], receivedAt: Date): Promise<void> {
    if (events.length === 0) return;
    const typed = await TypedColumns.of(this.store).rows(this.tx, ws, events);
    return appendEvents(this.tx, ws, events, receivedAt, typed);
  }

  recordPropertyPaths(ws: string, paths: { event_name: string; path: string }[]): Promise<void> {
    return recordPropertyPaths(this.tx, ws, paths);
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
}

export class DuckDBAnalytics implements AnalyticsStore {
  private readonly typed: TypedColumns;

  /** Also starts filling typed payload columns left to fill (a migrated database, an interrupted fill). */
  constructor(private readonly store: Store) {
    this.typed = TypedColumns.of(store);
    this.typed.kick();
  }

  /** `plan` with the typed payload columns that are ready (a physical annotation: same rows). */
  private async typedPlan(plan: SetPlan, ws: string): Promise<SetPlan> {
    return withTypedPaths(plan, await this.typed.printable(ws));
  }

  private async typedReport(report: ReportPlan, ws: string): Promise<ReportPlan> {
    return report.audience ? { ...report, audience: await this.typedPlan(report.audience, ws) } : report;
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

  propertyCatalog(ws: string): Promise<PropertyCatalog> {
    return propertyCatalog(this.store, ws);
  }

  estimateTurn(budgetMs: number): EstimateTurn {
    const turn = this.store.estimateTurn(budgetMs);
    const read = async <T>(query: CompiledQuery, as: (rows: Record<string, unknown>[]) => T, by?: number): Promise<T | null> => {
      const rows = await turn.read(query.sql, query.params, by);
      return rows === null ? null : as(rows);
    };
    return {
      deadline: turn.deadline,
      count: async (plan, ws, options) => read(printCount(await this.typedPlan(plan, ws), ws, options?.sample), countOf, options?.by),
      breakdown: async (plan, ws, breakdown, options) => read(printBreakdown(await this.typedPlan(plan, ws), ws, breakdown), breakdownOf, options?.by),
      overlap: async (plans, ws) => read(printOverlap(await Promise.all(plans.map((p) => this.typedPlan(p, ws))), ws), overlapOf),
      revenue: async (report, ws) => read(printRevenue(await this.typedReport(report, ws), ws), (rows) => rows.map(revenueRow)),
      end: () => turn.end(),
    };
  }

  async countWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<number | null> {
    const query = printCount(await this.typedPlan(plan, ws), ws);
    return this.store.countWithin(query.sql, query.params, budgetMs);
  }

  estimateStats(): EstimateStats {
    return this.store.estimateStats();
  }

  async countQuery(plan: SetPlan, ws: string): Promise<CompiledQuery> {
    return printCount(await this.typedPlan(plan, ws), ws);
  }

  async profileWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<string | null> {
    const query = printCount(await this.typedPlan(plan, ws), ws);
    return this.store.explainAnalyzeWithin(query.sql, query.params, budgetMs);
  }

  async writeMembers(plan: SetPlan, ws: string, path: string, format: 'csv' | 'parquet'): Promise<number> {
    const query = membersByIds(await this.typedPlan(plan, ws), ws);
    return this.store.copyTo(query.sql, query.params, path, format);
  }

  async listMembers(plan: SetPlan, ws: string): Promise<Member[]> {
    const query = membersByIds(await this.typedPlan(plan, ws), ws);
    return await this.store.query(query.sql, query.params) as unknown as Member[];
  }

  firstTouchChannels(ws: string, of: { visitorKeys?: number[]; personKeys?: number[] }): Promise<FirstTouchChannels> {
    return firstTouchChannels(this.store, ws, of);
  }

  async refresh(input: SnapshotInput): Promise<SnapshotResult> {
    return writeSnapshot(this.store, { ...input, plan: await this.typedPlan(input.plan, input.ws) });
  }

  membersPage(ws: string, snapshotId: number, after: bigint | null, limit: number): Promise<MemberRow[]> {
    return membersPage(this.store, ws, snapshotId, after, limit);
  }

  exportSnapshot(ws: string, snapshotId: number, path: string, format: 'csv' | 'parquet'): Promise<void> {
    return copyMembers(this.store, ws, snapshotId, path, format);
  }

  exportArrow(ws: string, snapshotId: number): Promise<AsyncIterable<Uint8Array>> {
    return arrowMembers(this.store, ws, snapshotId);
  }

  startDelivery(d: DeliveryRow, pageSize: number, at: Date, limitMs: number): Promise<DeliveryRow> {
    return startDelivery(this.store, d, pageSize, at, limitMs);
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
