// Person merges (people/merge.ts): the control rows a merge moves, the identifiers of merged-away
// persons (aliases, which resolve to the person they were merged into from then on, on every
// ingest path), and the record of every merge. Statements written once for both control engines.

import { type PeopleWrites, type PersonRecord, personTraits, type VisitorRecord } from './people.js';
import { type PaymentsWrites, readCustomers, writeCustomers } from './payments.js';
import { columnOf as column, type ControlSql, type ControlTx } from './store.js';

/** How a merge names a person. */
export type PersonRef = { person_id: string } | { external_id: string } | { email: string };
export type AliasKind = 'person_id' | 'external_id' | 'email';

export interface MergeRow {
  merge_id: string;
  from_person_id: string;
  into_person_id: string;
  forced: boolean;
  visitors: number;
  customers: number;
  created_at: Date;
}

/** `pending` from a merge's first transaction until its later steps have run (people/merge.ts). */
export type MergeState = 'pending' | 'done';

/** Where a merge writes: the unit's control transaction and the engine's copies of persons, visitors and customers. */
export type MergeWrites = PeopleWrites & PaymentsWrites;

/** What one pass of moving rows moved. */
export interface Moved {
  visitors: VisitorRecord[];
  customers: number;
}

const PERSON = 'p.person_key, p.person_id, p.external_id, p.email';

const toPerson = (r: Record<string, unknown>): PersonRecord => ({
  person_key: Number(r.person_key), person_id: r.person_id as string,
  external_id: (r.external_id as string | null) ?? null, email: (r.email as string | null) ?? null,
});

/**
 * Persons of the workspace by one identifier, each with the value that found it: the persons holding
 * it, and for the values no person holds, the persons they were merged into (one statement).
 */
export async function personsByIdentifier(tx: ControlSql, ws: string, by: 'external_id' | 'email', values: string[]): Promise<{ value: string; person: PersonRecord }[]> {
  if (values.length === 0) return [];
  const list = tx.dialect.texts('$2');
  const found = await tx.all(`SELECT ${PERSON}, p.${by} AS matched FROM persons p WHERE p.workspace_id = $1 AND p.${by} IN (SELECT ${list})
    UNION ALL
    SELECT ${PERSON}, a.value AS matched FROM person_aliases a JOIN persons p ON p.workspace_id = a.workspace_id AND p.person_key = a.person_key
    WHERE a.workspace_id = $1 AND a.kind = $3 AND a.value IN (SELECT ${list})`, [ws, column(values), by]);
  return found.map((r) => ({ value: r.matched as string, person: toPerson(r) }));
}

/** The person a reference names now: the one holding the identifier, else the one it was merged into. */
export async function personByRef(tx: ControlSql, ws: string, ref: PersonRef): Promise<PersonRecord | null> {
  const kind = Object.keys(ref)[0] as AliasKind;
  const value = (ref as Record<string, string>)[kind]!;
  const [row] = await tx.all(`SELECT ${PERSON} FROM persons p WHERE p.workspace_id = $1 AND p.${kind} = $2
    UNION ALL
    SELECT ${PERSON} FROM person_aliases a JOIN persons p ON p.workspace_id = a.workspace_id AND p.person_key = a.person_key
    WHERE a.workspace_id = $1 AND a.kind = $3 AND a.value = $2 LIMIT 1`, [ws, value, kind]);
  return row ? toPerson(row) : null;
}

/**
 * The persons an identifier of merged-away persons names, exactly (the people lookup finds a person by
 * them): an email as lowercased, an external_id or person_id as given.
 */
export async function personsByAlias(sql: ControlSql, ws: string, value: string): Promise<number[]> {
  const rows = await sql.all(`SELECT DISTINCT person_key FROM person_aliases WHERE ${aliasOf('$1', '$2', '$3')}`, [ws, value.toLowerCase(), value]);
  return rows.map((r) => Number(r.person_key));
}

