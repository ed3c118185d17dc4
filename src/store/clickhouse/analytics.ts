// The analytical store on ClickHouse: events, page views, links, payment state and snapshots in
// ClickHouse; the control state stays in the control store. Three parts: the writes of a unit of
// work (writes.ts), the criteria queries (the query layer, store/query/, over driver.ts), and
// refresh, snapshots and deliveries (snapshots.ts).

import type { ClickHouseQuery, PropertyCatalog, SplitPlacement, SplitRoute } from '../../criteria/index.js';
import type {
  AnalyticsStore, DiffMember, ErasedRows, MemberRow, SnapshotInput, Staged, UnitOfWork,
} from '../analytics.js';
import { QueriedStore } from '../query/forwarding.js';
import { CriteriaQueries } from '../query/queries.js';
import type { DeliveryRow, SnapshotResult } from '../types.js';
import type { ClickHouseContext } from './context.js';
import { countKeys, eraseBefore, eraseKeys, freezeAttribution } from './erase.js';
import { finishPersonMove } from './merge.js';
import { ClickHouseDriver, type EstimateOptions } from './driver.js';
import { ClickHouseSnapshots } from './snapshots.js';
import { ClickHouseUnits, type UnitsOptions } from './writes.js';

export class ClickHouseAnalytics extends QueriedStore<ClickHouseQuery> implements AnalyticsStore {
  private readonly units: ClickHouseUnits;
  private readonly snapshots: ClickHouseSnapshots;

  constructor(readonly ctx: ClickHouseContext, estimates: EstimateOptions = {}, units: Omit<UnitsOptions, 'dropSnapshots'> = {}) {
    super(new CriteriaQueries(new ClickHouseDriver(ctx, estimates)));
    this.units = new ClickHouseUnits(ctx, { ...units, dropSnapshots: (ws, audienceId) => this.snapshots.dropSnapshots(ws, audienceId) });
    this.snapshots = new ClickHouseSnapshots(ctx);
  }

  unit<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<T> {
    return this.units.unit(fn);
  }

  stage<T>(fn: (work: UnitOfWork) => Promise<T>): Promise<Staged<T>> {
    return this.units.stage(fn);
  }

  /** Inserts the rows of committed units that ClickHouse has not acknowledged yet (also done at open and periodically). */
  sweepOutbox(): Promise<void> {
    return this.units.sweep();
  }

  countKeys(ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows> {
    return countKeys(this.ctx, ws, personKeys, visitorKeys, () => this.units.sweep());
  }

  freezeAttribution(ws: string, customerIds: string[]): Promise<void> {
    return freezeAttribution(this.ctx, ws, customerIds, () => this.units.sweep());
  }

  eraseKeys(ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows> {
    return eraseKeys(this.ctx, ws, personKeys, visitorKeys, () => this.units.sweep());
  }

  finishPersonMove(ws: string, fromKey: number, intoKey: number): Promise<number> {
    return finishPersonMove(this.ctx, ws, fromKey, intoKey, () => this.units.sweep());
  }

  eraseBefore(ws: string, before: Date): Promise<ErasedRows> {
    return eraseBefore(this.ctx, ws, before, () => this.units.sweep());
  }

  propertyCatalog(ws: string): Promise<PropertyCatalog> {
    return this.units.propertyCatalog(ws);
  }

  refresh(input: SnapshotInput): Promise<SnapshotResult> {
    return this.snapshots.refresh(input);
  }

  membersPage(ws: string, snapshotId: number, after: bigint | null, limit: number): Promise<MemberRow[]> {
    return this.snapshots.membersPage(ws, snapshotId, after, limit);
  }

  exportSnapshot(ws: string, snapshotId: number, path: string, format: 'csv' | 'parquet', placement: SplitPlacement | null): Promise<void> {
    return this.snapshots.exportSnapshot(ws, snapshotId, path, format, placement);
  }

  exportArrow(ws: string, snapshotId: number, placement: SplitPlacement | null): Promise<AsyncIterable<Uint8Array>> {
    return this.snapshots.exportArrow(ws, snapshotId, placement);
  }

  startDelivery(d: DeliveryRow, pageSize: number, at: Date, limitMs: number, route?: SplitRoute | null): Promise<DeliveryRow> {
    return this.snapshots.startDelivery(d, pageSize, at, limitMs, route);
  }

  deliveryPage(d: DeliveryRow, page: number): Promise<DiffMember[]> {
    return this.snapshots.deliveryPage(d, page);
  }

  acknowledgePage(d: DeliveryRow, page: number, skipped: number): Promise<void> {
    return this.snapshots.acknowledgePage(d, page, skipped);
  }

  finishDelivery(d: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null, at: Date): Promise<void> {
    return this.snapshots.finishDelivery(d, status, error, at);
  }

  /** Stops the unit writer's background work (retries of stored-but-unsent rows) and closes the client. */
  async close(): Promise<void> {
    await this.units.close();
    await this.ctx.client.close();
  }
}
