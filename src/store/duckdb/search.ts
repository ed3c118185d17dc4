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

import type { CustomerGrams, PersonGrams } from '../control/store.js';

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

/**
 * The lookup's statements of both indexes. A trigram missing from the counts (written since they
 * were made) counts 0: the rarest. The candidates come back to be checked by a key list
 * (store/control/lookup.ts): persons and customers in one statement.
 */
export const personGrams: PersonGrams = {
  rows: personGramRows,
  counts: `SELECT t.gram, coalesce(p.n, 0) AS persons, coalesce(c.n, 0) AS customers
    FROM (SELECT DISTINCT unnest(${searchGrams('CAST($2 AS VARCHAR)')}) AS gram) t
    LEFT JOIN person_gram_counts p ON p.workspace_id = $1 AND p.gram = t.gram
    LEFT JOIN customer_gram_counts c ON c.workspace_id = $1 AND c.gram = t.gram`,
  candidates: (persons, customers) => [
    ...(persons ? [`SELECT person_key, CAST(NULL AS VARCHAR) AS customer_id FROM (${underAll('person_grams', 'person_key', 2)})`] : []),
    ...(customers ? [`SELECT CAST(NULL AS BIGINT), customer_id FROM (${underAll('customer_grams', 'customer_id', persons ? 5 : 2)})`] : []),
  ].join(' UNION ALL '),
};

export const customerGrams: CustomerGrams = { rows: customerGramRows, search: customerSearch };
