// The people search (GET /people) as each engine answers it: the lookup's statement is written once
// (store/control/lookup.ts), and this prints its matching, finds the candidates of an engine's own
// trigram indexes, and keeps those indexes with the writes of persons and customers. One file per
// engine: store/duckdb/search.ts, store/postgres/search.ts.

import type { ControlSql } from './store.js';

/** The candidates of an engine's trigram indexes, by side, to be checked for the whole term; null: that side is scanned. */
export interface Candidates {
  persons: number[] | null;
  customers: string[] | null;
}

export const SCANNED: Candidates = { persons: null, customers: null };

export interface PeopleSearch {
  /**
   * Whether `column` lowercased contains `term` (a lowercased text), characters taken literally;
   * null for a null column. With `grams` (parameters, each three of the term's letters or digits,
   * from rareGrams) an index is searched by those only, the rows found then checked for the whole term.
   */
  containsLower(column: string, term: string, grams?: readonly string[]): string;
  /** Whether the person row `person` has `term` (lowercased) in its lowercased email, external_id or name. */
  personMatches(person: string, term: string, grams?: readonly string[]): string;
  /**
   * Whether the customers without an owner (no person, not `linked`) have trigram indexes of their
   * own, which the lookup reads them by.
   */
  readonly unownedCustomersIndexed: boolean;
  /**
   * Whether a page's persons are joined to their customers and visitors by the engine's indexes in one
   * statement (PostgreSQL's nested loops); else they are read by lists of keys, a statement each step
   * (DuckDB joins by hashing the whole table joined).
   */
  readonly joinsByIndex: boolean;
  /**
   * The pieces of the term (lowercased) to search the indexes by, where the engine searches them by
   * a term's rarest trigrams; null: by all of them.
   */
  rareGrams(sql: ControlSql, term: string): Promise<string[] | null>;
  /**
   * A value lowercased as the engine's lower() does, where the engine keeps trigram indexes of its
   * own: few candidates are then checked for the term in this process (store/control/lookup-few.ts).
   */
  readonly lower?: (value: string) => string;
  /** The candidates of the workspace's persons and customers for the term (lowercased), where the engine keeps trigram indexes of its own. */
  candidates(sql: ControlSql, ws: string, term: string): Promise<Candidates>;
  /**
   * The persons' search column, from the person's email, external_id and name expressions, on an
   * engine that keeps one; null where the columns are indexed.
   */
  readonly personSearch: ((email: string, externalId: string, name: string) => string) | null;
  /**
   * Persons created, or given values (email, name) a write stores, with those values: where the
   * engine's indexes are its own, the writes of persons call this inside their transaction.
   */
  indexPersons(ws: string, persons: readonly IndexedRow<number>[]): void;
  /** Customers created or given another email, with their id and email (as indexPersons). */
  indexCustomers(ws: string, customers: readonly IndexedRow<string>[]): void;
  /**
   * Drops what the engine's own indexes hold of the workspace: they are made again from its stored
   * rows at its next lookup. For writes that do not pass through indexPersons / indexCustomers (the
   * import), or that remove rows whose values the indexes must no longer hold (a person deleted).
   */
  forget(ws: string): void;
}

/** A row's key (a person's, a customer's id) and the values the search finds it by (null: none). */
export interface IndexedRow<Key> {
  key: Key;
  values: readonly (string | null | undefined)[];
}