/** personsByAlias's rows of `value`: `lowered` its lowercased form's parameter, `given` its own. */
export const aliasOf = (ws: string, lowered: string, given: string): string =>
  `workspace_id = ${ws} AND (kind = 'email' AND value = ${lowered} OR kind IN ('external_id', 'person_id') AND value = ${given})`;

/** Every identifier of merged-away persons (DuckDB's known-ids filters hold them: they are not new). */
export async function aliasValues(sql: ControlSql, ws: string): Promise<{ kind: AliasKind; value: string }[]> {
  const rows = await sql.all('SELECT kind, value FROM person_aliases WHERE workspace_id = $1', [ws]);
  return rows.map((r) => ({ kind: r.kind as AliasKind, value: r.value as string }));
}

/**
 * `into` as it stands after the merge: it keeps its identifiers and takes those of `from` it has
 * none of (so a merge never needs `force` to move an email onto a person without one).
 */
export const mergedIdentifiers = (from: PersonRecord, into: PersonRecord): PersonRecord => ({
  ...into, external_id: into.external_id ?? from.external_id, email: into.email ?? from.email,
});

/**
 * The person rows of a merge: `into` takes the traits of `from` it has not set (shallow; its own
 * win), its name when it has none, and the identifiers it lacks; `from`'s other identifiers (and
 * those of persons merged into it before) become aliases of `into`; `from` goes. Audiences that
 * held `from` are told whom to remove (departures) and fall due now.
 */
export async function mergePersonRows(work: MergeWrites, ws: string, from: PersonRecord, into: PersonRecord, at: Date): Promise<PersonRecord> {
  const tx = work.control;
  const merged = mergedIdentifiers(from, into);
  const traits = (await personTraits(tx, ws, [from.person_key])).get(from.person_key) ?? '{}';
  const [named] = await tx.all('SELECT name FROM persons WHERE workspace_id = $1 AND person_key = $2', [ws, from.person_key]);
  await recordDeparture(tx, ws, from, merged, at);
  await tx.run('UPDATE person_aliases SET person_key = $3 WHERE workspace_id = $1 AND person_key = $2', [ws, from.person_key, into.person_key]);
  const aliases: [AliasKind, string][] = [['person_id', from.person_id]];
  if (from.external_id !== null && merged.external_id !== from.external_id) aliases.push(['external_id', from.external_id]);
  if (from.email !== null && merged.email !== from.email) aliases.push(['email', from.email]);
  await tx.run(`INSERT INTO person_aliases (workspace_id, kind, value, person_key)
    SELECT $1, kind, value, $2 FROM (SELECT ${tx.dialect.texts('$3')} AS kind, ${tx.dialect.texts('$4')} AS value) AS a ON CONFLICT DO NOTHING`,
  [ws, into.person_key, column(aliases.map((a) => a[0])), column(aliases.map((a) => a[1]))]);
  // Deleted first: the identifiers it hands over are unique in the workspace.
  await tx.run('DELETE FROM persons WHERE workspace_id = $1 AND person_key = $2', [ws, from.person_key]);
  const { personSearch } = tx.search;
  const { mergeObject, json } = tx.dialect;
  // into's traits over from's; a side whose traits are not an object (an import may bring any JSON) has none.
  const intoTraits = mergeObject('persons.traits', "'{}'");
  await tx.run(`UPDATE persons SET external_id = $3, email = $4, name = coalesce(persons.name, $5),
      traits = ${mergeObject(json('$6'), intoTraits)}, updated_at = $7${personSearch
  ? `, search = ${personSearch('$4', '$3', 'coalesce(persons.name, $5)')}` : ''}
    WHERE workspace_id = $1 AND person_key = $2`,
  [ws, into.person_key, merged.external_id, merged.email, (named?.name as string | null) ?? null, traits, at]);
  tx.search.indexPersons(ws, [{ key: into.person_key, values: [merged.email, merged.external_id, named?.name as string | null] }]);
  // The search's own indexes (DuckDB's, in memory) still hold `from`: made again at the next lookup.
  tx.afterCommit(() => tx.search.forget(ws));
  await work.mirror.persons(ws, [merged]);
  return merged;
}

