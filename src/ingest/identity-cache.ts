// Committed persons and visitors seen recently, so a batch of known people needs no lookup
// statement (the lookups were most of an event batch's time). It holds keys only: a person's ids
// and email, a visitor's key and link; never traits or names, which stay in the store (a cache of
// payloads grew to gigabytes). It is one LRU over every workspace, bounded in entries.
//
// Entries are only ever the state of committed rows: resolution copies a record before changing it
// and hands its changes back after its transaction commits (Store.afterCommit). Every writer of
// persons and visitors resolves through here, so an entry is never stale; an identifier missing
// from the cache (never seen, or evicted) is looked up.

import type { Store } from '../store/db.js';
import type { PersonRecord, VisitorRecord } from '../store/people.js';

/**
 * Entries kept (each identifier of a person, and each visitor, is one). Measured at about 210
 * bytes an entry with ids like the benchmark's, so ~210 MB when full; identifiers of 256
 * characters make an entry up to ~0.8 KB.
 */
export const IDENTITY_CACHE_ENTRIES = 1_000_000;

type PersonBy = 'external_id' | 'email' | 'person_key';

/** The key of an identifier: the workspace (ids never hold NUL), the kind, the value. */
const keyOf = (ws: string, kind: 'x' | 'e' | 'k' | 'v', value: string | number) => `${ws}\0${kind}${value}`;
const PERSON_KIND = { external_id: 'x', email: 'e', person_key: 'k' } as const;

export class IdentityCache {
  /** In use order, least recently used first (a Map iterates in insertion order). */
  private readonly entries = new Map<string, PersonRecord | VisitorRecord>();

  constructor(private maxEntries = IDENTITY_CACHE_ENTRIES) {}

  get size(): number {
    return this.entries.size;
  }

  /** What the cache holds, least recently used first (for inspection). */
  records(): IterableIterator<PersonRecord | VisitorRecord> {
    return this.entries.values();
  }

  /** Changes the bound, evicting the least recently used entries past it. */
  resize(maxEntries: number): void {
    this.maxEntries = maxEntries;
    this.evict();
  }

  /** The cached record itself: never change it (copy first). */
  visitor(ws: string, visitorId: string): VisitorRecord | undefined {
    return this.use(keyOf(ws, 'v', visitorId)) as VisitorRecord | undefined;
  }

  /** The cached record itself: never change it (copy first). */
  person(ws: string, by: PersonBy, value: string | number): PersonRecord | undefined {
    return this.use(keyOf(ws, PERSON_KIND[by], value)) as PersonRecord | undefined;
  }

  /** Records the committed state of these persons and visitors (the cache keeps the objects). */
  remember(ws: string, persons: Iterable<PersonRecord>, visitors: Iterable<VisitorRecord>): void {
    for (const p of persons) {
      const record: PersonRecord = { person_key: p.person_key, person_id: p.person_id, external_id: p.external_id, email: p.email };
      this.put(keyOf(ws, 'k', p.person_key), record);
      if (p.external_id !== null) this.put(keyOf(ws, 'x', p.external_id), record);
      if (p.email !== null) this.put(keyOf(ws, 'e', p.email), record);
    }
    for (const v of visitors) this.put(keyOf(ws, 'v', v.visitor_id), { visitor_key: v.visitor_key, visitor_id: v.visitor_id, person_key: v.person_key });
    this.evict();
  }

  private use(key: string): PersonRecord | VisitorRecord | undefined {
    const record = this.entries.get(key);
    if (record !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, record);
    }
    return record;
  }

  private put(key: string, record: PersonRecord | VisitorRecord): void {
    this.entries.delete(key);
    this.entries.set(key, record);
  }

  private evict(): void {
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) return;
      this.entries.delete(key);
    }
  }
}

const caches = new WeakMap<Store, IdentityCache>();

/** The one cache of a store: two caches over the same rows could disagree. */
export function identityCacheOf(store: Store): IdentityCache {
  let cache = caches.get(store);
  if (!cache) caches.set(store, (cache = new IdentityCache()));
  return cache;
}
