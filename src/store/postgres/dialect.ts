// How PostgreSQL spells the constructs of the control statements (store/control/store.ts
// ControlDialect). Column parameters arrive as JSON array text, as on DuckDB.

import type { ControlDialect } from '../control/store.js';
import { refusedValue } from './refused.js';

const FIELD_TYPES = { text: 'text', bigint: 'bigint', boolean: 'boolean' } as const;

const keys = (param: string) => `CAST(jsonb_array_elements_text(CAST(${param} AS jsonb)) AS bigint)`;
const texts = (param: string) => `jsonb_array_elements_text(CAST(${param} AS jsonb))`;

export const postgresDialect: ControlDialect = {
  texts,
  keys,
  nextKeys: (sequence, n) => `SELECT nextval('${sequence}') AS k FROM generate_series(1, ${n})`,
  json: (value) => `CAST(${value} AS jsonb)`,
  mergeObject: (column, patch) => `(CASE WHEN jsonb_typeof(${column}) = 'object' THEN ${column} ELSE '{}'::jsonb END) || CAST(${patch} AS jsonb)`,
  byKeys: (table, key, list, ws, columns, type = 'bigint') =>
    `(SELECT ${columns} FROM ${table} WHERE workspace_id = ${ws} AND ${key} IN (${typeof list === 'string' ? `SELECT ${type === 'text' ? texts(list) : keys(list)}` : list.join(', ')}))`,
  listAgg: (value) => `array_agg(${value} ORDER BY ${value})`,
  listOf: (value) => (value === null ? 'CAST(ARRAY[] AS text[])' : `ARRAY[${value}]`),
  jsonRows: (param, alias, fields) =>
    `jsonb_to_recordset(CAST(${param} AS jsonb)) AS ${alias}(${Object.entries(fields).map(([name, type]) => `${name} ${FIELD_TYPES[type]}`).join(', ')})`,
  hasPath: (column, path) => `(${column} #> string_to_array(CAST(${path} AS text), '.')) IS NOT NULL`,
  jsonAt: (column, path) => `CAST(${column} #> string_to_array(CAST(${path} AS text), '.') AS text)`,
  // A write for a person only keeps it from being deleted: writers of one person do not wait for each other.
  personLocks: { merge: 'FOR UPDATE', write: 'FOR KEY SHARE' },
  refusal: refusedValue,
  duplicateKey: (err) => typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505',
};
