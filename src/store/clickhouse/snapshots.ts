// Refresh, snapshots and deliveries on ClickHouse (being built: issue 16).

import type { DiffMember, Member, MemberRow, SnapshotInput, SnapshotResult } from '../analytics.js';
import type { DeliveryRow } from '../control/audiences.js';
import type { ClickHouseContext } from './context.js';

const notYet = (what: string): Error => new Error(`ClickHouse: ${what} is not built yet`);

export class ClickHouseSnapshots {
  constructor(readonly ctx: ClickHouseContext) {}

  async refresh(_input: SnapshotInput): Promise<SnapshotResult> { throw notYet('refresh'); }
  async membersPage(_ws: string, _snapshotId: number, _after: bigint | null, _limit: number): Promise<MemberRow[]> { throw notYet('membersPage'); }
  async exportSnapshot(_ws: string, _snapshotId: number, _path: string, _format: 'csv' | 'parquet'): Promise<void> { throw notYet('exportSnapshot'); }
  // eslint-disable-next-line require-yield
  async *streamSnapshot(_ws: string, _snapshotId: number): AsyncGenerator<Member[]> { throw notYet('streamSnapshot'); }
  async startDelivery(_d: DeliveryRow, _pageSize: number, _at: Date, _limitMs: number): Promise<DeliveryRow> { throw notYet('startDelivery'); }
  async deliveryPage(_d: DeliveryRow, _page: number): Promise<DiffMember[]> { throw notYet('deliveryPage'); }
  async acknowledgePage(_d: DeliveryRow, _page: number, _skipped: number): Promise<void> { throw notYet('acknowledgePage'); }
  async finishDelivery(_d: DeliveryRow, _status: Exclude<DeliveryRow['status'], 'pending'>, _error: string | null, _at: Date): Promise<void> { throw notYet('finishDelivery'); }
  /** Forgets an audience's snapshots, members and diffs (after its control rows are gone). */
  async dropSnapshots(_ws: string, _audienceId: string): Promise<void> { throw notYet('dropSnapshots'); }
}
