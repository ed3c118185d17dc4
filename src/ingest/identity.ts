// Identity resolution for a batch (the spec's identifier table, decisions §3): external_id wins
// over email, email over visitor_id; a visitor sent with a winning identifier is linked to that
// person (latest link wins); a visitor alone reaches only the person it is already linked to.
// The batch's persons and visitors are loaded once, resolved in order in memory, written once.

import { randomBytes } from 'node:crypto';
import type { UnitOfWork, VisitorLink } from '../store/analytics.js';
import {
  nextKeys, type PersonRecord, type PersonUpdate, personsBy, savePersons, saveVisitors, type VisitorRecord, visitorsById,
} from '../store/control/people.js';
import { recordNewTraitPaths } from '../store/control/properties.js';
import type { ControlStore } from '../store/control/store.js';
import { propertyPaths } from '../store/property-paths.js';
import { identityCacheOf } from './identity-cache.js';
import { knownIdsOf } from './known-ids.js';

export interface IdentityInput {
  external_id?: string;
  email?: string;
  visitor_id?: string;
  name?: string;
  traits?: Record<string, unknown>;
  /** When the visitor was seen (first_seen_at of a new visitor). */
  at: Date;
  /** An event is stored for this input: without a person, its visitor is marked as having anonymous events. */
  event?: true;
}

export interface Resolved {
  person_key: number | null;
  person_id: string | null;
  visitor_key: number | null;
  /** True when the person came from external_id or email (not only through the visitor's link). */
  identified: boolean;
}

const newPersonId = () => `per_${randomBytes(12).toString('base64url')}`;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Resolves a batch inside a unit of work on `store`. Known identifiers come from the identity cache,
 * the others from one lookup each; the cache learns what changed once the control transaction
 * commits. Records from the cache are shared with it: they are copied before the first change.
 */