/** The departure of `from` (its email left out when `into` now holds it: an ad platform would drop `into`). */
async function recordDeparture(tx: ControlTx, ws: string, from: PersonRecord, into: PersonRecord, at: Date): Promise<void> {
  const [held] = await tx.all('SELECT 1 AS one FROM audiences WHERE workspace_id = $1 AND snapshot_id IS NOT NULL LIMIT 1', [ws]);
  if (!held) return;
  await tx.run(`INSERT INTO privacy_departures (workspace_id, profile, person_id, visitor_id, external_id, email, created_at)
    VALUES ($1, $2, $3, NULL, $4, $5, $6)`,
  [ws, from.person_key, from.person_id, from.external_id === into.external_id ? null : from.external_id, from.email === into.email ? null : from.email, at]);
  await tx.run('UPDATE audiences SET next_refresh_at = $2 WHERE workspace_id = $1 AND snapshot_id IS NOT NULL AND next_refresh_at > $2', [ws, at]);
}

/**
 * Moves the visitors and payment customers still linked to `from` onto `into` (and the engine's
 * copies). A merge runs it with the person rows, and again once every transaction that may have
 * linked something to `from` before seeing the merge has ended.
 */
export async function moveLinkedRows(work: MergeWrites, ws: string, fromKey: number, intoKey: number, at: Date): Promise<Moved> {
  const tx = work.control;
  const visitors = (await tx.all('SELECT visitor_key, visitor_id, anonymous_events FROM visitors WHERE workspace_id = $1 AND person_key = $2', [ws, fromKey]))
    .map((r): VisitorRecord => ({ visitor_key: Number(r.visitor_key), visitor_id: r.visitor_id as string, person_key: intoKey, anonymous_events: r.anonymous_events === true }));
  if (visitors.length > 0) {
    await tx.run('UPDATE visitors SET person_key = $3, linked_at = $4 WHERE workspace_id = $1 AND person_key = $2', [ws, fromKey, intoKey, at]);
    await work.mirror.visitors(ws, visitors);
  }
  const ids = (await tx.all('SELECT customer_id FROM payment_customers WHERE workspace_id = $1 AND person_key = $2', [ws, fromKey])).map((r) => r.customer_id as string);
  const customers = [...(await readCustomers(tx, ws, ids)).values()].map((c) => ({ ...c, person_key: intoKey }));
  await writeCustomers({ control: tx, mirror: work.mirror }, ws, [], customers, [], at);
  // Customers linked through a visitor follow it: counted, nothing to write.
  const [following] = await tx.all(`SELECT count(*) AS n FROM payment_customers WHERE workspace_id = $1 AND person_key IS NULL
    AND visitor_key IN (SELECT ${tx.dialect.keys('$2')})`, [ws, column(visitors.map((v) => v.visitor_key))]);
  return { visitors, customers: customers.length + Number(following!.n) };
}

/** What a merge of `fromKey` would move: its visitors, and the payment customers that are its own or its visitors'. */
export async function movable(sql: ControlSql, ws: string, fromKey: number): Promise<{ visitors: number; customers: number }> {
  const [row] = await sql.all(`SELECT (SELECT count(*) FROM visitors WHERE workspace_id = $1 AND person_key = $2) AS visitors,
    (SELECT count(*) FROM payment_customers c WHERE c.workspace_id = $1 AND (c.person_key = $2 OR c.person_key IS NULL
      AND c.visitor_key IN (SELECT visitor_key FROM visitors WHERE workspace_id = $1 AND person_key = $2))) AS customers`, [ws, fromKey]);
  return { visitors: Number(row!.visitors), customers: Number(row!.customers) };
}

/**
 * Records a merge as pending (its later steps have not run); the merges recorded before of `from`
 * count for `into` from now on.
 */
