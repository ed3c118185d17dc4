// Rows both sides of the store speak of: the analytical store writes snapshots and pages through
// deliveries (store/analytics.ts), the control store records them (store/control/audiences.ts).

/** A snapshot as its refresh wrote it: its id, members, and its diff to the previous one. */
export interface SnapshotResult {
  snapshot_id: number;
  member_count: number;
  added: number;
  removed: number;
}

export interface DeliveryRow {
  workspace_id: string;
  delivery_id: number;
  audience_id: string;
  destination_id: string;
  /** The snapshot the destination is brought to. */
  snapshot_id: number;
  status: 'pending' | 'delivered' | 'failed' | 'canceled';
  next_page: number;
  skipped: number;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
  /** The snapshot the destination had acknowledged when the delivery started (null: none). */
  base_snapshot_id: number | null;
  /** Whether the work list is the snapshot's own diff (else the delivery's items); null until started. */
  sends_diff: boolean | null;
  page_size: number | null;
  /** Pages of the work list; null until the delivery starts. */
  page_count: number | null;
  added_count: number | null;
  removed_count: number | null;
}
