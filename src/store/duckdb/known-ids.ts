// Which identifiers a workspace may hold, so that an identifier proven new needs no lookup. A
// lookup of ids missing from the identity cache is a scan of the whole table on DuckDB (a semi join
// of a list does not probe its index), growing with the table (bench/RESULTS.md, "Ingest over
// HTTP"). New anonymous visitors arrive all the time, so that was the cost that grew with data.
//
// Per workspace and kind of identifier, a Bloom filter holds every id of its committed rows plus
// every id a batch inserted since (added when the batch writes it, committed or not): no false
// negatives, so "absent" is a proof; a false positive (or an id that does exist) is looked up as
// before. A rolled-back batch leaves ids in the filter, which only costs a lookup later.
//
// Sound only where this process is the only writer of persons and visitors and every write goes
// through identity resolution: a store shared by several nodes keeps no filter (ControlCaches), and
// only DuckDB needs one (PostgreSQL finds a list of ids by its indexes). The bulk import
// (store/duckdb/import.ts) writes these tables directly: it runs from the command line with the
// service stopped, or in tests before any ingest.

import { GrowingBloom } from '../bloom.js';
import type { IdKind, KnownIds } from '../control/known-ids.js';
import { aliasValues } from '../control/merges.js';
import type { ControlStore } from '../control/store.js';

/** Ids read per statement while a filter is filled from the tables. */
const FILL_ROWS = 200_000;
/** After a failed fill, the workspace is looked up as before for this long. */
const RETRY_MS = 60_000;

interface WorkspaceIds {
  filters: Record<IdKind, GrowingBloom>;
  /** Until the filters hold every committed id, none of them proves anything. */
  ready: boolean;
}

export class DuckDBKnownIds implements KnownIds {
  private readonly workspaces = new Map<string, WorkspaceIds>();
  private readonly failedAt = new Map<string, number>();

  constructor(private readonly store: ControlStore) {}

  absent(ws: string, kind: IdKind, id: string): boolean {
    const entry = this.workspaces.get(ws);
    return entry !== undefined && entry.ready && !entry.filters[kind].mightHold(id);
  }

  add(ws: string, kind: IdKind, id: string): void {
    this.workspaces.get(ws)?.filters[kind].add(id);
  }

  /** The fill waits for the transaction `prepare` is called in to end. */
  prepare(ws: string): void {
    if (this.workspaces.has(ws) || Date.now() - (this.failedAt.get(ws) ?? -Infinity) < RETRY_MS) return;
    const entry: WorkspaceIds = {
      filters: { visitor_id: new GrowingBloom(), external_id: new GrowingBloom(), email: new GrowingBloom() },
      ready: false,
    };
    this.workspaces.set(ws, entry);
    this.fill(ws, entry).then(() => { entry.ready = true; }, () => {
      this.workspaces.delete(ws);
      this.failedAt.set(ws, Date.now());
    });
  }

  forget(ws: string): void {
    this.workspaces.delete(ws);
  }

  isReady(ws: string): boolean {
    return this.workspaces.get(ws)?.ready ?? false;
  }

  /**
   * From here on every write of the workspace adds its ids (the entry is registered). An empty
   * transaction waits out the writes already running, which may have resolved before the entry
   * existed; each read after it sees their commits.
   */
  private async fill(ws: string, entry: WorkspaceIds): Promise<void> {
    await this.store.transaction(async () => undefined);
    const ranges = async (table: string, key: string, read: (rows: Record<string, unknown>[]) => void) => {
      const [top] = await this.store.all(`SELECT coalesce(max(${key}), 0) AS top FROM ${table}`);
      // By key ranges (a row's key never changes; the keys of committed rows are below the top).
      for (let from = 0; from <= Number(top!.top); from += FILL_ROWS) {
        read(await this.store.all(`SELECT ${table === 'visitors' ? 'visitor_id' : 'external_id, email'} FROM ${table}
          WHERE ${key} BETWEEN $2 AND $3 AND workspace_id = $1`, [ws, from, from + FILL_ROWS - 1]));
      }
    };
    await ranges('visitors', 'visitor_key', (rows) => { for (const r of rows) entry.filters.visitor_id.add(r.visitor_id as string); });
    await ranges('persons', 'person_key', (rows) => {
      for (const r of rows) {
        if (r.external_id !== null) entry.filters.external_id.add(r.external_id as string);
        if (r.email !== null) entry.filters.email.add(r.email as string);
      }
    });
    // Identifiers of persons merged away are held too: they name the person merged into.
    for (const { kind, value } of await aliasValues(this.store, ws)) if (kind !== 'person_id') entry.filters[kind].add(value);
  }
}
