// Persons and visitors: the reads identity resolution needs for a batch, and its writes, each one
// statement for the whole batch. The writes keep the analytical engine's copies too (PeopleMirror),
// so no caller can store one side without the other.

import { instantText as utc } from '../instants.js';
import { columnOf as column, type ControlSql, type ControlTx } from './store.js';


/** A person's identifiers: what resolution reads and the identity cache keeps (never traits). */
export interface PersonRecord {
  person_key: number;
  person_id: string;
  external_id: string | null;
  email: string | null;
}

/**
 * What one batch writes onto a person besides its email: the batch's traits shallow-merged in
 * order (merging is associative, so the store merges this onto the stored traits) and its name.
 */
export interface PersonUpdate {
  traits?: Record<string, unknown>;
  name?: string;
  /** The batch gave the person its email (the record's): with a name, what can change its search text. */
  emailSet?: true;
}

export interface VisitorRecord {
  visitor_key: number;
  visitor_id: string;
  person_key: number | null;
  /** Events were stored for it without a person: they follow its link. */
  anonymous_events: boolean;
}

/**
 * The copies of persons and visitors an analytical engine keeps when it cannot read these tables in
 * place (ClickHouse), written in the same unit of work; none on an engine that reads them here.
 */
export interface PeopleMirror {
  /** Persons created or changed, once the control store holds their new state (traits merged there). */
  persons(ws: string, persons: PersonRecord[]): Promise<void>;
  /** Visitors created or relinked, as they now stand: a visitor's last link wins. */
  visitors(ws: string, visitors: VisitorRecord[]): Promise<void>;
}

/** A visitor a batch creates, as its row is inserted. */
export type NewVisitor = VisitorRecord & { first_seen_at: Date };

/** Where persons and visitors are written: a unit of work's control transaction and its engine's copies. */
export interface PeopleWrites {
  control: ControlTx;
  mirror: PeopleMirror;
}

const PERSON_COLUMNS = 'person_key, person_id, external_id, email';

function toPerson(row: Record<string, unknown>): PersonRecord {
  return {
    person_key: Number(row.person_key),
    person_id: row.person_id as string,
    external_id: (row.external_id as string | null) ?? null,
    email: (row.email as string | null) ?? null,
  };
}

/**
 * Locks the persons of `keys` until this transaction ends, in key order (two lockers never
 * deadlock): `write` for a unit that links, stores or changes something of theirs, `merge` for a
 * merge (people/merge.ts). A merge and a write of one person serialize; writes of it do not wait for
 * each other. On PostgreSQL (repeatable read) a person that a merge deleted or changed after this
 * transaction's snapshot fails the lock as a lost race: the transaction runs again and finds the
 * person it was merged into. No lock where one writer at a time runs (DuckDB).
 */
export async function lockPersons(tx: ControlSql, ws: string, keys: Iterable<number>, mode: 'merge' | 'write'): Promise<void> {
  const lock = tx.dialect.personLocks?.[mode];
  const sorted = [...new Set(keys)].sort((a, b) => a - b);
  if (!lock || sorted.length === 0) return;
  await tx.all(`SELECT person_key FROM persons WHERE workspace_id = $1 AND person_key IN (SELECT ${tx.dialect.keys('$2')})
    ORDER BY person_key ${lock}`, [ws, column(sorted)]);
}

/** Persons of the workspace whose `by` column is one of `values`. */
export async function personsBy(tx: ControlSql, ws: string, by: 'external_id' | 'email' | 'person_key', values: (string | number)[]): Promise<PersonRecord[]> {
  if (values.length === 0) return [];
  const list = by === 'person_key' ? tx.dialect.keys('$2') : tx.dialect.texts('$2');
  const found = await tx.all(`SELECT ${PERSON_COLUMNS} FROM persons WHERE workspace_id = $1 AND ${by} IN (SELECT ${list})`,
    [ws, column(values)]);
  return found.map(toPerson);
}