export async function resolveIdentities(
  store: ControlStore, work: UnitOfWork, ws: string, inputs: IdentityInput[], now: Date,
): Promise<{ resolved: Resolved[]; links: VisitorLink[] }> {
  const tx = work.control;
  const cache = identityCacheOf(store);
  const known = knownIdsOf(store);
  known?.prepare(ws);
  const unique = <T>(values: (T | undefined)[]) => [...new Set(values.filter((v): v is T => v !== undefined))];

  const shared = new Set<PersonRecord | VisitorRecord>();
  const visitors = new Map<string, VisitorRecord>();
  const unknownVisitors: string[] = [];
  const visitorIds = unique(inputs.map((i) => i.visitor_id));
  for (const id of visitorIds) {
    const v = cache.visitor(ws, id);
    if (v) {
      visitors.set(id, v);
      shared.add(v);
    } else {
      unknownVisitors.push(id);
    }
  }
  // Ids proven new need no lookup (a scan of the table on DuckDB).
  const maybeStored = known ? unknownVisitors.filter((id) => !known.absent(ws, 'visitor_id', id)) : unknownVisitors;
  for (const v of await visitorsById(tx, ws, maybeStored)) visitors.set(v.visitor_id, v);

  // One object per person, however many identifiers reach it.
  const byKey = new Map<number, PersonRecord>();
  const add = (p: PersonRecord, fromCache: boolean) => {
    if (byKey.has(p.person_key)) return;
    byKey.set(p.person_key, p);
    if (fromCache) shared.add(p);
  };
  /** Loads persons by one identifier (cache first); answers how many values matched nobody. */
  const load = async (by: 'external_id' | 'email' | 'person_key', values: (string | number)[]): Promise<number> => {
    const unknown = values.filter((value) => {
      const p = cache.person(ws, by, value);
      if (p) add(p, true);
      return !p;
    });
    const maybeStored = known && by !== 'person_key' ? unknown.filter((value) => !known.absent(ws, by, value as string)) : unknown;
    const found = await personsBy(tx, ws, by, maybeStored);
    for (const p of found) add(p, false);
    return unknown.length - found.length;
  };
  const newExternalIds = await load('external_id', unique(inputs.map((i) => i.external_id)));
  const newEmails = await load('email', unique(inputs.map((i) => (i.external_id === undefined ? i.email : undefined))));
  await load('email', unique(inputs.map((i) => (i.external_id !== undefined ? i.email : undefined))));
  await load('person_key', unique([...visitors.values()].map((v) => v.person_key ?? undefined)));
  const byExternalId = new Map([...byKey.values()].filter((p) => p.external_id !== null).map((p) => [p.external_id!, p]));
  const byEmail = new Map([...byKey.values()].filter((p) => p.email !== null).map((p) => [p.email!, p]));

  const createdPersons: PersonRecord[] = [];
  /** By key: a record copied later in the batch replaces the one that was marked. */
  const changedPersons = new Set<number>();
  /** Traits and name per person key, merged in input order; the store merges them onto its own. */
  const updates = new Map<number, PersonUpdate>();
  const createdVisitors: (VisitorRecord & { first_seen_at: Date })[] = [];
  const createdVisitorIds = new Set<string>();
  const relinked = new Map<string, VisitorRecord>();
  const anonymous = new Map<string, VisitorRecord>();
  const links: VisitorLink[] = [];
  // Keys are drawn up front: at most one new person per identifier not found, one visitor per id.
  const personKeys = await nextKeys(store, 'person_keys', newExternalIds + newEmails);
  const visitorKeys = await nextKeys(store, 'visitor_keys', visitorIds.length - visitors.size);

  const writablePerson = (p: PersonRecord): PersonRecord => {
    if (!shared.has(p)) return p;
    const copy = { ...p };
    byKey.set(copy.person_key, copy);
    if (copy.external_id !== null) byExternalId.set(copy.external_id, copy);
    if (copy.email !== null) byEmail.set(copy.email, copy);
    return copy;
  };
  const writableVisitor = (v: VisitorRecord): VisitorRecord => {
    if (!shared.has(v)) return v;
    const copy = { ...v };
    visitors.set(copy.visitor_id, copy);
    return copy;
  };

  const createPerson = (external_id: string | null, email: string | null): PersonRecord => {
    const person: PersonRecord = { person_key: personKeys.pop()!, person_id: newPersonId(), external_id, email };
    createdPersons.push(person);
    if (external_id !== null) known?.add(ws, 'external_id', external_id);
    if (email !== null) known?.add(ws, 'email', email);
    byKey.set(person.person_key, person);
    if (external_id !== null) byExternalId.set(external_id, person);
    if (email !== null) byEmail.set(email, person);
    return person;
  };

  const resolved = inputs.map((input): Resolved => {
    let person: PersonRecord | null = null;
    if (input.external_id !== undefined) {
      person = byExternalId.get(input.external_id) ?? createPerson(input.external_id, null);
      // The email joins this person only when free: persons are never merged implicitly.
      if (input.email !== undefined && person.email === null && !byEmail.has(input.email)) {
        person = writablePerson(person);
        person.email = input.email;
        known?.add(ws, 'email', input.email);
        byEmail.set(input.email, person);
        changedPersons.add(person.person_key);
        updates.set(person.person_key, { ...updates.get(person.person_key), emailSet: true });
      }
    } else if (input.email !== undefined) {
      person = byEmail.get(input.email) ?? createPerson(null, input.email);
    }
    const identified = person !== null;

    let visitor: VisitorRecord | null = null;
    if (input.visitor_id !== undefined) {
      visitor = visitors.get(input.visitor_id) ?? null;
      if (!visitor) {
        const created = { visitor_key: visitorKeys.pop()!, visitor_id: input.visitor_id, person_key: null, first_seen_at: input.at, anonymous_events: false };
        createdVisitors.push(created);
        known?.add(ws, 'visitor_id', created.visitor_id);
        createdVisitorIds.add(created.visitor_id);
        visitors.set(input.visitor_id, created);
        visitor = created;
      }
      if (person && visitor.person_key !== person.person_key) {
        visitor = writableVisitor(visitor);
        visitor.person_key = person.person_key;
        if (!createdVisitorIds.has(visitor.visitor_id)) relinked.set(visitor.visitor_id, visitor);
        links.push({ workspaceId: ws, visitorId: visitor.visitor_id, visitorKey: visitor.visitor_key, personKey: person.person_key });
      }
      if (!person && input.event && !visitor.anonymous_events) {
        visitor = writableVisitor(visitor);
        visitor.anonymous_events = true;
        if (!createdVisitorIds.has(visitor.visitor_id)) anonymous.set(visitor.visitor_id, visitor);
      }
      if (!person && visitor.person_key !== null) person = byKey.get(visitor.person_key) ?? null;
    }

    if (person && (input.traits !== undefined || input.name !== undefined)) {
      const update = updates.get(person.person_key) ?? {};
      if (input.traits) update.traits = { ...update.traits, ...input.traits };
      if (input.name !== undefined) update.name = input.name;
      updates.set(person.person_key, update);
      changedPersons.add(person.person_key);
    }
    return { person_key: person?.person_key ?? null, person_id: person?.person_id ?? null, visitor_key: visitor?.visitor_key ?? null, identified };
  });

  const created = new Set(createdPersons.map((p) => p.person_key));
  const changed = [...changedPersons].filter((key) => !created.has(key)).map((key) => byKey.get(key)!);
  await savePersons(tx, ws, createdPersons, changed, updates, now);
  await recordNewTraitPaths(store, tx, ws, [...updates.values()].flatMap((u) => (u.traits ? propertyPaths(u.traits) : [])));
  await saveVisitors(tx, ws, createdVisitors, [...relinked.values()], [...anonymous.values()], now);
  await work.analytics.recordIdentities(ws, [...createdPersons, ...changed], createdVisitors);
  await work.analytics.linkVisitors(links);
  tx.afterCommit(() => cache.remember(ws,
    [...byKey.values()].filter((p) => !shared.has(p)), [...visitors.values()].filter((v) => !shared.has(v))));
  return { resolved, links };
}
