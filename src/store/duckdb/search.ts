// The persons' search column on DuckDB: email, external_id and name lowercased and joined by a
// line feed (a term holding one could span two values: it is matched column by column), so a
// lookup scans one column with one contains() instead of lowering three (GET /people). Kept by
// every write of persons, the import and a migration.
//
// And the trigram indexes of the persons and of the paying customers, held in this process's memory
// (store/duckdb/trigrams.ts): DuckDB has none of its own, and tables of trigrams served only as
// long as their rows sat sorted, which writes as they arrive do not keep (bench/RESULTS.md,
// "People lookup"). The DuckDB file has one writer, this process, so every write adds its rows'
// trigrams (before it commits: a rolled-back write leaves a candidate that the check drops). A
// workspace's indexes are filled from its rows at its first lookup, which scans until they are.
// Replaced values stay indexed: they too only make a candidate that the lookup's check drops.

import { type Candidates, type IndexedRow, type PeopleSearch, SCANNED } from '../control/search.js';
import type { ControlSql } from '../control/store.js';
import type { Store } from './db.js';
import { GramIndex, gramsOf, lowerAsDuckDB } from './trigrams.js';

/** The search text of a person from its email, external_id and name expressions. */
export const personSearch = (email: string, externalId: string, name: string): string =>
  `lower(concat_ws(chr(10), ${email}, ${externalId}, ${name}))`;

/** Past this many persons under its rarest trigram a term is common: the search column is scanned (a common term's first page is a short top-N). */
const COMMON_GRAM = 20_000;
/** Past this many candidates the scan is cheaper than checking each. */
const MAX_CANDIDATES = 2_000;
/** The customers' thresholds: scanning their text keys costs less than the persons' column, reading them by id more. */
const COMMON_CUSTOMER_GRAM = 2_000;
/** Persons read per statement while a workspace's index is filled. */
const FILL_ROWS = 200_000;
/** After a failed fill, the workspace is scanned for this long before it is tried again. */
const RETRY_MS = 60_000;

interface WorkspaceIndexes {
  persons: GramIndex<number>;
  customers: GramIndex<string>;
  /** Until the fill has read every committed row, the indexes prove nothing. */
  ready: Promise<boolean>;
  filled: boolean;
}

/** The people search of one DuckDB database: the search column, and the trigram indexes in memory. */
export class DuckDBSearch implements PeopleSearch {
  readonly joinsByIndex = false;
  readonly unownedCustomersIndexed = false;
  readonly personSearch = personSearch;
  readonly lower = lowerAsDuckDB;
  private readonly workspaces = new Map<string, WorkspaceIndexes>();
  private readonly failedAt = new Map<string, number>();

  /** `store` null: a connection outside the database's writes, which writes no person or customer. */
  constructor(private readonly store: Store | null) {}

  containsLower(column: string, term: string): string {
    return containsLower(column, term);
  }

  // The search column, unless the term holds its separator (it could then span two values).
  personMatches(p: string, term: string): string {
    return `CASE WHEN contains(${term}, chr(10))
    THEN (${['email', 'external_id', 'name'].map((c) => containsLower(`${p}.${c}`, term)).join(' OR ')})
    ELSE contains(${p}.search, ${term}) END`;
  }

  rareGrams(): Promise<string[] | null> {
    return Promise.resolve(null);
  }

  /**
   * The persons and customers indexed under the term's trigrams, the rarest first; a side is
   * scanned (null) where the term has no trigram (under three characters, or a line feed: matched
   * column by column), is too common for the index to pay, or the workspace's indexes are not filled yet.
   */
  candidates(_sql: ControlSql, ws: string, term: string): Promise<Candidates> {
    const indexes = this.prepare(ws);
    if (!indexes?.filled || term.includes('\n')) return Promise.resolve(SCANNED);
    const grams = gramsOf(term);
    return Promise.resolve({
      persons: indexes.persons.find(term, grams, COMMON_GRAM, MAX_CANDIDATES),
      customers: indexes.customers.find(term, grams, COMMON_CUSTOMER_GRAM, MAX_CANDIDATES),
    });
  }

  indexPersons(ws: string, persons: readonly IndexedRow<number>[]): void {
    const indexes = this.writable(ws);
    for (const p of persons) indexes?.persons.add(p.key, p.values);
  }

  indexCustomers(ws: string, customers: readonly IndexedRow<string>[]): void {
    const indexes = this.writable(ws);
    for (const c of customers) indexes?.customers.add(c.key, c.values);
  }

  forget(ws: string): void {
    this.workspaces.delete(ws);
  }

  /** Resolves once the workspace's indexes answer lookups (false: their fill failed); starts the fill. */
  async ready(ws: string): Promise<boolean> {
    return (await this.prepare(ws)?.ready) ?? false;
  }

  private writable(ws: string): WorkspaceIndexes | undefined {
    if (this.store === null) throw new Error('persons and customers are written in the database\'s transactions only');
    return this.workspaces.get(ws);
  }

  /**
   * The workspace's indexes, their fill started unless it is: from here on every write of the
   * workspace adds its rows. An empty transaction waits out the writes already running (which
   * may have missed the entry); each read after it sees their commits.
   */
  private prepare(ws: string): WorkspaceIndexes | undefined {
    const store = this.store;
    const known = this.workspaces.get(ws);
    if (known || store === null || Date.now() - (this.failedAt.get(ws) ?? -Infinity) < RETRY_MS) return known;
    const indexes: WorkspaceIndexes = { persons: new GramIndex(), customers: new GramIndex(), ready: Promise.resolve(false), filled: false };
    this.workspaces.set(ws, indexes);
    indexes.ready = fill(store, ws, indexes).then(() => {
      indexes.filled = true;
      return this.workspaces.get(ws) === indexes;
    }, () => {
      if (this.workspaces.get(ws) === indexes) this.workspaces.delete(ws);
      this.failedAt.set(ws, Date.now());
      return false;
    });
    return indexes;
  }
}

/** The workspace's committed persons (by key ranges: a key never changes) and customers into its indexes. */
async function fill(store: Store, ws: string, indexes: WorkspaceIndexes): Promise<void> {
  await store.transaction(async () => undefined);
  const [top] = await store.query('SELECT coalesce(max(person_key), 0) AS top FROM persons');
  for (let from = 0; from <= Number(top!.top); from += FILL_ROWS) {
    const rows = await store.query(`SELECT person_key, email, external_id, name FROM persons
      WHERE person_key BETWEEN $2 AND $3 AND workspace_id = $1`, [ws, from, from + FILL_ROWS - 1]);
    for (const r of rows) indexes.persons.add(Number(r.person_key), [r.email as string | null, r.external_id as string | null, r.name as string | null]);
  }
  for (const r of await store.query('SELECT customer_id, email FROM payment_customers WHERE workspace_id = $1', [ws])) {
    indexes.customers.add(r.customer_id as string, [r.customer_id as string, r.email as string | null]);
  }
}

const containsLower = (column: string, term: string) => `contains(lower(${column}), ${term})`;

