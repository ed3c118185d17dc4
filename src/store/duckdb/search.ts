// The persons' search column on DuckDB, which has no trigram index: email, external_id and name
// lowercased and joined by a line feed (a term holding one could span two values: it is matched
// column by column), so a lookup scans one column with one contains() instead
// of lowering three (GET /people). Kept by every write of persons, the import and a migration.
//
// And its trigrams (`person_grams`, one row per distinct trigram of a person's search text; none
// spans a line feed), kept sorted by the migration and the import so a trigram's rows sit together:
// a lookup intersects the rows of the term's rarest trigrams (by `person_gram_counts`) and checks
// the few candidates with contains(). Writes only add rows (a replaced name's trigrams stay, and
// only make a candidate that the check drops); the counts are refreshed by the import and the
// migration only, so they steer the choice of trigrams but never decide an answer.

import { type Candidates, type CustomerGrams, type GramIndex, type PeopleSearch, SCANNED } from '../control/search.js';
import type { ControlSql } from '../control/store.js';

/** The search text of a person from its email, external_id and name expressions. */
export const personSearch = (email: string, externalId: string, name: string): string =>
  `lower(concat_ws(chr(10), ${email}, ${externalId}, ${name}))`;

/** The distinct trigrams of a search text expression, as a list (empty below three characters). */
export const searchGrams = (search: string): string =>
  `list_filter(list_distinct(list_transform(range(1, length(${search}) - 1), lambda i: substr(${search}, i, 3))), lambda g: NOT contains(g, chr(10)))`;

/** The search text of a paying customer from its id and email expressions. */
export const customerSearch = (customerId: string, email: string): string => `lower(concat_ws(chr(10), ${customerId}, ${email}))`;

/** Index rows (workspace_id, gram, `keyName`) of the rows of `from`, whose expressions `ws`, `key`, `search` give them (each computed once). */
const gramRows = (keyName: string) => (from: string, ws: string, key: string, search: string): string =>
  `SELECT w AS workspace_id, unnest(${searchGrams('s')}) AS gram, k AS ${keyName} FROM (SELECT ${ws} AS w, ${key} AS k, ${search} AS s FROM ${from}) AS texts`;

/** Rows of `person_grams` for the persons of `from`. */
export const personGramRows = gramRows('person_key');
/** Rows of `customer_grams` for the customers of `from`. */
export const customerGramRows = gramRows('customer_id');

/** Fills the (empty) index and its counts from the persons stored: the migration's statements. */
export const FILL_PERSON_GRAMS = `
  INSERT INTO person_grams SELECT * FROM (${personGramRows('persons', 'workspace_id', 'person_key', 'search')}) ORDER BY workspace_id, gram;
  INSERT INTO person_gram_counts SELECT workspace_id, gram, count(*) FROM person_grams GROUP BY ALL;`;

/** The customers' index and counts made anew for the workspace `ws` (an expression), or every workspace: the import's and the migration's statements. */
export const fillCustomerGrams = (ws: string | null): string[] => {
  const where = ws === null ? '' : ` WHERE workspace_id = ${ws}`;
  return [
    `DELETE FROM customer_grams${where}`,
    `DELETE FROM customer_gram_counts${where}`,
    `INSERT INTO customer_grams SELECT * FROM (${customerGramRows(`(SELECT workspace_id, customer_id, email FROM payment_customers${where}) AS c`,
      'c.workspace_id', 'c.customer_id', customerSearch('c.customer_id', 'c.email'))}) ORDER BY workspace_id, gram`,
    `INSERT INTO customer_gram_counts SELECT workspace_id, gram, count(*) FROM customer_grams${where} GROUP BY ALL`,
  ];
};

/** The keys in the index `table` under all of three trigrams, the parameters from $n. */
const underAll = (table: string, key: string, n: number) =>
  [n, n + 1, n + 2].map((g) => `SELECT ${key} FROM ${table} WHERE workspace_id = $1 AND gram = $${g}`).join(' INTERSECT ');

/** Past this many index rows under its rarest trigram a term is common: the search column (the customers) is scanned. */
const COMMON_GRAM = 20_000;
/** Past this many candidates (persons under all three rarest trigrams) the scan is cheaper than checking each. */
const MAX_CANDIDATES = 2_000;
/**
 * The customers' threshold of COMMON_GRAM: intersecting their text keys costs more than the
 * persons' integers, and scanning them less (bench/RESULTS.md, "People lookup").
 */
