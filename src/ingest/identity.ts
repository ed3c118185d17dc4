// Identity resolution for a batch (the spec's identifier table, decisions §3): external_id wins
// over email, email over visitor_id; a visitor sent with a winning identifier is linked to that
// person (latest link wins); a visitor alone reaches only the person it is already linked to.
// The batch's persons and visitors are loaded once, resolved in order in memory, written once
// (IdentityResolution, shaped like attribution's PaymentGroup).

import type { UnitOfWork, VisitorLink } from '../store/analytics.js';
import {
  lockPersons, type NewVisitor, type PersonRecord, type PersonUpdate, personsBy, savePersons, saveVisitors, type VisitorRecord, visitorsById,
} from '../store/control/people.js';
import { personsByIdentifier } from '../store/control/merges.js';
import { recordNewTraitPaths } from '../store/control/properties.js';
import type { IdentityCache } from '../store/control/identity-cache.js';
import type { KnownIds } from '../store/control/known-ids.js';
import type { ControlStore } from '../store/control/store.js';
import { propertyPaths } from '../store/property-paths.js';
import { newIds } from './ids.js';

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

/** The distinct defined values of `pick` over `items`, in first-seen order (one pass, no intermediate arrays). */
function unique<I, T>(items: Iterable<I>, pick: (item: I) => T | undefined): T[] {
  const seen = new Set<T>();
  for (const item of items) {
    const value = pick(item);
    if (value !== undefined) seen.add(value);
  }
  return [...seen];
}

/** Whether a record is the identity cache's own (it freezes what it keeps), not the batch's. */
const isShared = (record: PersonRecord | VisitorRecord): boolean => Object.isFrozen(record);

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Identity resolution of one batch inside a unit of work, in three steps: `load` reads every person
 * and visitor the batch names (the identity cache first, then a statement per identifier) and draws
 * the keys it may need; `resolve` decides each input in order, in memory; `save` writes what changed,
 * a statement per table. Records from the cache are shared with it (frozen: isShared) and copied
 * before the first change; a batch of known persons keeps no set of them.
 */
export class IdentityResolution {
  private readonly visitors = new Map<string, VisitorRecord>();
  /** One object per person, however many identifiers reach it. */
  private readonly persons = new Map<number, PersonRecord>();
  private readonly byExternalId = new Map<string, PersonRecord>();
  private readonly byEmail = new Map<string, PersonRecord>();
  /** Identifiers of persons merged away, by the key of the person they were merged into. */
  private readonly aliasedExternalIds = new Map<string, number>();
  private readonly aliasedEmails = new Map<string, number>();
  /** Keys drawn up front: at most one new person per identifier not found, one visitor per id. */
  private personKeys: number[] = [];
  /** Their public ids, drawn with them: a call to the random source per person was among a new person's largest costs. */
  private personIds: string[] = [];
  private visitorKeys: number[] = [];

  /** Persons (stored before) the batch writes something for: locked before its writes (lockPersons). */
  private readonly written = new Set<number>();
  private readonly createdPersons: PersonRecord[] = [];
  /** By key: a record copied later in the batch replaces the one that was marked. */
  private readonly changedPersons = new Set<number>();
  /** Traits and name per person key, merged in input order; the store merges them onto its own. */
  private readonly updates = new Map<number, PersonUpdate>();
  private readonly createdVisitors: NewVisitor[] = [];
  private readonly createdVisitorIds = new Set<string>();
  private readonly relinked = new Map<string, VisitorRecord>();
  private readonly anonymous = new Map<string, VisitorRecord>();
  /** Visitors linked to a person or moved to another, in input order. */
  readonly links: VisitorLink[] = [];

  private constructor(
    private readonly store: ControlStore,
    private readonly work: UnitOfWork,
    private readonly ws: string,
    private readonly inputs: IdentityInput[],
    private readonly cache: IdentityCache,
    private readonly known: KnownIds | null,
  ) {}

  static async load(store: ControlStore, work: UnitOfWork, ws: string, inputs: IdentityInput[]): Promise<IdentityResolution> {
    const known = store.caches.knownIds;
    known?.prepare(ws);
    const batch = new IdentityResolution(store, work, ws, inputs, store.caches.identities, known);
    const visitorIds = unique(inputs, (i) => i.visitor_id);
    await batch.loadVisitors(visitorIds);
    const newExternalIds = await batch.loadPersons('external_id', unique(inputs, (i) => i.external_id));
    const newEmails = await batch.loadPersons('email', unique(inputs, (i) => (i.external_id === undefined ? i.email : undefined)));
    await batch.loadPersons('email', unique(inputs, (i) => (i.external_id !== undefined ? i.email : undefined)));
    await batch.loadPersons('person_key', unique(batch.visitors.values(), (v) => v.person_key ?? undefined));
    for (const p of batch.persons.values()) batch.indexIdentifiers(p);
    batch.personKeys = await store.nextKeys('person_keys', newExternalIds + newEmails);
    batch.personIds = newIds('per', newExternalIds + newEmails);
    batch.visitorKeys = await store.nextKeys('visitor_keys', visitorIds.length - batch.visitors.size);
    return batch;
  }