export async function recordMerge(tx: ControlSql, ws: string, row: MergeRow, intoKey: number, fromKey: number): Promise<void> {
  await tx.run('UPDATE person_merges SET current_person_key = $3 WHERE workspace_id = $1 AND current_person_key = $2', [ws, fromKey, intoKey]);
  await tx.run(`INSERT INTO person_merges (workspace_id, merge_id, from_person_id, into_person_id, into_person_key, current_person_key,
      forced, visitors, customers, created_at, from_person_key, state) VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8, $9, $10, 'pending')`,
  [ws, row.merge_id, row.from_person_id, row.into_person_id, intoKey, row.forced, row.visitors, row.customers, row.created_at, fromKey]);
}

/** A merge whose later steps are still to run: `from`'s key, and the person it names now (into, or whom into was merged into since). */
export interface PendingMerge {
  workspace_id: string;
  merge_id: string;
  from_person_key: number;
  current_person_key: number;
}

const toPending = (r: Record<string, unknown>): PendingMerge => ({
  workspace_id: r.workspace_id as string, merge_id: r.merge_id as string,
  from_person_key: Number(r.from_person_key), current_person_key: Number(r.current_person_key),
});

/** The oldest pending merges of every workspace. */
export async function pendingMerges(sql: ControlSql, limit: number): Promise<PendingMerge[]> {
  const rows = await sql.all(`SELECT workspace_id, merge_id, from_person_key, current_person_key FROM person_merges
    WHERE state = 'pending' ORDER BY created_at LIMIT ${Math.trunc(limit)}`);
  return rows.map(toPending);
}

/** The merge as it stands, if still pending (null once done, or erased by a privacy delete). */
export async function pendingMerge(sql: ControlSql, ws: string, mergeId: string): Promise<PendingMerge | null> {
  const [row] = await sql.all(`SELECT workspace_id, merge_id, from_person_key, current_person_key FROM person_merges
    WHERE workspace_id = $1 AND merge_id = $2 AND state = 'pending'`, [ws, mergeId]);
  return row ? toPending(row) : null;
}

/** Adds what a later step moved to the merge's record. */
export async function countLateMoves(tx: ControlSql, ws: string, mergeId: string, moved: Moved): Promise<void> {
  if (moved.visitors.length === 0 && moved.customers === 0) return;
  await tx.run('UPDATE person_merges SET visitors = visitors + $3, customers = customers + $4 WHERE workspace_id = $1 AND merge_id = $2',
    [ws, mergeId, moved.visitors.length, moved.customers]);
}

export async function markMergeDone(sql: ControlSql, ws: string, mergeId: string): Promise<void> {
  await sql.run("UPDATE person_merges SET state = 'done' WHERE workspace_id = $1 AND merge_id = $2", [ws, mergeId]);
}

/** The merges that made the person of `personKey`, newest first. */
export async function mergesOf(sql: ControlSql, ws: string, personKey: number): Promise<(MergeRow & { state: MergeState })[]> {
  const rows = await sql.all(`SELECT merge_id, from_person_id, into_person_id, forced, visitors, customers, created_at, state FROM person_merges
    WHERE workspace_id = $1 AND current_person_key = $2 ORDER BY created_at DESC, merge_id DESC`, [ws, personKey]);
  return rows.map((r) => ({
    merge_id: r.merge_id as string, from_person_id: r.from_person_id as string, into_person_id: r.into_person_id as string,
    forced: r.forced === true, visitors: Number(r.visitors), customers: Number(r.customers), created_at: r.created_at as Date,
    state: r.state as MergeState,
  }));
}

/** Forgets the aliases and merge records of erased persons (a privacy delete). */
export async function eraseMerges(tx: ControlSql, ws: string, personKeys: number[]): Promise<void> {
  if (personKeys.length === 0) return;
  const keys = column(personKeys);
  await tx.run(`DELETE FROM person_aliases WHERE workspace_id = $1 AND person_key IN (SELECT ${tx.dialect.keys('$2')})`, [ws, keys]);
  await tx.run(`DELETE FROM person_merges WHERE workspace_id = $1 AND current_person_key IN (SELECT ${tx.dialect.keys('$2')})`, [ws, keys]);
}