export async function visitorsById(tx: ControlSql, ws: string, visitorIds: string[]): Promise<VisitorRecord[]> {
  if (visitorIds.length === 0) return [];
  const found = await tx.all(`SELECT visitor_key, visitor_id, person_key, anonymous_events FROM visitors
    WHERE workspace_id = $1 AND visitor_id IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(visitorIds)]);
  return found.map((r) => ({
    visitor_key: Number(r.visitor_key), visitor_id: r.visitor_id as string, person_key: r.person_key === null ? null : Number(r.person_key),
    anonymous_events: r.anonymous_events === true,
  }));
}

/** The stored traits of persons by key, as JSON text (`{}` for a person without any). */
export async function personTraits(tx: ControlSql, ws: string, personKeys: number[]): Promise<Map<number, string>> {
  if (personKeys.length === 0) return new Map();
  const found = await tx.all(`SELECT person_key, CAST(traits AS VARCHAR) AS traits FROM persons
    WHERE workspace_id = $1 AND person_key IN (SELECT ${tx.dialect.keys('$2')})`, [ws, column(personKeys)]);
  return new Map(found.map((r) => [Number(r.person_key), (r.traits as string | null) ?? '{}']));
}

/**
 * Inserts `created` and writes the email of `changed` and their `updates`, a statement each. The
 * traits are merged inside the engine (keys sent replace, others stay, null is stored as null), so
 * a person's traits never pass through this process whole.
 */
export async function savePersons(
  { control: tx, mirror }: PeopleWrites, ws: string, created: PersonRecord[], changed: PersonRecord[], updates: ReadonlyMap<number, PersonUpdate>, at: Date,
): Promise<void> {
  const columns = (people: PersonRecord[]) => [
    column(people.map((p) => p.person_key)), column(people.map((p) => p.email)), column(people.map((p) => updates.get(p.person_key)?.name ?? null)),
    column(people.map((p) => JSON.stringify(updates.get(p.person_key)?.traits ?? {}))),
  ];
  const { keys, texts, json, mergeObject } = tx.dialect;
  const { personSearch } = tx.search;
  // The instant is cast: in a select list nothing else gives a PostgreSQL parameter its type.
  if (created.length > 0) {
    await tx.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at${personSearch ? ', search' : ''})
      SELECT $1, k, id, ext, email, name, ${json('traits')}, CAST($2 AS TIMESTAMP), CAST($2 AS TIMESTAMP)${personSearch ? `, ${personSearch('email', 'ext', 'name')}` : ''}
      FROM (SELECT ${keys('$3')} AS k, ${texts('$4')} AS email, ${texts('$5')} AS name,
        ${texts('$6')} AS traits, ${texts('$7')} AS id, ${texts('$8')} AS ext) AS c`,
    [ws, at, ...columns(created), column(created.map((p) => p.person_id)), column(created.map((p) => p.external_id))]);
  }
  // The values the search finds a person by: a created person's, and those a change stores (an
  // email given, a name sent). Traits alone, the common write, give none.
  tx.search.indexPersons(ws, [
    ...created.map((p) => ({ key: p.person_key, values: [p.email, p.external_id, updates.get(p.person_key)?.name] })),
    ...changed.flatMap((p) => {
      const update = updates.get(p.person_key);
      return update?.emailSet || update?.name !== undefined ? [{ key: p.person_key, values: [update.emailSet ? p.email : null, update.name] }] : [];
    }),
  ]);
  if (changed.length > 0) {
    // Stored traits that are not an object (an import may bring any JSON) are replaced.
    await tx.run(`UPDATE persons SET email = coalesce(persons.email, u.email), name = coalesce(u.name, persons.name),
        traits = ${mergeObject('persons.traits', 'u.traits')}, updated_at = $2${personSearch
  ? `, search = ${personSearch('coalesce(persons.email, u.email)', 'persons.external_id', 'coalesce(u.name, persons.name)')}` : ''}
      FROM (SELECT ${keys('$3')} AS k, ${texts('$4')} AS email, ${texts('$5')} AS name,
        ${texts('$6')} AS traits) AS u
      WHERE persons.workspace_id = $1 AND persons.person_key = u.k`,
    [ws, at, ...columns(changed)]);
  }
  await mirror.persons(ws, [...created, ...changed]);
}

/**
 * Inserts `created` visitors, moves the links of `relinked` ones and marks `anonymous` ones (stored
 * visitors given their first event without a person), a statement each.
 */
export async function saveVisitors(
  { control: tx, mirror }: PeopleWrites, ws: string, created: NewVisitor[], relinked: VisitorRecord[], anonymous: VisitorRecord[], at: Date,
): Promise<void> {
  const { keys, texts } = tx.dialect;
  if (created.length > 0) {
    await tx.run(`INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at, anonymous_events)
      SELECT $1, k, id, p, CAST(seen AS TIMESTAMP), CASE WHEN p IS NULL THEN NULL ELSE CAST($2 AS TIMESTAMP) END, a IS NOT NULL
      FROM (SELECT ${keys('$3')} AS k, ${texts('$4')} AS id, ${keys('$5')} AS p, ${texts('$6')} AS seen, ${keys('$7')} AS a) AS c`,
    [ws, at, column(created.map((v) => v.visitor_key)), column(created.map((v) => v.visitor_id)),
      column(created.map((v) => v.person_key)), column(created.map((v) => utc(v.first_seen_at))),
      // The mark as a key column (1 or null): the dialects have list parameters of keys and texts only.
      column(created.map((v) => (v.anonymous_events ? 1 : null)))]);
  }
  if (relinked.length > 0) {
    await tx.run(`UPDATE visitors SET person_key = u.p, linked_at = $2
      FROM (SELECT ${keys('$3')} AS k, ${keys('$4')} AS p) AS u
      WHERE visitors.workspace_id = $1 AND visitors.visitor_key = u.k`,
    [ws, at, column(relinked.map((v) => v.visitor_key)), column(relinked.map((v) => v.person_key))]);
  }
  if (anonymous.length > 0) {
    await tx.run(`UPDATE visitors SET anonymous_events = TRUE FROM (SELECT ${keys('$2')} AS k) AS u
      WHERE visitors.workspace_id = $1 AND visitors.visitor_key = u.k`, [ws, column(anonymous.map((v) => v.visitor_key))]);
  }
  await mirror.visitors(ws, [...created, ...relinked]);
}
