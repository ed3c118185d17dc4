// Committed persons and visitors seen recently, so a batch of known people needs no lookup
// statement (the lookups were most of an event batch's time). It holds keys only: a person's ids
// and email, a visitor's key and link; never traits or names, which stay in the store (a cache of
// payloads grew to gigabytes). It is one LRU over every workspace, bounded in entries; a hit moves
// an entry to the recent end only when more than half the bound was linked since it was, so the
// hits of a working set well inside the bound write nothing (an approximate LRU, as caches do).
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

/** A cached identifier, in a list from least to most recently used. */
interface Entry {
  /** The map that holds it, under `key`. */
  index: Map<string | number, Entry>;
  key: string | number;
  record: Cached;
  /** The cache's link count when it was last made the most recent. */
  linked: number;
  older: Entry | null;
  newer: Entry | null;
}

/** A workspace's identifiers, one map per kind, keyed by the raw value (no key text to build). */
type WorkspaceIndexes = Record<PersonBy | 'visitor_id', Map<string | number, Entry>>;

export class IdentityCache {
  private readonly workspaces = new Map<string, WorkspaceIndexes>();
  private count = 0;
  /** Links made so far (insertions and moves to the recent end). */
  private links = 0;
  // A linked list keeps the use order over every workspace: moving a used entry is a few pointer
  // writes, cheaper than deleting and re-inserting a Map key (its insertion order).
  private oldest: Entry | null = null;
  private newest: Entry | null = null;

  constructor(private maxEntries = IDENTITY_CACHE_ENTRIES) {}

  get size(): number {
    return this.count;
  }

  /** What the cache holds, least recently used first (for inspection). */
  *records(): IterableIterator<Cached> {
    for (let e = this.oldest; e; e = e.newer) yield e.record;
  }

  /** Changes the bound, evicting the least recently used entries past it. */
  resize(maxEntries: number): void {
    this.maxEntries = maxEntries;
    this.evict();
  }

  /** The cached record itself, frozen: copy it to change it. */
  visitor(ws: string, visitorId: string): VisitorRecord | undefined {
    return this.use(this.workspaces.get(ws)?.visitor_id, visitorId) as VisitorRecord | undefined;
  }

  /** The cached record itself, frozen: copy it to change it. */
  person(ws: string, by: PersonBy, value: string | number): PersonRecord | undefined {
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
      // Frozen: a batch tells the records it shares with the cache by that (ingest/identity.ts).
      const record: PersonRecord = Object.freeze({ person_key: p.person_key, person_id: p.person_id, external_id: p.external_id, email: p.email });
      this.put(indexes.person_key, p.person_key, record);
      if (p.external_id !== null) this.put(indexes.external_id, p.external_id, record);
      if (p.email !== null) this.put(indexes.email, p.email, record);
    }
    for (const v of visitors) this.put(indexes.visitor_id, v.visitor_id, Object.freeze({
      visitor_key: v.visitor_key, visitor_id: v.visitor_id, person_key: v.person_key, anonymous_events: v.anonymous_events,
    }));
    this.evict();
  }

  /** Forgets these persons (by each of their identifiers) and visitors (a merge moved them). */
  forget(ws: string, persons: readonly PersonRecord[], visitorIds: readonly string[]): void {
    const indexes = this.workspaces.get(ws);
    if (!indexes) return;
    const drop = (index: Map<string | number, Entry>, key: string | number | null) => {
      const entry = key === null ? undefined : index.get(key);
      if (!entry) return;
      this.unlink(entry);
      index.delete(key!);
      this.count--;
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
    for (const index of Object.values(indexes)) {
      for (const entry of index.values()) {
        this.unlink(entry);
        this.count--;
      }
    }
    this.workspaces.delete(ws);
  }

  private use(index: Map<string | number, Entry> | undefined, key: string | number): Cached | undefined {
    const entry = index?.get(key);
    if (!entry) return undefined;
    // Linked recently enough, it is far from eviction: moving it (pointer writes across the list,
    // each a likely cache miss) would change nothing that matters.
    if (this.links - entry.linked > this.maxEntries / 2) {
      this.unlink(entry);
      this.link(entry);
    }
    return entry.record;
  }

  private put(index: Map<string | number, Entry>, key: string | number, record: Cached): void {
    const entry = index.get(key);
    if (entry) {
      entry.record = record;
      this.unlink(entry);
      this.link(entry);
    } else {
      const added: Entry = { index, key, record, linked: 0, older: null, newer: null };
      index.set(key, added);
      this.count++;
      this.link(added);
    }
  }

  private evict(): void {
    while (this.count > this.maxEntries && this.oldest) {
      const entry = this.oldest;
      this.unlink(entry);
      entry.index.delete(entry.key);
      this.count--;
    }
  }

  /** Makes `entry` the most recently used. */
  private link(entry: Entry): void {
    entry.linked = ++this.links;
    entry.older = this.newest;
    entry.newer = null;
    if (this.newest) this.newest.newer = entry;
    else this.oldest = entry;
    this.newest = entry;
  }

  private unlink(entry: Entry): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.newest = entry.older;
  }
}
