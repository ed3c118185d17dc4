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
// through identity resolution: a store shared by several nodes keeps no filter (as the identity
// cache keeps nothing). The bulk import (store/duckdb/import.ts) writes these tables directly: it
// runs from the command line with the service stopped, or in tests before any ingest.

import type { ControlStore } from '../store/control/store.js';

export type IdKind = 'visitor_id' | 'external_id' | 'email';

/** Bits per id and probes: a false positive about once in 60,000 checks of a new id (a full layer). */
const BITS_PER_ID = 24;
const PROBES = 16;
/** Small first: every workspace that ingests gets three filters (16 KB each at first). */
const FIRST_CAPACITY = 1 << 12;

/** murmur3's finalizer: every input bit reaches every output bit. */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Two independent 32-bit hashes of the UTF-16 code units (two multiplicative hashes, mixed). */
function hashes(id: string): [number, number] {
  let a = 0x811c9dc5;
  let b = id.length;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b + c, 0x9e3779b1) ^ (b >>> 15);
  }
  // An odd step visits every bit position of a power-of-two table.
  return [mix(a), (mix(b ^ 0x5bd1e995) | 1) >>> 0];
}

/** One Bloom filter of fixed capacity (a power-of-two number of bits). */
class Layer {
  readonly bits: Uint32Array;
  private readonly mask: number;
  count = 0;

  constructor(readonly capacity: number) {
    const size = 2 ** Math.ceil(Math.log2(capacity * BITS_PER_ID));
    this.bits = new Uint32Array(size >>> 5);
    this.mask = size - 1;
  }

  add(h1: number, h2: number): void {
    for (let i = 0, h = h1; i < PROBES; i++, h = (h + h2) >>> 0) {
      const bit = h & this.mask;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count++;
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0, h = h1; i < PROBES; i++, h = (h + h2) >>> 0) {
      const bit = h & this.mask;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/** A Bloom filter that grows: a full layer is kept and a new one twice its size takes the adds. */
export class GrowingBloom {
  private readonly layers: Layer[] = [new Layer(FIRST_CAPACITY)];

  add(id: string): void {
    let last = this.layers[this.layers.length - 1]!;
    if (last.count >= last.capacity) this.layers.push((last = new Layer(last.capacity * 2)));
    const [h1, h2] = hashes(id);
    last.add(h1, h2);
  }

  /** False only for an id never added. */
  mightHold(id: string): boolean {
    const [h1, h2] = hashes(id);
    for (const layer of this.layers) if (layer.has(h1, h2)) return true;
    return false;
  }

  get bytes(): number {
    return this.layers.reduce((sum, layer) => sum + layer.bits.byteLength, 0);
  }
}

/** Ids read per statement while a filter is filled from the tables. */
const FILL_ROWS = 200_000;
/** After a failed fill, the workspace is looked up as before for this long. */
const RETRY_MS = 60_000;

interface WorkspaceIds {
  filters: Record<IdKind, GrowingBloom>;
  /** Until the filters hold every committed id, none of them proves anything. */
  ready: boolean;
}

export class KnownIds {
  private readonly workspaces = new Map<string, WorkspaceIds>();
  private readonly failedAt = new Map<string, number>();

  constructor(private readonly store: ControlStore) {}

  /** True when `id` is proven not to be held by the workspace (else it must be looked up). */
  absent(ws: string, kind: IdKind, id: string): boolean {
    const entry = this.workspaces.get(ws);
    return entry !== undefined && entry.ready && !entry.filters[kind].mightHold(id);
  }

  /** Records an id a write of the workspace holds (call before its transaction commits). */
  add(ws: string, kind: IdKind, id: string): void {
    this.workspaces.get(ws)?.filters[kind].add(id);
  }

  /**
   * Starts filling the workspace's filters unless they exist; never waits (call it inside a write
   * transaction: the fill waits for that transaction to end).
   */
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

  /** Whether the workspace's filters are in use (for tests). */
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
  }
}

const registries = new WeakMap<ControlStore, KnownIds | null>();

/** The store's filters, or null where other processes write persons and visitors too. */
export function knownIdsOf(store: ControlStore): KnownIds | null {
  let known = registries.get(store);
  if (known === undefined) registries.set(store, (known = store.shared || store.dialect.engine !== 'duckdb' ? null : new KnownIds(store)));
  return known;
}
