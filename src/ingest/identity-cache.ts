// Committed persons and visitors seen recently, so a batch of known people needs no lookup
// statement (the lookups were most of an event batch's time). Entries are only ever the state of
// committed rows: resolution copies a record before changing it and hands its changes back after
// its transaction commits (Store.afterCommit). Every writer of persons and visitors resolves
// through here, so an entry is never stale; an identifier missing from the cache is looked up.

import type { Store } from '../store/db.js';
import type { PersonRecord, VisitorRecord } from '../store/people.js';

/** Past this many entries in a workspace, its cache starts over (bounds memory). */
const MAX_ENTRIES = 1_000_000;

class WorkspaceCache {
  readonly persons = new Map<number, PersonRecord>();
  readonly byExternalId = new Map<string, number>();
  readonly byEmail = new Map<string, number>();
  readonly visitors = new Map<string, VisitorRecord>();
}

export class IdentityCache {
  private readonly workspaces = new Map<string, WorkspaceCache>();

  private of(ws: string): WorkspaceCache {
    let cache = this.workspaces.get(ws);
    if (!cache) this.workspaces.set(ws, (cache = new WorkspaceCache()));
    return cache;
  }

  /** The cached record itself: never change it (copy first). */
  visitor(ws: string, visitorId: string): VisitorRecord | undefined {
    return this.workspaces.get(ws)?.visitors.get(visitorId);
  }

  /** The cached record itself: never change it (copy first). */
  person(ws: string, by: 'external_id' | 'email' | 'person_key', value: string | number): PersonRecord | undefined {
    const cache = this.workspaces.get(ws);
    if (!cache) return undefined;
    const key = by === 'person_key' ? value as number : (by === 'external_id' ? cache.byExternalId : cache.byEmail).get(value as string);
    return key === undefined ? undefined : cache.persons.get(key);
  }

  /** Records the committed state of these persons and visitors (the cache keeps the objects). */
  remember(ws: string, persons: Iterable<PersonRecord>, visitors: Iterable<VisitorRecord>): void {
    let cache = this.of(ws);
    if (cache.persons.size + cache.visitors.size > MAX_ENTRIES) {
      this.workspaces.delete(ws);
      cache = this.of(ws);
    }
    for (const p of persons) {
      cache.persons.set(p.person_key, p);
      if (p.external_id !== null) cache.byExternalId.set(p.external_id, p.person_key);
      if (p.email !== null) cache.byEmail.set(p.email, p.person_key);
    }
    for (const v of visitors) cache.visitors.set(v.visitor_id, { visitor_key: v.visitor_key, visitor_id: v.visitor_id, person_key: v.person_key });
  }
}

const caches = new WeakMap<Store, IdentityCache>();

/** The one cache of a store: two caches over the same rows could disagree. */
export function identityCacheOf(store: Store): IdentityCache {
  let cache = caches.get(store);
  if (!cache) caches.set(store, (cache = new IdentityCache()));
  return cache;
}