  private async loadVisitors(visitorIds: string[]): Promise<void> {
    const unknown: string[] = [];
    for (const id of visitorIds) {
      const v = this.cache.visitor(this.ws, id);
      if (v) this.visitors.set(id, v);
      else unknown.push(id);
    }
    // Ids proven new need no lookup (a scan of the table on DuckDB).
    const known = this.known;
    const maybeStored = known ? unknown.filter((id) => !known.absent(this.ws, 'visitor_id', id)) : unknown;
    for (const v of await visitorsById(this.work.control, this.ws, maybeStored)) this.visitors.set(v.visitor_id, v);
  }

  /** Loads persons by one identifier (cache first); answers how many values matched nobody. */
  private async loadPersons(by: 'external_id' | 'email' | 'person_key', values: (string | number)[]): Promise<number> {
    const unknown = values.filter((value) => {
      const p = this.cache.person(this.ws, by, value);
      if (p) this.add(p);
      return !p;
    });
    const known = this.known;
    const maybeStored = known && by !== 'person_key' ? unknown.filter((value) => !known.absent(this.ws, by, value as string)) : unknown;
    if (by === 'person_key') {
      const found = await personsBy(this.work.control, this.ws, by, maybeStored);
      for (const p of found) this.add(p);
      return unknown.length - found.length;
    }
    // An identifier of a person merged away finds the person it was merged into (an alias).
    const found = await personsByIdentifier(this.work.control, this.ws, by, maybeStored as string[]);
    for (const { value, person } of found) {
      this.add(person);
      if (person[by] !== value) (by === 'external_id' ? this.aliasedExternalIds : this.aliasedEmails).set(value, person.person_key);
    }
    return unknown.length - found.length;
  }

  private add(p: PersonRecord): void {
    if (!this.persons.has(p.person_key)) this.persons.set(p.person_key, p);
  }

  /** Makes `p` the person of its key and identifiers. */
  private index(p: PersonRecord): void {
    this.persons.set(p.person_key, p);
    this.indexIdentifiers(p);
  }

  private indexIdentifiers(p: PersonRecord): void {
    if (p.external_id !== null) this.byExternalId.set(p.external_id, p);
    if (p.email !== null) this.byEmail.set(p.email, p);
  }

  /** Each input's person and visitor, decided in input order. */
  resolve(): Resolved[] {
    return this.inputs.map((input) => {
      let person = this.identify(input);
      const identified = person !== null;
      let visitor: VisitorRecord | null = null;
      if (input.visitor_id !== undefined) {
        visitor = this.visit(input, input.visitor_id, person);
        if (!person && visitor.person_key !== null) person = this.persons.get(visitor.person_key) ?? null;
      }
      if (person) this.update(person, input);
      // A visitor's page view alone writes nothing for its person.
      if (person && (identified || input.event || input.traits !== undefined || input.name !== undefined)) this.written.add(person.person_key);
      return { person_key: person?.person_key ?? null, person_id: person?.person_id ?? null, visitor_key: visitor?.visitor_key ?? null, identified };
    });
  }

  /** The person an input's external_id, else its email, names: found, or created. */
  private identify(input: IdentityInput): PersonRecord | null {
    if (input.external_id !== undefined) {
      const person = this.byExternalId.get(input.external_id) ?? this.aliased(this.aliasedExternalIds, input.external_id)
        ?? this.createPerson(input.external_id, null);
      // The email joins this person only when free: persons are never merged implicitly.
      if (input.email === undefined || person.email !== null || this.byEmail.has(input.email) || this.aliasedEmails.has(input.email)) return person;
      const writable = this.writablePerson(person);
      writable.email = input.email;
      this.known?.add(this.ws, 'email', input.email);
      this.byEmail.set(input.email, writable);
      this.changedPersons.add(writable.person_key);
      this.updates.set(writable.person_key, { ...this.updates.get(writable.person_key), emailSet: true });
      return writable;
    }
    if (input.email !== undefined) return this.byEmail.get(input.email) ?? this.aliased(this.aliasedEmails, input.email) ?? this.createPerson(null, input.email);
    return null;
  }

