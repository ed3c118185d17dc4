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

import type { PersonGrams } from '../control/store.js';

/** The search text of a person from its email, external_id and name expressions. */
export const personSearch = (email: string, externalId: string, name: string): string =>
  `lower(concat_ws(chr(10), ${email}, ${externalId}, ${name}))`;

/** The distinct trigrams of a search text expression, as a list (empty below three characters). */
export const searchGrams = (search: string): string =>
  `list_filter(list_distinct(list_transform(range(1, length(${search}) - 1), lambda i: substr(${search}, i, 3))), lambda g: NOT contains(g, chr(10)))`;

/** Rows of `person_grams` for the persons of `from`, whose expressions `ws`, `key`, `search` give them (each computed once). */
export const personGramRows = (from: string, ws: string, key: string, search: string): string =>
  `SELECT w AS workspace_id, unnest(${searchGrams('s')}) AS gram, k AS person_key FROM (SELECT ${ws} AS w, ${key} AS k, ${search} AS s FROM ${from}) AS texts`;

/** Fills the (empty) index and its counts from the persons stored: the migration's statements. */
export const FILL_PERSON_GRAMS = `
  INSERT INTO person_grams SELECT * FROM (${personGramRows('persons', 'workspace_id', 'person_key', 'search')}) ORDER BY workspace_id, gram;
  INSERT INTO person_gram_counts SELECT workspace_id, gram, count(*) FROM person_grams GROUP BY ALL;`;

/**
 * The index's statements. A trigram missing from the counts (written since they were made) counts
 * 0: the rarest. The candidates come back to be checked by a key list (store/control/lookup.ts).
 */
export const personGrams: PersonGrams = {
  rows: personGramRows,
  rarest: `SELECT t.gram, coalesce(c.n, 0) AS n FROM (SELECT DISTINCT unnest(${searchGrams('CAST($2 AS VARCHAR)')}) AS gram) t
    LEFT JOIN person_gram_counts c ON c.workspace_id = $1 AND c.gram = t.gram
    ORDER BY coalesce(c.n, 0), t.gram LIMIT 3`,
  candidates: ['$2', '$3', '$4'].map((g) => `SELECT person_key FROM person_grams WHERE workspace_id = $1 AND gram = ${g}`).join(' INTERSECT '),
};
