// Committed persons and visitors seen recently, so a batch of known people needs no lookup
// statement (the lookups were most of an event batch's time). It holds keys only: a person's ids
// and email, a visitor's key and link; never traits or names, which stay in the store (a cache of
// payloads grew to gigabytes). It is one LRU over every workspace, bounded in entries.
//
// Entries are only ever the state of committed rows: resolution copies a record before changing it
// and hands its changes back after its transaction commits (ControlStore.afterCommit). Every writer of
// persons and visitors resolves through here, so an entry is never stale; an identifier missing
// from the cache (never seen, or evicted) is looked up. A control store shared by several nodes
// has writers elsewhere, so there the cache keeps nothing (ControlCaches).

import type { PersonRecord, VisitorRecord } from './people.js';

/**
 * Entries kept over every workspace (each identifier of a person, and each visitor, is one): the
 * ingest benchmark's 100,000 users with 3 visitors each fit, half as many made them miss the
 * cache, and the memory stays bounded (bench/RESULTS.md, "Ingest after the isolation limits").
 */
export const IDENTITY_CACHE_ENTRIES = 1_000_000;

type PersonBy = 'external_id' | 'email' | 'person_key';
type Cached = PersonRecord | VisitorRecord;
type Key = string | number;

/** A workspace's identifiers, one map per kind, keyed by the raw value (no key text to build), each to its entry's slot. */
type WorkspaceIndexes = Record<PersonBy | 'visitor_id', Map<Key, number>>;

const NONE = -1;

/**
 * Entries live in numbered slots: their record, key and map in arrays, and the list from least to
 * most recently used as slot numbers in typed arrays. An entry is a Map value (a small integer) and
 * no object of its own: an object an identifier was most of `remember`'s cost for a new person, and
 * most of what the young generation copied (bench/RESULTS.md, "Ingest").
 */
export class IdentityCache {
  private readonly workspaces = new Map<string, WorkspaceIndexes>();
  private count = 0;
  private readonly held: (Cached | null)[] = [];
  private readonly keys: (Key | null)[] = [];
  private readonly maps: (Map<Key, number> | null)[] = [];
  private older = new Int32Array(1024);
  private newer = new Int32Array(1024);
  /** Slots emptied by an eviction or a forget, taken before new ones. */
  private readonly free: number[] = [];
  private oldest = NONE;
  private newest = NONE;

  constructor(private maxEntries = IDENTITY_CACHE_ENTRIES) {}

  get size(): number {
    return this.count;
  }

  /** What the cache holds, least recently used first (for inspection). */
  *records(): IterableIterator<Cached> {
    for (let slot = this.oldest; slot !== NONE; slot = this.newer[slot]!) yield this.held[slot]!;
  }

  /** Changes the bound, evicting the least recently used entries past it. */
  resize(maxEntries: number): void {
    this.maxEntries = maxEntries;
    this.evict();
  }

  /** The cached record itself: never change it (copy first). */
  visitor(ws: string, visitorId: string): VisitorRecord | undefined {
    return this.use(this.workspaces.get(ws)?.visitor_id, visitorId) as VisitorRecord | undefined;
  }

  /** The cached record itself: never change it (copy first). */
  person(ws: string, by: PersonBy, value: Key): PersonRecord | undefined {
    return this.use(this.workspaces.get(ws)?.[by], value) as PersonRecord | undefined;
  }

  /** Records the committed state of these persons and visitors (the cache keeps the objects). */
  remember(ws: string, persons: Iterable<PersonRecord>, visitors: Iterable<VisitorRecord>): void {
    let indexes = this.workspaces.get(ws);
    if (!indexes) {
      indexes = { external_id: new Map(), email: new Map(), person_key: new Map(), visitor_id: new Map() };
      this.workspaces.set(ws, indexes);
    }
    for (const p of persons) {
      const record: PersonRecord = { person_key: p.person_key, person_id: p.person_id, external_id: p.external_id, email: p.email };
      this.put(indexes.person_key, p.person_key, record);
      if (p.external_id !== null) this.put(indexes.external_id, p.external_id, record);
      if (p.email !== null) this.put(indexes.email, p.email, record);
    }
    for (const v of visitors) this.put(indexes.visitor_id, v.visitor_id, {
      visitor_key: v.visitor_key, visitor_id: v.visitor_id, person_key: v.person_key, anonymous_events: v.anonymous_events,
    });
    this.evict();
  }

  /** Forgets these persons (by each of their identifiers) and visitors (a merge moved them). */
  forget(ws: string, persons: readonly PersonRecord[], visitorIds: readonly string[]): void {
    const indexes = this.workspaces.get(ws);
    if (!indexes) return;
    const drop = (index: Map<Key, number>, key: Key | null) => {
      const slot = key === null ? undefined : index.get(key);
      if (slot !== undefined) this.drop(slot);
    };
    for (const p of persons) {
      drop(indexes.person_key, p.person_key);
      drop(indexes.external_id, p.external_id);
      drop(indexes.email, p.email);
    }
    for (const id of visitorIds) drop(indexes.visitor_id, id);
  }

  /** Forgets every entry of the workspace (a privacy delete: its records may name persons gone). */
  forgetWorkspace(ws: string): void {
    const indexes = this.workspaces.get(ws);
    if (!indexes) return;
    for (const index of Object.values(indexes)) for (const slot of [...index.values()]) this.drop(slot);
    this.workspaces.delete(ws);
  }

  private use(index: Map<Key, number> | undefined, key: Key): Cached | undefined {
    const slot = index?.get(key);
    if (slot === undefined) return undefined;
    this.unlink(slot);
    this.link(slot);
    return this.held[slot]!;
  }

  private put(index: Map<Key, number>, key: Key, record: Cached): void {
    const known = index.get(key);
    if (known !== undefined) {
      this.held[known] = record;
      this.unlink(known);
      this.link(known);
      return;
    }
    const slot = this.take();
    this.held[slot] = record;
    this.keys[slot] = key;
    this.maps[slot] = index;
    index.set(key, slot);
    this.count++;
    this.link(slot);
  }

  /** An empty slot: a freed one, else the next, the lists grown to hold it. */
  private take(): number {
    const freed = this.free.pop();
    if (freed !== undefined) return freed;
    const slot = this.held.length;
    this.held.push(null);
    this.keys.push(null);
    this.maps.push(null);
    if (slot === this.older.length) {
      const older = new Int32Array(slot * 2);
      const newer = new Int32Array(slot * 2);
      older.set(this.older);
      newer.set(this.newer);
      this.older = older;
      this.newer = newer;
    }
    return slot;
  }

  /** Removes the entry in `slot` from its map and the list, and frees the slot. */
  private drop(slot: number): void {
    this.unlink(slot);
    this.maps[slot]!.delete(this.keys[slot]!);
    this.held[slot] = null;
    this.keys[slot] = null;
    this.maps[slot] = null;
    this.free.push(slot);
    this.count--;
  }

  private evict(): void {
    while (this.count > this.maxEntries && this.oldest !== NONE) this.drop(this.oldest);
  }

  /** Makes the entry in `slot` the most recently used. */
  private link(slot: number): void {
    this.older[slot] = this.newest;
    this.newer[slot] = NONE;
    if (this.newest !== NONE) this.newer[this.newest] = slot;
    else this.oldest = slot;
    this.newest = slot;
  }

  private unlink(slot: number): void {
    const older = this.older[slot]!;
    const newer = this.newer[slot]!;
    if (older !== NONE) this.newer[older] = newer;
    else this.oldest = newer;
    if (newer !== NONE) this.older[newer] = older;
    else this.newest = older;
  }
}