const COMMON_CUSTOMER_GRAM = 2_000;

/**
 * Each distinct trigram of the term ($2) with its counts in workspace $1: `gram`, `persons` and
 * `customers` (rows under it in each index); none below three characters. A trigram missing from
 * the counts (written since they were made) counts 0: the rarest.
 */
const GRAM_COUNTS = `SELECT t.gram, coalesce(p.n, 0) AS persons, coalesce(c.n, 0) AS customers
    FROM (SELECT DISTINCT unnest(${searchGrams('CAST($2 AS VARCHAR)')}) AS gram) t
    LEFT JOIN person_gram_counts p ON p.workspace_id = $1 AND p.gram = t.gram
    LEFT JOIN customer_gram_counts c ON c.workspace_id = $1 AND c.gram = t.gram`;

/**
 * The workspace's ($1) persons (`person_key`) indexed under all of three trigrams, then its
 * customers (`customer_id`) under all of three, for the sides asked, their trigrams the next
 * parameters in that order ($2…$4, then the customers' next): both sides in one statement.
 */
const underAllThree = (persons: boolean, customers: boolean): string => [
  ...(persons ? [`SELECT person_key, CAST(NULL AS VARCHAR) AS customer_id FROM (${underAll('person_grams', 'person_key', 2)})`] : []),
  ...(customers ? [`SELECT CAST(NULL AS BIGINT), customer_id FROM (${underAll('customer_grams', 'customer_id', persons ? 5 : 2)})`] : []),
].join(' UNION ALL ');

/**
 * The persons and the customers whose search texts hold the term's three rarest trigrams (by each
 * index's counts), in two statements for both sides. A side is scanned (null) where the term has
 * no trigram (under three characters, or a line feed: matched column by column), or it is too
 * common for the index to pay. The lookup's statement checks the candidates for the whole term.
 */
async function candidates(sql: ControlSql, ws: string, term: string): Promise<Candidates> {
  if (term === '' || term.includes('\n')) return SCANNED;
  const counts = await sql.all(GRAM_COUNTS, [ws, term]);
  if (counts.length === 0) return SCANNED;
  const rarest = (side: 'persons' | 'customers', common: number): string[] | null => {
    const sorted = [...counts].sort((x, y) => Number(x[side]) - Number(y[side]) || ((x.gram as string) < (y.gram as string) ? -1 : 1));
    if (Number(sorted[0]![side]) > common) return null;
    const [a, b = a, c = b] = sorted.slice(0, 3).map((r) => r.gram as string);
    return [a!, b!, c!];
  };
  const [persons, customers] = [rarest('persons', COMMON_GRAM), rarest('customers', COMMON_CUSTOMER_GRAM)];
  if (persons === null && customers === null) return SCANNED;
  const rows = await sql.all(underAllThree(persons !== null, customers !== null), [ws, ...(persons ?? []), ...(customers ?? [])]);
  const personKeys = rows.flatMap((r) => (r.person_key === null ? [] : [Number(r.person_key)]));
  const customerIds = rows.flatMap((r) => (r.customer_id === null ? [] : [r.customer_id as string]));
  return {
    persons: persons === null || personKeys.length > MAX_CANDIDATES ? null : personKeys,
    customers: customers === null || customerIds.length > MAX_CANDIDATES ? null : customerIds,
  };
}

const containsLower = (column: string, term: string) => `contains(lower(${column}), ${term})`;

/** DuckDB has no trigram index of its own: the search column, and the trigram tables kept beside it. */
export const duckdbSearch: PeopleSearch = {
  containsLower,
  // The search column, unless the term holds its separator (it could then span two values).
  personMatches: (p, term) => `CASE WHEN contains(${term}, chr(10))
    THEN (${['email', 'external_id', 'name'].map((c) => containsLower(`${p}.${c}`, term)).join(' OR ')})
    ELSE contains(${p}.search, ${term}) END`,
  unownedCustomersIndexed: false,
  rareGrams: () => Promise.resolve(null),
  candidates,
  personSearch,
  personGrams: { rows: personGramRows } satisfies GramIndex,
  customerGrams: { rows: customerGramRows, search: customerSearch } satisfies CustomerGrams,
};
