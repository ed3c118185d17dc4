// Privacy requests (privacy/): the audit trail (the SHA-256 of each identifier, never the
// identifier), the identifiers a request works on while it is under way and the keys they resolved
// to, each workspace's suppression list (hashes), and the control rows a delete removes or
// de-identifies. Statements written once for both control engines.

import { createHash } from 'node:crypto';
import { eraseMerges } from './merges.js';
import { personTraits } from './people.js';
import { type CustomerRecord, readCustomers, writeCustomers } from './payments.js';
import { columnOf as column, type ControlSql, type ControlStore, type ControlTx, type ControlValue } from './store.js';
import type { ControlMirror } from '../mirror.js';
import { propertyPaths } from '../property-paths.js';

export const PRIVACY_TYPES = ['delete', 'suppress', 'suppress_and_delete', 'unsuppress'] as const;
export type PrivacyType = (typeof PRIVACY_TYPES)[number];
export const IDENTIFIER_KINDS = ['external_id', 'email', 'visitor_id'] as const;
export type IdentifierKind = (typeof IDENTIFIER_KINDS)[number];
export type PrivacyStatus = 'pending' | 'running' | 'done' | 'failed';
/** Where a running delete is: its identifiers not resolved yet, or resolved to keys whose rows are being erased. */
export type PrivacyPhase = 'resolve' | 'erase';

export interface Identifier {
  kind: IdentifierKind;
  value: string;
}

export interface PrivacyCounts {
  persons: number | null;
  visitors: number | null;
  events: number | null;
  pageviews: number | null;
  customers: number | null;
}

export interface PrivacyRequestRow extends PrivacyCounts {
  workspace_id: string;
  request_id: string;
  type: PrivacyType;
  status: PrivacyStatus;
  phase: PrivacyPhase;
  identifier_hashes: { kind: IdentifierKind; sha256: string }[];
  error: string | null;
  /** The passes that took it up. */
  attempts: number;
  created_at: Date;
  finished_at: Date | null;
}

/** The keys a delete erases: persons, visitors (all of the persons' and those named), and payers to de-identify. */
export interface ErasedKeys {
  personKeys: number[];
  visitorKeys: number[];
  customerIds: string[];
}

/** The hash an identifier is kept and suppressed by: its kind and value (emails normalized by the caller). */
export const identifierHash = (kind: IdentifierKind, value: string): string =>
  createHash('sha256').update(`${kind}:${value}`).digest('hex');

const COLUMNS = `workspace_id, request_id, type, status, phase, CAST(identifier_hashes AS VARCHAR) AS identifier_hashes,
  persons, visitors, events, pageviews, customers, error, coalesce(attempts, 0) AS attempts, created_at, finished_at`;

const count = (v: unknown) => (v === null || v === undefined ? null : Number(v));

function toRequest(r: Record<string, unknown>): PrivacyRequestRow {
  return {
    workspace_id: r.workspace_id as string,
    request_id: r.request_id as string,
    type: r.type as PrivacyType,
    status: r.status as PrivacyStatus,
    phase: r.phase as PrivacyPhase,
    identifier_hashes: JSON.parse(r.identifier_hashes as string) as PrivacyRequestRow['identifier_hashes'],
    persons: count(r.persons), visitors: count(r.visitors), events: count(r.events), pageviews: count(r.pageviews), customers: count(r.customers),
    error: (r.error as string | null) ?? null,
    attempts: Number(r.attempts),
    created_at: r.created_at as Date,
    finished_at: (r.finished_at as Date | null) ?? null,
  };
}

/** Records a request and its identifiers (pending), in one transaction. */
export async function insertRequest(store: ControlStore, ws: string, id: string, type: PrivacyType, identifiers: Identifier[], at: Date): Promise<PrivacyRequestRow> {
  const hashes = identifiers.map((i) => ({ kind: i.kind, sha256: identifierHash(i.kind, i.value) }));
  await store.transaction(async (tx) => {
    await tx.run(`INSERT INTO privacy_requests (workspace_id, request_id, type, status, phase, identifier_hashes, created_at)
      VALUES ($1, $2, $3, 'pending', 'resolve', ${tx.dialect.json('$4')}, $5)`, [ws, id, type, JSON.stringify(hashes), at]);
    await insertItems(tx, ws, id, identifiers.map((i) => [i.kind, i.value]));
  });
  return (await findRequest(store, ws, id))!;
}

