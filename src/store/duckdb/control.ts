// The control store on the embedded DuckDB file: the database the DuckDB analytical store uses too,
// one writer at a time (store/duckdb/db.ts), so a transaction never loses a race and runs once.

import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { ControlCaches } from '../control/caches.js';
import { KeyBlocks } from '../control/keys.js';
import type { ControlDialect, ControlRow, ControlSql, ControlStore, ControlTx, ControlValue, KeySequence } from '../control/store.js';
import type { Store } from './db.js';
import { DuckDBKnownIds } from './known-ids.js';
import { refusedValue } from './refused.js';
import { DuckDBSearch } from './search.js';
import { runKept } from './statements.js';
import { timestamp } from './time.js';

const FIELD_TYPES = { text: 'VARCHAR', bigint: 'BIGINT', boolean: 'BOOLEAN' } as const;

export const duckdbDialect: ControlDialect = {
  texts: (param) => `unnest(CAST(CAST(${param} AS JSON) AS VARCHAR[]))`,
  keys: (param) => `unnest(CAST(CAST(${param} AS JSON) AS BIGINT[]))`,
  nextKeys: (sequence, n) => `SELECT nextval('${sequence}') AS k FROM range(${n})`,
  json: (value) => `CAST(${value} AS JSON)`,
  mergeObject: (column, patch) => `CAST(map_concat(
    CAST(CASE WHEN json_type(${column}) = 'OBJECT' THEN ${column} ELSE '{}' END AS MAP(VARCHAR, JSON)),
    CAST(CAST(${patch} AS JSON) AS MAP(VARCHAR, JSON))) AS JSON)`,
  // No filter moves past a LIMIT: the workspace is checked on the rows the keys found. Keys bound
  // each in a parameter are compared as constants, without the list's parse and join.
  byKeys: (table, key, keys, ws, columns, type = 'bigint') => `(SELECT ${columns} FROM (
      SELECT workspace_id, ${columns} FROM ${table} WHERE ${typeof keys === 'string'
  ? `${key} = ANY(CAST(CAST(${keys} AS JSON) AS ${type === 'text' ? 'VARCHAR' : 'BIGINT'}[]))` : `${key} IN (${keys.join(', ')})`} LIMIT 9223372036854775807
    ) AS keyed WHERE workspace_id = ${ws})`,
  listAgg: (value) => `list(${value} ORDER BY ${value})`,
  listOf: (value) => (value === null ? 'CAST([] AS VARCHAR[])' : `[${value}]`),
  jsonRows: (param, alias, fields) => {
    const shape = `[{${Object.entries(fields).map(([name, type]) => `"${name}":"${FIELD_TYPES[type]}"`).join(',')}}]`;
    return `(SELECT unnest(from_json(${param}, '${shape}'), recursive := true)) AS ${alias}`;
  },
  // A JSON Pointer: keys are taken as they are (a JSONPath would need quoting).
  hasPath: (column, path) => `json_exists(${column}, '/' || replace(CAST(${path} AS VARCHAR), '.', '/'))`,
  jsonAt: (column, path) => `CAST(json_extract(${column}, '/' || replace(CAST(${path} AS VARCHAR), '.', '/')) AS VARCHAR)`,
  personLocks: null,
  refusal: refusedValue,
  duplicateKey: (err) => err instanceof Error && err.message.startsWith('Constraint Error: Duplicate key'),
};

/** Instants bound as TIMESTAMP (naive UTC, as the columns hold them); the rest as they are. */
const bind = (params: readonly ControlValue[]): DuckDBValue[] =>
  params.map((v) => (v instanceof Date ? timestamp(v) : v));

/** Control statements on one DuckDB connection. */
class DuckDBControlSql implements ControlSql {
  readonly dialect = duckdbDialect;

  constructor(protected readonly conn: DuckDBConnection, readonly search: DuckDBSearch) {}

  async all(sql: string, params: readonly ControlValue[] = []): Promise<ControlRow[]> {
    return (await (await this.execute(sql, params)).getRowObjectsJS()) as ControlRow[];
  }

  async run(sql: string, params: readonly ControlValue[] = []): Promise<number> {
    return Number((await this.execute(sql, params)).rowsChanged);
  }

  private execute(sql: string, params: readonly ControlValue[]) {
    return params.length > 0 ? runKept(this.conn, sql, bind(params)) : this.conn.run(sql);
  }
}

class DuckDBControlTx extends DuckDBControlSql implements ControlTx {
  constructor(conn: DuckDBConnection, private readonly store: Store) {
    super(conn, store.search);
  }

  afterCommit(hook: () => void): void {
    this.store.afterCommit(hook);
  }
}

/** A search for the connections outside the database's transactions, which write no person or customer. */
const OUTSIDE_WRITES = new DuckDBSearch(null);

/** Control statements on a DuckDB connection of the caller's (no writes of persons or customers: controlTx). */
export const controlSql = (conn: DuckDBConnection): ControlSql => new DuckDBControlSql(conn, OUTSIDE_WRITES);

/** The control transaction on a connection inside Store.transaction (the DuckDB analytical store's units). */
export const controlTx = (store: Store, conn: DuckDBConnection): ControlTx => new DuckDBControlTx(conn, store);

export class DuckDBControl implements ControlStore {
  readonly dialect = duckdbDialect;
  readonly shared = false;
  private readonly keys = new KeyBlocks(this);
  readonly caches: ControlCaches = new ControlCaches(this.shared, () => new DuckDBKnownIds(this));

  constructor(readonly store: Store) {}

  get search(): DuckDBSearch {
    return this.store.search;
  }

  nextKeys(sequence: KeySequence, n: number): Promise<number[]> {
    return this.keys.next(sequence, n);
  }

  async all(sql: string, params: readonly ControlValue[] = []): Promise<ControlRow[]> {
    return (await this.store.query(sql, bind(params))) as ControlRow[];
  }

  run(sql: string, params: readonly ControlValue[] = []): Promise<number> {
    return this.transaction((tx) => tx.run(sql, params));
  }

  transaction<T>(fn: (tx: ControlTx) => Promise<T>): Promise<T> {
    return this.store.transaction((conn) => fn(controlTx(this.store, conn)));
  }

  async schemaVersion(): Promise<number> {
    const [row] = await this.all('SELECT max(version) AS v FROM schema_migrations');
    return Number(row?.v ?? 0);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
