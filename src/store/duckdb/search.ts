// The persons' search column on DuckDB, which has no trigram index: email, external_id and name
// lowercased and joined by a line feed (a term holding one could span two values: it is matched
// column by column), so a lookup scans one column with one contains() instead
// of lowering three (GET /people). Kept by every write of persons, the import and a migration.

/** The search text of a person from its email, external_id and name expressions. */
export const personSearch = (email: string, externalId: string, name: string): string =>
  `lower(concat_ws(chr(10), ${email}, ${externalId}, ${name}))`;
