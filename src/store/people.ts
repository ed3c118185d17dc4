// Persons and visitors: the reads identity resolution needs for a batch, and its writes, each one
// statement for the whole batch.

import type { DuckDBConnection } from '@duckdb/node-api';

export type Tx = DuckDBConnection;

/** A UTC instant as DuckDB TIMESTAMP text (no zone: the columns hold naive UTC). */
export function utc(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '');
}

export interface PersonRecord {
  person_key: number;
  person_id: string;
  external_id: string | null;
  email: string | null;
  name: string | null;
  traits: Record<string, unknown>;
}

export interface VisitorRecord {
  visitor_key: number;
  visitor_id: string;
  person_key: number | null;
}

const PERSON_COLUMNS = 'person_key, person_id, external_id, email, name, CAST(traits AS VARCHAR) AS traits';

async function rows(tx: Tx, sql: string, params: (string | number)[]): Promise<Record<string, unknown>[]> {
  return (await tx.runAndReadAll(sql, params)).getRowObjectsJS() as Record<string, unknown>[];
}

const placeholders = (n: number, from = 2) => Array.from({ length: n }, (_, i) => `$${i + from}`).join(', ');

function toPerson(row: Record<string, unknown>): PersonRecord {
  return {
    person_key: Number(row.person_key),
    person_id: row.person_id as string,
    external_id: (row.external_id as string | null) ?? null,
    email: (row.email as string | null) ?? null,
    name: (row.name as string | null) ?? null,
    traits: row.traits ? JSON.parse(row.traits as string) : {},
  };
}

/** Persons of the workspace whose `column` is one of `values`. */
export async function personsBy(tx: Tx, ws: string, column: 'external_id' | 'email' | 'person_key', values: (string | number)[]): Promise<PersonRecord[]> {
  if (values.length === 0) return [];
  const found = await rows(tx, `SELECT ${PERSON_COLUMNS} FROM persons WHERE workspace_id = $1 AND ${column} IN (${placeholders(values.length)})`, [ws, ...values]);
  return found.map(toPerson);
}

export async function visitorsById(tx: Tx, ws: string, visitorIds: string[]): Promise<VisitorRecord[]> {
  if (visitorIds.length === 0) return [];
  const found = await rows(tx, `SELECT visitor_key, visitor_id, person_key FROM visitors WHERE workspace_id = $1 AND visitor_id IN (${placeholders(visitorIds.length)})`, [ws, ...visitorIds]);
  return found.map((r) => ({ visitor_key: Number(r.visitor_key), visitor_id: r.visitor_id as string, person_key: r.person_key === null ? null : Number(r.person_key) }));
}

/** `n` fresh keys from a sequence. */
export async function nextKeys(tx: Tx, sequence: 'person_keys' | 'visitor_keys', n: number): Promise<number[]> {
  if (n === 0) return [];
  const found = await rows(tx, `SELECT nextval('${sequence}') AS k FROM range(${Math.trunc(n)})`, []);
  return found.map((r) => Number(r.k));
}

/** Inserts `created` and writes the traits, email and name of `changed`, in two statements. */
export async function savePersons(tx: Tx, ws: string, created: PersonRecord[], changed: PersonRecord[], at: Date): Promise<void> {
  const now = utc(at);
  for (let i = 0; i < created.length; i += 200) {
    const chunk = created.slice(i, i + 200);
    const values = chunk.map((_, j) => `($1, $${j * 6 + 3}, $${j * 6 + 4}, $${j * 6 + 5}, $${j * 6 + 6}, $${j * 6 + 7}, CAST($${j * 6 + 8} AS JSON), CAST($2 AS TIMESTAMP), CAST($2 AS TIMESTAMP))`);
    await tx.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at) VALUES ${values.join(', ')}`,
      [ws, now, ...chunk.flatMap((p) => [p.person_key, p.person_id, p.external_id, p.email, p.name, JSON.stringify(p.traits)])] as (string | number)[]);
  }
  for (let i = 0; i < changed.length; i += 200) {
    const chunk = changed.slice(i, i + 200);
    const values = chunk.map((_, j) => `($${j * 4 + 3}::BIGINT, $${j * 4 + 4}::VARCHAR, $${j * 4 + 5}::VARCHAR, $${j * 4 + 6}::VARCHAR)`);
    await tx.run(`UPDATE persons SET email = u.email, name = u.name, traits = CAST(u.traits AS JSON), updated_at = CAST($2 AS TIMESTAMP)
      FROM (VALUES ${values.join(', ')}) AS u(person_key, email, name, traits)
      WHERE persons.workspace_id = $1 AND persons.person_key = u.person_key`,
    [ws, now, ...chunk.flatMap((p) => [p.person_key, p.email, p.name, JSON.stringify(p.traits)])] as (string | number)[]);
  }
}

/** Inserts `created` visitors and moves the links of `relinked` ones, in two statements. */
export async function saveVisitors(tx: Tx, ws: string, created: (VisitorRecord & { first_seen_at: Date })[], relinked: VisitorRecord[], at: Date): Promise<void> {
  const now = utc(at);
  for (let i = 0; i < created.length; i += 250) {
    const chunk = created.slice(i, i + 250);
    const values = chunk.map((_, j) => `($1, $${j * 4 + 3}, $${j * 4 + 4}, $${j * 4 + 5}::BIGINT, CAST($${j * 4 + 6} AS TIMESTAMP),
      CASE WHEN $${j * 4 + 5}::BIGINT IS NULL THEN NULL ELSE CAST($2 AS TIMESTAMP) END)`);
    await tx.run(`INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at) VALUES ${values.join(', ')}`,
      [ws, now, ...chunk.flatMap((v) => [v.visitor_key, v.visitor_id, v.person_key, utc(v.first_seen_at)])] as (string | number)[]);
  }
  for (let i = 0; i < relinked.length; i += 400) {
    const chunk = relinked.slice(i, i + 400);
    const values = chunk.map((_, j) => `($${j * 2 + 3}::BIGINT, $${j * 2 + 4}::BIGINT)`);
    await tx.run(`UPDATE visitors SET person_key = u.person_key, linked_at = CAST($2 AS TIMESTAMP)
      FROM (VALUES ${values.join(', ')}) AS u(visitor_key, person_key)
      WHERE visitors.workspace_id = $1 AND visitors.visitor_key = u.visitor_key`,
    [ws, now, ...chunk.flatMap((v) => [v.visitor_key, v.person_key])] as (string | number)[]);
  }
}
