// How PostgreSQL spells the constructs of the control statements (store/control/store.ts
// ControlDialect). Column parameters arrive as JSON array text, as on DuckDB.

import type { ControlDialect } from '../control/store.js';

const FIELD_TYPES = { text: 'text', bigint: 'bigint', boolean: 'boolean' } as const;

/**
 * LIKE with the term's wildcards and escape character escaped, the one form the pg_trgm indexes on
 * `lower(column)` answer (migrations/003_people_lookup.sql); the term is bound, and the planner
 * folds the pattern before it picks the index.
 */
const containsLower = (column: string, term: string) =>
  `(lower(${column}) LIKE '%' || replace(replace(replace(${term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%')`;

export const postgresDialect: ControlDialect = {
  engine: 'postgres',
  texts: (param) => `jsonb_array_elements_text(CAST(${param} AS jsonb))`,
  keys: (param) => `CAST(jsonb_array_elements_text(CAST(${param} AS jsonb)) AS bigint)`,
  nextKeys: (sequence, n) => `SELECT nextval('${sequence}') AS k FROM generate_series(1, ${n})`,
  json: (value) => `CAST(${value} AS jsonb)`,
  mergeObject: (column, patch) => `(CASE WHEN jsonb_typeof(${column}) = 'object' THEN ${column} ELSE '{}'::jsonb END) || CAST(${patch} AS jsonb)`,
  containsLower,
  personMatches: (p, term) => `(${['email', 'external_id', 'name'].map((c) => containsLower(`${p}.${c}`, term)).join(' OR ')})`,
  personSearch: null,
  personGrams: null,
  listAgg: (value) => `array_agg(${value} ORDER BY ${value})`,
  listOf: (value) => (value === null ? 'CAST(ARRAY[] AS text[])' : `ARRAY[${value}]`),
  jsonRows: (param, alias, fields) =>
    `jsonb_to_recordset(CAST(${param} AS jsonb)) AS ${alias}(${Object.entries(fields).map(([name, type]) => `${name} ${FIELD_TYPES[type]}`).join(', ')})`,
};