async function insertItems(tx: ControlSql, ws: string, id: string, items: [string, string][]): Promise<void> {
  if (items.length === 0) return;
  await tx.run(`INSERT INTO privacy_request_items (workspace_id, request_id, kind, value)
    SELECT $1, $2, kind, value FROM (SELECT ${tx.dialect.texts('$3')} AS kind, ${tx.dialect.texts('$4')} AS value) AS i`,
  [ws, id, column(items.map((i) => i[0])), column(items.map((i) => i[1]))]);
}

export async function findRequest(sql: ControlSql, ws: string, id: string): Promise<PrivacyRequestRow | null> {
  const [row] = await sql.all(`SELECT ${COLUMNS} FROM privacy_requests WHERE workspace_id = $1 AND request_id = $2`, [ws, id]);
  return row ? toRequest(row) : null;
}

/** The workspace's requests, newest first, created before `before` when given. */
export async function listRequests(sql: ControlSql, ws: string, limit: number, before?: { created_at: Date; request_id: string }): Promise<PrivacyRequestRow[]> {
  const params: ControlValue[] = [ws, limit];
  const after = before ? ` AND (created_at < $3 OR created_at = $3 AND request_id < $4)` : '';
  if (before) params.push(before.created_at, before.request_id);
  const rows = await sql.all(`SELECT ${COLUMNS} FROM privacy_requests WHERE workspace_id = $1${after}
    ORDER BY created_at DESC, request_id DESC LIMIT $2`, params);
  return rows.map(toRequest);
}

/** Workspaces with requests not finished (pending, or running: left by a process that stopped). */
export async function workspacesWithUnfinished(sql: ControlSql): Promise<string[]> {
  const rows = await sql.all("SELECT DISTINCT workspace_id FROM privacy_requests WHERE status IN ('pending', 'running')");
  return rows.map((r) => r.workspace_id as string);
}

/** The workspace's oldest `limit` unfinished requests, in the order asked. */
export async function unfinishedRequests(sql: ControlSql, ws: string, limit: number): Promise<PrivacyRequestRow[]> {
  const rows = await sql.all(`SELECT ${COLUMNS} FROM privacy_requests WHERE workspace_id = $1 AND status IN ('pending', 'running')
    ORDER BY created_at, request_id LIMIT $2`, [ws, limit]);
  return rows.map(toRequest);
}

/** The items of requests: identifiers (before resolution) or keys (after). */
export async function requestItems(sql: ControlSql, ws: string, ids: string[]): Promise<{ request_id: string; kind: string; value: string }[]> {
  if (ids.length === 0) return [];
  const rows = await sql.all(`SELECT request_id, kind, value FROM privacy_request_items
    WHERE workspace_id = $1 AND request_id IN (SELECT ${sql.dialect.texts('$2')})`, [ws, column(ids)]);
  return rows.map((r) => ({ request_id: r.request_id as string, kind: r.kind as string, value: r.value as string }));
}

/** Requests taken up by a pass: running, one attempt more. */
export async function markRunning(tx: ControlSql, ws: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.run(`UPDATE privacy_requests SET status = 'running', attempts = coalesce(attempts, 0) + 1
    WHERE workspace_id = $1 AND status IN ('pending', 'running') AND request_id IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(ids)]);
}

/**
 * Replaces requests' identifiers by the keys they resolved to, with the counts of what they reach:
 * from here on a crash resumes from the keys (the persons may be gone already).
 */
export async function recordResolved(tx: ControlTx, ws: string, resolved: Map<string, ErasedKeys>): Promise<void> {
  const ids = [...resolved.keys()];
  if (ids.length === 0) return;
  await tx.run(`DELETE FROM privacy_request_items WHERE workspace_id = $1 AND request_id IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(ids)]);
  for (const [id, keys] of resolved) {
    await insertItems(tx, ws, id, [
      ...keys.personKeys.map((k): [string, string] => ['person_key', String(k)]),
      ...keys.visitorKeys.map((k): [string, string] => ['visitor_key', String(k)]),
      ...keys.customerIds.map((c): [string, string] => ['customer_id', c]),
    ]);
    await tx.run(`UPDATE privacy_requests SET phase = 'erase', persons = $3, visitors = $4, customers = $5
      WHERE workspace_id = $1 AND request_id = $2`, [ws, id, keys.personKeys.length, keys.visitorKeys.length, keys.customerIds.length]);
  }
}

