// How PostgreSQL spells the constructs of the control statements (store/control/store.ts
// ControlDialect). Column parameters arrive as JSON array text, as on DuckDB.

import type { ControlDialect } from '../control/store.js';
import { refusedValue } from './refused.js';

const FIELD_TYPES = { text: 'text', bigint: 'bigint', boolean: 'boolean' } as const;

/**
 * LIKE with the term's wildcards and escape character escaped, the one form the pg_trgm indexes on
 * `lower(column)` answer (migrations/003_people_lookup.sql); the term is bound, and the planner
 * folds the pattern before it picks the index.
 */
const likeLower = (column: string, term: string) =>
  `(lower(${column}) LIKE '%' || replace(replace(replace(${term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%')`;

/**
 * With `grams` (letters and digits, no wildcard), the index reads those trigrams' rows only, and
 * strpos(), which no index answers, checks the term: a full email's common trigrams (`use`, `com`)
 * cost the index most of its time (bench/RESULTS.md).
 */
const containsLower = (column: string, term: string, grams?: readonly string[]) => (grams === undefined ? likeLower(column, term)
  : `(${grams.map((g) => `lower(${column}) LIKE '%' || ${g} || '%'`).join(' AND ')} AND strpos(lower(${column}), ${term}) > 0)`);

const keys = (param: string) => `CAST(jsonb_array_elements_text(CAST(${param} AS jsonb)) AS bigint)`;
const texts = (param: string) => `jsonb_array_elements_text(CAST(${param} AS jsonb))`;

export const postgresDialect: ControlDialect = {
  engine: 'postgres',
  texts,
  keys,
  nextKeys: (sequence, n) => `SELECT nextval('${sequence}') AS k FROM generate_series(1, ${n})`,
  json: (value) => `CAST(${value} AS jsonb)`,
  mergeObject: (column, patch) => `(CASE WHEN jsonb_typeof(${column}) = 'object' THEN ${column} ELSE '{}'::jsonb END) || CAST(${patch} AS jsonb)`,
  containsLower,
  personMatches: (p, term, grams) => `(${['email', 'external_id', 'name'].map((c) => containsLower(`${p}.${c}`, term, grams)).join(' OR ')})`,
  personSearch: null,
  personGrams: null,
  customerGrams: null,
  unownedCustomersIndexed: true,
  // Persons at 2,000 random keys (the primary key's range): a sample of rows, where TABLESAMPLE
  // SYSTEM's pages hold neighbours (keys in a row, often alike: `user777700`…`user777770`).
  personSample: `SELECT concat_ws(chr(10), lower(email), lower(external_id), lower(name)) AS t FROM persons
    WHERE person_key IN (SELECT lo + CAST(floor(random() * (hi - lo + 1)) AS bigint)
      FROM (SELECT min(person_key) AS lo, max(person_key) AS hi FROM persons) AS bounds, generate_series(1, 2000))`,
  byKeys: (table, key, list, ws, columns, type = 'bigint') =>
    `(SELECT ${columns} FROM ${table} WHERE workspace_id = ${ws} AND ${key} IN (SELECT ${type === 'text' ? texts(list) : keys(list)}))`,
  listAgg: (value) => `array_agg(${value} ORDER BY ${value})`,
  listOf: (value) => (value === null ? 'CAST(ARRAY[] AS text[])' : `ARRAY[${value}]`),
  jsonRows: (param, alias, fields) =>
    `jsonb_to_recordset(CAST(${param} AS jsonb)) AS ${alias}(${Object.entries(fields).map(([name, type]) => `${name} ${FIELD_TYPES[type]}`).join(', ')})`,
  refusal: refusedValue,
  duplicateKey: (err) => typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505',
};
