// Persons and visitors: the reads identity resolution needs for a batch, and its writes, each one
// statement for the whole batch.

import { BIGINT, type DuckDBConnection, type DuckDBType, type DuckDBValue, LIST, listValue, VARCHAR } from '@duckdb/node-api';

import { utc } from './time.js';

export type Tx = DuckDBConnection;


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

async function rows(tx: Tx, sql: string, params: DuckDBValue[], types?: DuckDBType[]): Promise<Record<string, unknown>[]> {
  return (await tx.runAndReadAll(sql, params, types)).getRowObjectsJS() as Record<string, unknown>[];
}

// Whole columns are bound as one LIST parameter each and unnested in SQL: a statement's cost stays
// flat in the batch size (hundreds of scalar parameters cost more than the work itself).
const texts = (values: (string | null)[]) => listValue(values);
const keys = (values: (number | null)[]) => listValue(values.map((v) => (v === null ? null : BigInt(v))));
const TEXTS = LIST(VARCHAR);
const KEYS = LIST(BIGINT);

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
  const list = column === 'person_key' ? keys(values as number[]) : texts(values as string[]);
  const found = await rows(tx, `SELECT ${PERSON_COLUMNS} FROM persons WHERE workspace_id = $1 AND ${column} IN (SELECT unnest($2))`,
    [ws, list], [VARCHAR, column === 'person_key' ? KEYS : TEXTS]);
  return found.map(toPerson);
}

export async function visitorsById(tx: Tx, ws: string, visitorIds: string[]): Promise<VisitorRecord[]> {
  if (visitorIds.length === 0) return [];
  const found = await rows(tx, 'SELECT visitor_key, visitor_id, person_key FROM visitors WHERE workspace_id = $1 AND visitor_id IN (SELECT unnest($2))',
    [ws, texts(visitorIds)], [VARCHAR, TEXTS]);
  return found.map((r) => ({ visitor_key: Number(r.visitor_key), visitor_id: r.visitor_id as string, person_key: r.person_key === null ? null : Number(r.person_key) }));
}

/** `n` fresh keys from a sequence. */
export async function nextKeys(tx: Tx, sequence: 'person_keys' | 'visitor_keys', n: number): Promise<number[]> {
  if (n === 0) return [];
  const found = await rows(tx, `SELECT nextval('${sequence}') AS k FROM range(${Math.trunc(n)})`, []);
  return found.map((r) => Number(r.k));
}

/** Inserts `created` and writes the traits, email and name of `changed`, a statement each. */
export async function savePersons(tx: Tx, ws: string, created: PersonRecord[], changed: PersonRecord[], at: Date): Promise<void> {
  const columns = (people: PersonRecord[]) => [
    keys(people.map((p) => p.person_key)), texts(people.map((p) => p.email)), texts(people.map((p) => p.name)),
    texts(people.map((p) => JSON.stringify(p.traits))),
  ];
  if (created.length > 0) {
    await tx.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at)
      SELECT $1, k, id, ext, email, name, CAST(traits AS JSON), CAST($2 AS TIMESTAMP), CAST($2 AS TIMESTAMP)
      FROM (SELECT unnest($3) AS k, unnest($4) AS email, unnest($5) AS name, unnest($6) AS traits, unnest($7) AS id, unnest($8) AS ext)`,
    [ws, utc(at), ...columns(created), texts(created.map((p) => p.person_id)), texts(created.map((p) => p.external_id))],
    [VARCHAR, VARCHAR, KEYS, TEXTS, TEXTS, TEXTS, TEXTS, TEXTS]);
  }
  if (changed.length > 0) {
    await tx.run(`UPDATE persons SET email = u.email, name = u.name, traits = CAST(u.traits AS JSON), updated_at = CAST($2 AS TIMESTAMP)
      FROM (SELECT unnest($3) AS k, unnest($4) AS email, unnest($5) AS name, unnest($6) AS traits) AS u
      WHERE persons.workspace_id = $1 AND persons.person_key = u.k`,
    [ws, utc(at), ...columns(changed)], [VARCHAR, VARCHAR, KEYS, TEXTS, TEXTS, TEXTS]);
  }
}

/** Inserts `created` visitors and moves the links of `relinked` ones, a statement each. */
export async function saveVisitors(tx: Tx, ws: string, created: (VisitorRecord & { first_seen_at: Date })[], relinked: VisitorRecord[], at: Date): Promise<void> {
  if (created.length > 0) {
    await tx.run(`INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at)
      SELECT $1, k, id, p, CAST(seen AS TIMESTAMP), CASE WHEN p IS NULL THEN NULL ELSE CAST($2 AS TIMESTAMP) END
      FROM (SELECT unnest($3) AS k, unnest($4) AS id, unnest($5) AS p, unnest($6) AS seen)`,
    [ws, utc(at), keys(created.map((v) => v.visitor_key)), texts(created.map((v) => v.visitor_id)),
      keys(created.map((v) => v.person_key)), texts(created.map((v) => utc(v.first_seen_at)))],
    [VARCHAR, VARCHAR, KEYS, TEXTS, KEYS, TEXTS]);
  }
  if (relinked.length > 0) {
    await tx.run(`UPDATE visitors SET person_key = u.p, linked_at = CAST($2 AS TIMESTAMP)
      FROM (SELECT unnest($3) AS k, unnest($4) AS p) AS u
      WHERE visitors.workspace_id = $1 AND visitors.visitor_key = u.k`,
    [ws, utc(at), keys(relinked.map((v) => v.visitor_key)), keys(relinked.map((v) => v.person_key))],
    [VARCHAR, VARCHAR, KEYS, KEYS]);
  }
}