/** Sets each request's counts of the analytical rows its keys reach, the first time only (a resumed request keeps them). */
export async function recordErasedRows(tx: ControlSql, ws: string, counts: Map<string, { events: number; pageviews: number }>): Promise<void> {
  for (const [id, c] of counts) {
    await tx.run(`UPDATE privacy_requests SET events = coalesce(events, $3), pageviews = coalesce(pageviews, $4)
      WHERE workspace_id = $1 AND request_id = $2`, [ws, id, c.events, c.pageviews]);
  }
}

/**
 * Ends unfinished requests; the audit trail stays. Their items go, but a failed request's keys stay
 * (integers, once resolved): what it erased already cannot be found again by its identifiers.
 */
export async function finishRequests(tx: ControlSql, ws: string, ids: string[], status: 'done' | 'failed', error: string | null, at: Date): Promise<void> {
  if (ids.length === 0) return;
  const { texts } = tx.dialect;
  const kept = status === 'failed' ? ` AND request_id IN (SELECT request_id FROM privacy_requests WHERE workspace_id = $1 AND phase = 'resolve')` : '';
  await tx.run(`DELETE FROM privacy_request_items WHERE workspace_id = $1 AND request_id IN (SELECT ${texts('$2')})${kept}`, [ws, column(ids)]);
  await tx.run(`UPDATE privacy_requests SET status = $3, error = $4, finished_at = $5,
      persons = coalesce(persons, 0), visitors = coalesce(visitors, 0), events = coalesce(events, 0),
      pageviews = coalesce(pageviews, 0), customers = coalesce(customers, 0)
    WHERE workspace_id = $1 AND status IN ('pending', 'running') AND request_id IN (SELECT ${texts('$2')})`, [ws, column(ids), status, error, at]);
}

/** The workspace's suppression list: hashes of identifiers (identifierHash). */
export async function suppressionHashes(sql: ControlSql, ws: string): Promise<Set<string>> {
  const rows = await sql.all('SELECT hash FROM suppressions WHERE workspace_id = $1', [ws]);
  return new Set(rows.map((r) => r.hash as string));
}

export async function suppress(tx: ControlSql, ws: string, hashes: string[], at: Date): Promise<void> {
  if (hashes.length === 0) return;
  await tx.run(`INSERT INTO suppressions (workspace_id, hash, created_at) SELECT $1, ${tx.dialect.texts('$2')}, $3 ON CONFLICT DO NOTHING`,
    [ws, column([...new Set(hashes)]), at]);
}

