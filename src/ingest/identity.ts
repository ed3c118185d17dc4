// Identity resolution for a batch (the spec's identifier table, decisions §3): external_id wins
// over email, email over visitor_id; a visitor sent with a winning identifier is linked to that
// person (latest link wins); a visitor alone reaches only the person it is already linked to.
// The batch's persons and visitors are loaded once, resolved in order in memory, written once.

import { randomBytes } from 'node:crypto';
import {
  nextKeys, type PersonRecord, personsBy, savePersons, saveVisitors, type Tx, type VisitorRecord, visitorsById,
} from '../store/people.js';

export interface IdentityInput {
  external_id?: string;
  email?: string;
  visitor_id?: string;
  name?: string;
  traits?: Record<string, unknown>;
  /** When the visitor was seen (first_seen_at of a new visitor). */
  at: Date;
}

export interface Resolved {
  person_key: number | null;
  person_id: string | null;
  visitor_key: number | null;
  /** True when the person came from external_id or email (not only through the visitor's link). */
  identified: boolean;
}

/** A visitor newly linked to a person, or moved to another one. */
export interface VisitorLink {
  workspaceId: string;
  visitorId: string;
  visitorKey: number;
  personKey: number;
}

const newPersonId = () => `per_${randomBytes(12).toString('base64url')}`;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function resolveIdentities(
  tx: Tx, ws: string, inputs: IdentityInput[], now: Date,
): Promise<{ resolved: Resolved[]; links: VisitorLink[] }> {
  const unique = <T>(values: (T | undefined)[]) => [...new Set(values.filter((v): v is T => v !== undefined))];
  const visitors = new Map((await visitorsById(tx, ws, unique(inputs.map((i) => i.visitor_id)))).map((v) => [v.visitor_id, v]));
  const loaded = [
    ...await personsBy(tx, ws, 'external_id', unique(inputs.map((i) => i.external_id))),
    ...await personsBy(tx, ws, 'email', unique(inputs.map((i) => i.email))),
    ...await personsBy(tx, ws, 'person_key', unique([...visitors.values()].map((v) => v.person_key ?? undefined))),
  ];
  const byKey = new Map(loaded.map((p) => [p.person_key, p]));
  const byExternalId = new Map([...byKey.values()].filter((p) => p.external_id !== null).map((p) => [p.external_id!, p]));
  const byEmail = new Map([...byKey.values()].filter((p) => p.email !== null).map((p) => [p.email!, p]));

  const createdPersons: PersonRecord[] = [];
  const changedPersons = new Set<PersonRecord>();
  const createdVisitors: (VisitorRecord & { first_seen_at: Date })[] = [];
  const createdVisitorIds = new Set<string>();
  const relinked = new Map<string, VisitorRecord>();
  const links: VisitorLink[] = [];
  // Keys are drawn up front: at most one new person and one new visitor per input.
  const personKeys = await nextKeys(tx, 'person_keys', inputs.filter((i) => i.external_id || i.email).length);
  const visitorKeys = await nextKeys(tx, 'visitor_keys', inputs.filter((i) => i.visitor_id && !visitors.has(i.visitor_id)).length);

  const createPerson = (external_id: string | null, email: string | null): PersonRecord => {
    const person: PersonRecord = { person_key: personKeys.pop()!, person_id: newPersonId(), external_id, email, name: null, traits: {} };
    createdPersons.push(person);
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
        person.email = input.email;
        byEmail.set(input.email, person);
        changedPersons.add(person);
      }
    } else if (input.email !== undefined) {
      person = byEmail.get(input.email) ?? createPerson(null, input.email);
    }
    const identified = person !== null;

    let visitor: VisitorRecord | null = null;
    if (input.visitor_id !== undefined) {
      visitor = visitors.get(input.visitor_id) ?? null;
      if (!visitor) {
        const created = { visitor_key: visitorKeys.pop()!, visitor_id: input.visitor_id, person_key: null, first_seen_at: input.at };
        createdVisitors.push(created);
        createdVisitorIds.add(created.visitor_id);
        visitors.set(input.visitor_id, created);
        visitor = created;
      }
      if (person && visitor.person_key !== person.person_key) {
        visitor.person_key = person.person_key;
        if (!createdVisitorIds.has(visitor.visitor_id)) relinked.set(visitor.visitor_id, visitor);
        links.push({ workspaceId: ws, visitorId: visitor.visitor_id, visitorKey: visitor.visitor_key, personKey: person.person_key });
      }
      if (!person && visitor.person_key !== null) person = byKey.get(visitor.person_key) ?? null;
    }

    if (person && (input.traits !== undefined || input.name !== undefined)) {
      if (input.traits) person.traits = { ...person.traits, ...input.traits };
      if (input.name !== undefined) person.name = input.name;
      changedPersons.add(person);
    }
    return { person_key: person?.person_key ?? null, person_id: person?.person_id ?? null, visitor_key: visitor?.visitor_key ?? null, identified };
  });

  const created = new Set(createdPersons);
  await savePersons(tx, ws, createdPersons, [...changedPersons].filter((p) => !created.has(p)), now);
  await saveVisitors(tx, ws, createdVisitors, [...relinked.values()], now);
  return { resolved, links };
}