  /** The person an identifier of a merged-away person names now (its record as the batch holds it). */
  private aliased(aliases: Map<string, number>, value: string): PersonRecord | undefined {
    const key = aliases.get(value);
    return key === undefined ? undefined : this.persons.get(key);
  }

  /** The input's visitor, created when new; linked to `person`, or marked as having anonymous events. */
  private visit(input: IdentityInput, visitorId: string, person: PersonRecord | null): VisitorRecord {
    let visitor = this.visitors.get(visitorId) ?? this.createVisitor(visitorId, input.at);
    const created = this.createdVisitorIds.has(visitorId);
    if (person && visitor.person_key !== person.person_key) {
      visitor = this.writableVisitor(visitor);
      visitor.person_key = person.person_key;
      if (!created) this.relinked.set(visitorId, visitor);
      this.links.push({ workspaceId: this.ws, visitorId, visitorKey: visitor.visitor_key, personKey: person.person_key, created });
    }
    if (!person && input.event && !visitor.anonymous_events) {
      visitor = this.writableVisitor(visitor);
      visitor.anonymous_events = true;
      if (!created) this.anonymous.set(visitorId, visitor);
    }
    return visitor;
  }

  /** Merges the input's traits and name into what the batch writes onto `person`. */
  private update(person: PersonRecord, input: IdentityInput): void {
    if (input.traits === undefined && input.name === undefined) return;
    const update = this.updates.get(person.person_key) ?? {};
    if (input.traits) update.traits = { ...update.traits, ...input.traits };
    if (input.name !== undefined) update.name = input.name;
    this.updates.set(person.person_key, update);
    this.changedPersons.add(person.person_key);
  }

  private createPerson(externalId: string | null, email: string | null): PersonRecord {
    const person: PersonRecord = { person_key: this.personKeys.pop()!, person_id: this.personIds.pop()!, external_id: externalId, email };
    this.createdPersons.push(person);
    if (externalId !== null) this.known?.add(this.ws, 'external_id', externalId);
    if (email !== null) this.known?.add(this.ws, 'email', email);
    this.index(person);
    return person;
  }

  private createVisitor(visitorId: string, at: Date): VisitorRecord {
    const created = { visitor_key: this.visitorKeys.pop()!, visitor_id: visitorId, person_key: null, first_seen_at: at, anonymous_events: false };
    this.createdVisitors.push(created);
    this.known?.add(this.ws, 'visitor_id', visitorId);
    this.createdVisitorIds.add(visitorId);
    this.visitors.set(visitorId, created);
    return created;
  }

  private writablePerson(p: PersonRecord): PersonRecord {
    if (!isShared(p)) return p;
    const copy = { ...p };
    this.index(copy);
    return copy;
  }

  private writableVisitor(v: VisitorRecord): VisitorRecord {
    if (!isShared(v)) return v;
    const copy = { ...v };
    this.visitors.set(copy.visitor_id, copy);
    return copy;
  }

  /**
   * Writes what the batch changed (the engine's copies with it: control/people.ts); the identity
   * cache learns it once the control transaction commits.
   */
  async save(now: Date): Promise<void> {
    const { work, ws } = this;
    const created = new Set(this.createdPersons.map((p) => p.person_key));
    await lockPersons(work.control, ws, [...this.written].filter((key) => !created.has(key)), 'write');
    const changed = [...this.changedPersons].filter((key) => !created.has(key)).map((key) => this.persons.get(key)!);
    await savePersons(work, ws, this.createdPersons, changed, this.updates, now);
    await recordNewTraitPaths(this.store, work.control, ws, [...this.updates.values()].flatMap((u) => (u.traits ? propertyPaths(u.traits) : [])));
    await saveVisitors(work, ws, this.createdVisitors, [...this.relinked.values()], [...this.anonymous.values()], now);
    work.control.afterCommit(() => this.cache.remember(ws,
      [...this.persons.values()].filter((p) => !isShared(p)), [...this.visitors.values()].filter((v) => !isShared(v))));
  }
}

/** Resolves a batch inside a unit of work on `store`: load, resolve, save. */
export async function resolveIdentities(
  store: ControlStore, work: UnitOfWork, ws: string, inputs: IdentityInput[], now: Date,
): Promise<{ resolved: Resolved[]; links: VisitorLink[] }> {
  const batch = await IdentityResolution.load(store, work, ws, inputs);
  const resolved = batch.resolve();
  await batch.save(now);
  return { resolved, links: batch.links };
}
