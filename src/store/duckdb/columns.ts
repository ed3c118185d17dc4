// A whole column bound as one parameter: the JSON array text of its values, unpacked in SQL with
// `unnest(texts('$2'))` or `unnest(keys('$2'))`. A statement's cost then stays flat in the batch
// size, and the values cross into DuckDB as one string: binding LIST parameters converted each
// element in JS, the largest item of ingest's profile (bench/RESULTS.md, "Ingest over HTTP").

import { stringifyWellFormed } from '../../well-formed.js';

export const column = (values: readonly (string | number | null)[]): string => stringifyWellFormed(values);

/** SQL for a column parameter of text values. */
export const texts = (param: string): string => `CAST(CAST(${param} AS JSON) AS VARCHAR[])`;

/** SQL for a column parameter of integer keys. */
export const keys = (param: string): string => `CAST(CAST(${param} AS JSON) AS BIGINT[])`;
