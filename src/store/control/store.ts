// The control store: the mutable state read and written in transactions (workspaces, keys, persons
// and the visitor registry, customers' link states, audience definitions, deliveries). One engine
// per deployment: the embedded DuckDB file (store/duckdb/control.ts), or PostgreSQL shared by many
// API nodes (store/postgres/). The statements of store/control/*.ts are written once, with `$n`
// parameters, in the SQL both engines read; where they spell a construct differently the engine's
// ControlDialect prints it (Kysely's query compiler per dialect).

import { stringifyWellFormed } from '../../well-formed.js';
import type { ControlCaches } from './caches.js';
import type { PeopleSearch } from './search.js';

/** A bound value: instants as Date, keys as number (or bigint past 2^53). */
export type ControlValue = string | number | bigint | boolean | Date | null;
export type ControlRow = Record<string, unknown>;
export type KeySequence = 'person_keys' | 'visitor_keys';

/** A column of values as one parameter (its JSON array text), read by ControlDialect.texts / keys. */
export const columnOf = (values: readonly (string | number | null)[]): string => stringifyWellFormed(values);

/** What differs between the engines' SQL, as fragments of statement text. */
export interface ControlDialect {
  /**
   * The values of a column parameter (its JSON array text: columnOf), as an expression that a select
   * list unnests row by row and `IN (SELECT …)` reads as a set; several in one select list zip.
   */
  texts(param: string): string;
  keys(param: string): string;
  /** `n` (an integer the caller checked) fresh values of a key sequence, one row each as `k`. */
  nextKeys(sequence: KeySequence, n: number): string;
  /** A JSON text value as the engine's JSON column type. */
  json(value: string): string;
  /** `column` merged with the JSON object text `patch`: keys sent replace, others stay; a stored non-object is replaced. */
  mergeObject(column: string, patch: string): string;
  /**
   * The rows (`columns`) of `table` in workspace `ws` whose `key` is one of the key column `keys`
   * (integers, or texts with `type` text), or of the parameters `keys` holding a key each,
   * as a parenthesized subquery: on DuckDB found by the keys first (its index on them, or a scan of
   * that column alone), since a filter on the workspace has every row read first.
   */
  byKeys(table: string, key: string, keys: string | readonly string[], ws: string, columns: string, type?: 'bigint' | 'text'): string;
  /** The text values of an aggregate group, ordered, as a list; and a list of one or no value. */
  listAgg(value: string): string;
  listOf(value: string | null): string;
  /** A JSON array text parameter of `{ field: value }` objects, as a FROM item named `alias` with the typed fields. */
  jsonRows(param: string, alias: string, fields: Record<string, 'text' | 'bigint' | 'boolean'>): string;
  /** Whether the JSON `column` holds the dotted path `path` (a text parameter: `a.b`, as store/property-paths.ts spells them). */
  hasPath(column: string, path: string): string;
  /** The JSON value at the dotted path `path` (a text parameter) of the JSON `column`, as JSON text (`true`, `"a"`); null when absent. */
  jsonAt(column: string, path: string): string;
  /**
   * The row locks a merge (`merge`) and a write for a person (`write`) take on person rows, or null
   * where one writer at a time needs none (DuckDB): control/people.ts lockPersons.
   */
  personLocks: { merge: string; write: string } | null;
  /** Whether `err` is a statement's failure on a unique or primary key that already holds the value. */
  duplicateKey(err: unknown): boolean;
  /** The engine's reason when `err` refuses a value (the input's fault), in one line without the input; null for any other failure. */
  refusal(err: unknown): string | null;
}

/** A connection to the control engine: the pool outside a transaction, or a transaction's. */
export interface ControlSql {
  readonly dialect: ControlDialect;
  /** The people search on this engine, and the indexes its writes keep (store/control/search.ts). */
  readonly search: PeopleSearch;
  all(sql: string, params?: readonly ControlValue[]): Promise<ControlRow[]>;
  /** Runs a statement; the number of rows it changed. */
  run(sql: string, params?: readonly ControlValue[]): Promise<number>;
}

/** The connection of a control transaction (ControlStore.transaction). */
export interface ControlTx extends ControlSql {
  /**
   * Runs `hook` once this transaction has committed (never after a rollback). In-memory state that
   * mirrors committed rows updates here.
   */
  afterCommit(hook: () => void): void;
}

export interface ControlStore extends ControlSql {
  /**
   * Runs `fn` in one transaction; nothing is kept if it throws. On an engine shared by many nodes, a
   * transaction that lost a race (a serialization failure, a unique key taken meanwhile) runs `fn`
   * again from the start, so `fn` must keep its effects inside the transaction until it commits.
   */
  transaction<T>(fn: (tx: ControlTx) => Promise<T>): Promise<T>;
  /**
   * Whether other processes write the same control state (PostgreSQL behind many API nodes): then
   * nothing read may be cached across transactions in one process.
   */
  readonly shared: boolean;
  /** `n` fresh keys from a sequence, never handed out before (control/keys.ts). */
  nextKeys(sequence: KeySequence, n: number): Promise<number[]>;
  /** What this process keeps in memory of the store's rows. */
  readonly caches: ControlCaches;
  /** How many of the engine's schema migrations are applied. */
  schemaVersion(): Promise<number>;
  close(): Promise<void>;
}