export async function unsuppress(tx: ControlSql, ws: string, hashes: string[]): Promise<void> {
  if (hashes.length === 0) return;
  await tx.run(`DELETE FROM suppressions WHERE workspace_id = $1 AND hash IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(hashes)]);
}

const keysOf = (rows: Record<string, unknown>[], name: string) => rows.map((r) => Number(r[name]));

/**
 * The keys identifiers reach: the persons named (by external_id or email, or owning a visitor
 * named), every visitor of those persons and the visitors named, and the payers that are theirs or
 * carry one of the identifiers (an email, a tr_user_id, a tr_visitor_id).
 */
export async function resolveErased(tx: ControlSql, ws: string, identifiers: Identifier[]): Promise<ErasedKeys> {
  const { texts, keys } = tx.dialect;
  const of = (kind: IdentifierKind) => column(identifiers.filter((i) => i.kind === kind).map((i) => i.value));
  const [externalIds, emails, visitorIds] = [of('external_id'), of('email'), of('visitor_id')];
  const named = await tx.all(`SELECT visitor_key, person_key FROM visitors WHERE workspace_id = $1 AND visitor_id IN (SELECT ${texts('$2')})`, [ws, visitorIds]);
  // An identifier of a person merged away names the person it was merged into.
  const persons = await tx.all(`SELECT person_key FROM persons WHERE workspace_id = $1 AND (external_id IN (SELECT ${texts('$2')})
      OR email IN (SELECT ${texts('$3')}) OR person_key IN (SELECT ${keys('$4')}) OR person_key IN (SELECT person_key FROM person_aliases
        WHERE workspace_id = $1 AND (kind = 'external_id' AND value IN (SELECT ${texts('$2')}) OR kind = 'email' AND value IN (SELECT ${texts('$3')}))))`,
  [ws, externalIds, emails, column(named.flatMap((r) => (r.person_key === null ? [] : [Number(r.person_key)])))]);
  // A merge into them still pending has left events under the merged-away person's key: erased with them.
  const merged = await tx.all(`SELECT from_person_key FROM person_merges WHERE workspace_id = $1 AND state = 'pending'
    AND current_person_key IN (SELECT ${keys('$2')})`, [ws, column(keysOf(persons, 'person_key'))]);
  const personKeys = [...keysOf(persons, 'person_key'), ...keysOf(merged, 'from_person_key')];
  const theirs = await tx.all(`SELECT visitor_key FROM visitors WHERE workspace_id = $1 AND person_key IN (SELECT ${keys('$2')})`, [ws, column(personKeys)]);
  const visitorKeys = [...new Set([...keysOf(named, 'visitor_key'), ...keysOf(theirs, 'visitor_key')])];
  const customers = await tx.all(`SELECT customer_id FROM payment_customers WHERE workspace_id = $1 AND (person_key IN (SELECT ${keys('$2')})
      OR visitor_key IN (SELECT ${keys('$3')}) OR email IN (SELECT ${texts('$4')}) OR customer_email IN (SELECT ${texts('$4')})
      OR payment_email IN (SELECT ${texts('$4')}) OR tr_user_id IN (SELECT ${texts('$5')}) OR tr_visitor_id IN (SELECT ${texts('$6')}))`,
  [ws, column(personKeys), column(visitorKeys), emails, externalIds, visitorIds]);
  return { personKeys, visitorKeys, customerIds: customers.map((r) => r.customer_id as string) };
}

/** What erasing control rows changed, for the caches to forget once committed. */
export interface ErasedControl {
  /** Trait paths no remaining person of the workspace has. */
  traitPaths: string[];
}

/**
 * Removes the persons and visitors (and what the search indexes hold of them), de-identifies the payers (no email, no
 * person, no visitor, no metadata: their payments stay, with the attribution the analytical store froze before),
 * and drops the trait definitions only the erased persons had. The engine's copies follow (`mirror`).
 */
export async function eraseControlRows(tx: ControlTx, mirror: ControlMirror, ws: string, keys: ErasedKeys, at: Date): Promise<ErasedControl> {
  const { keys: keyList } = tx.dialect;
  const persons = column(keys.personKeys);
  const candidatePaths = new Set<string>();
  for (const traits of (await personTraits(tx, ws, keys.personKeys)).values()) for (const path of propertyPaths(JSON.parse(traits))) candidatePaths.add(path);
  await recordDepartures(tx, ws, keys, at);
  await tx.run(`DELETE FROM persons WHERE workspace_id = $1 AND person_key IN (SELECT ${keyList('$2')})`, [ws, persons]);
  await eraseMerges(tx, ws, keys.personKeys);
  await tx.run(`DELETE FROM visitors WHERE workspace_id = $1 AND visitor_key IN (SELECT ${keyList('$2')})`, [ws, column(keys.visitorKeys)]);
  await deidentifyCustomers(tx, mirror, ws, keys.customerIds, at);
  const traitPaths = await dropOrphanTraitPaths(tx, ws, [...candidatePaths]);
  // The search's own indexes (DuckDB's, in memory) still hold the erased values: made again at the next lookup.
  tx.afterCommit(() => tx.search.forget(ws));
  return { traitPaths };
}

async function deidentifyCustomers(tx: ControlTx, mirror: ControlMirror, ws: string, customerIds: string[], at: Date): Promise<void> {
  const stored = [...(await readCustomers(tx, ws, customerIds)).values()];
  const blank = (c: CustomerRecord): CustomerRecord => ({
    ...c, email: null, customer_email: null, payment_email: null, person_key: null, visitor_key: null,
    tr_user_id: null, tr_visitor_id: null, link_state: 'unmatched',
  });
  await writeCustomers({ control: tx, mirror }, ws, [], stored.map(blank), stored.map(blank), at);
}

/** Deletes the trait paths among `paths` that no person of the workspace has any more; those deleted. */
async function dropOrphanTraitPaths(tx: ControlSql, ws: string, paths: string[]): Promise<string[]> {
  const orphans: string[] = [];
  for (const path of paths) {
    const [held] = await tx.all(`SELECT 1 AS one FROM persons WHERE workspace_id = $1 AND ${tx.dialect.hasPath('traits', '$2')} LIMIT 1`, [ws, path]);
    if (!held) orphans.push(path);
  }
  if (orphans.length > 0) {
    await tx.run(`DELETE FROM trait_definitions WHERE workspace_id = $1 AND path IN (SELECT ${tx.dialect.texts('$2')})`, [ws, column(orphans)]);
  }
  return orphans;
}

/** Workspaces with a retention, and its days. */
export async function retentions(sql: ControlSql): Promise<{ workspace_id: string; retention_days: number }[]> {
  const rows = await sql.all('SELECT workspace_id, retention_days FROM workspaces WHERE retention_days IS NOT NULL');
  return rows.map((r) => ({ workspace_id: r.workspace_id as string, retention_days: Number(r.retention_days) }));
}

/**
 * Keeps the public ids of the erased profiles while an audience may still hold them (a workspace
 * with a snapshot): its next refresh removes them, and the removal's delivery names them from here
 * (fillDepartures). The audiences holding a snapshot are made due now, so that happens at once.
 */
async function recordDepartures(tx: ControlSql, ws: string, keys: ErasedKeys, at: Date): Promise<void> {
  const [held] = await tx.all('SELECT 1 AS one FROM audiences WHERE workspace_id = $1 AND snapshot_id IS NOT NULL LIMIT 1', [ws]);
  if (!held) return;
  const { keys: keyList } = tx.dialect;
  await tx.run(`INSERT INTO privacy_departures (workspace_id, profile, person_id, visitor_id, external_id, email, created_at)
    SELECT workspace_id, person_key, person_id, NULL, external_id, email, $3 FROM persons
    WHERE workspace_id = $1 AND person_key IN (SELECT ${keyList('$2')})`, [ws, column(keys.personKeys), at]);
  await tx.run(`INSERT INTO privacy_departures (workspace_id, profile, person_id, visitor_id, external_id, email, created_at)
    SELECT workspace_id, -visitor_key, NULL, visitor_id, NULL, NULL, $3 FROM visitors
    WHERE workspace_id = $1 AND visitor_key IN (SELECT ${keyList('$2')}) AND person_key IS NULL`, [ws, column(keys.visitorKeys), at]);
  await tx.run('UPDATE audiences SET next_refresh_at = $2 WHERE workspace_id = $1 AND snapshot_id IS NOT NULL AND next_refresh_at > $2', [ws, at]);
}

/** The public ids of erased profiles among `profiles`, by profile. */
export async function departures(sql: ControlSql, ws: string, profiles: number[]): Promise<Map<number, Record<'person_id' | 'visitor_id' | 'external_id' | 'email', string | null>>> {
  if (profiles.length === 0) return new Map();
  const rows = await sql.all(`SELECT profile, person_id, visitor_id, external_id, email FROM privacy_departures
    WHERE workspace_id = $1 AND profile IN (SELECT ${sql.dialect.keys('$2')})`, [ws, column(profiles)]);
  return new Map(rows.map((r) => [Number(r.profile), {
    person_id: (r.person_id as string | null) ?? null, visitor_id: (r.visitor_id as string | null) ?? null,
    external_id: (r.external_id as string | null) ?? null, email: (r.email as string | null) ?? null,
  }]));
}

/**
 * Forgets the departures whose removal went out: every audience of their workspace with a snapshot
 * has refreshed since, and no delivery of the workspace is pending.
 */
export async function clearDepartures(sql: ControlSql): Promise<number> {
  return sql.run(`DELETE FROM privacy_departures
    WHERE NOT EXISTS (SELECT 1 FROM audience_deliveries d WHERE d.workspace_id = privacy_departures.workspace_id AND d.status = 'pending')
      AND created_at <= coalesce((SELECT min(a.last_refreshed_at) FROM audiences a
        WHERE a.workspace_id = privacy_departures.workspace_id AND a.snapshot_id IS NOT NULL), created_at)`);
}
