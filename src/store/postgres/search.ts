// The people search on PostgreSQL: pg_trgm indexes on the lowercased columns
// (migrations/003_people_lookup.sql, 006_unowned_customers.sql), searched by a term's rarest
// trigrams when a sample of the persons tells which they are.

import type { Candidates, PeopleSearch } from '../control/search.js';
import { SCANNED } from '../control/search.js';
import type { ControlSql } from '../control/store.js';

/**
 * LIKE with the term's wildcards and escape character escaped, the one form the pg_trgm indexes on
 * `lower(column)` answer (migrations/003_people_lookup.sql); the term is bound, and the planner
 * folds the pattern before it picks the index.
 */
const likeLower = (column: string, term: string) =>
  `(lower(${column}) LIKE '%' || replace(replace(replace(${term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%')`;

/**
 * With `grams` (pieces of the term, LIKE's wildcards escaped), the index reads those trigrams' rows only, and
 * strpos(), which no index answers, checks the term: a full email's common trigrams (`use`, `com`)
 * cost the index most of its time (bench/RESULTS.md).
 */
const containsLower = (column: string, term: string, grams?: readonly string[]) => (grams === undefined ? likeLower(column, term)
  : `(${grams.map((g) => `lower(${column}) LIKE '%' || ${g} || '%'`).join(' AND ')} AND strpos(lower(${column}), ${term}) > 0)`);

// Persons at 2,000 random keys (the primary key's range): a sample of rows, where TABLESAMPLE
// SYSTEM's pages hold neighbours (keys in a row, often alike: `user777700`…`user777770`). The
// indexes hold every workspace's rows, so the sample is of all workspaces.
const PERSON_SAMPLE = `SELECT concat_ws(chr(10), lower(email), lower(external_id), lower(name)) AS t FROM persons
    WHERE person_key IN (SELECT lo + CAST(floor(random() * (hi - lo + 1)) AS bigint)
      FROM (SELECT min(person_key) AS lo, max(person_key) AS hi FROM persons) AS bounds, generate_series(1, 2000))`;

/** A sample of the persons' search texts is read again after this long. */
const SAMPLE_MS = 60_000;
/** Past this share of the sample holding its rarest trigram, a term is searched by all of its trigrams. */
const RARE_SHARE = 0.02;
const MIN_SAMPLE = 10;
/** A sample's size, and how many of its texts hold each trigram (counted once a sample). */
interface Sample {
  size: number;
  holding: Map<string, number>;
}

/**
 * pg_trgm's trigrams of a text: each word (a run of letters and digits) padded with two spaces before
 * and one after. Only ASCII letters count here: a sample's counts steer the plan, never an answer.
 */
function indexGrams(text: string): Set<string> {
  const grams = new Set<string>();
  for (const word of text.match(/[a-z0-9]+/g) ?? []) {
    const padded = `  ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) grams.add(padded.slice(i, i + 3));
  }
  return grams;
}

/** Counts the texts holding each trigram once, not every trigram of every term against every text (which cost each lookup). */
export function countGrams(texts: string[]): Sample {
  const holding = new Map<string, number>();
  for (const text of texts) for (const g of indexGrams(text)) holding.set(g, (holding.get(g) ?? 0) + 1);
  return { size: texts.length, holding };
}

/** A piece of the term that pg_trgm reads as one trigram of its index (as LIKE's literal text), and that trigram. */
interface TermGram {
  piece: string;
  gram: string;
}

/** A piece as a LIKE pattern's literal text: its wildcards and escape escaped. */
const literal = (piece: string) => piece.replace(/[\\%_]/g, '\\$&');

/**
 * The term's pieces of three characters that pg_trgm turns into exactly one trigram: three letters or
 * digits, a word's last two before the character that ends it in the term (`77@` is the trigram
 * `77 ` of every word ending in 77), or a word's first two after the character that starts it
 * (`_77` is ` 77`: `user_777777` is read by its words starting 77 and holding 777, not by every
 * 777). A letter outside ASCII is one to pg_trgm, so it neither ends nor starts a word here. Not the
 * term's own start: its trigram `  x` holds every word from x.
 */
export function termGrams(term: string): TermGram[] {
  const grams: TermGram[] = [];
  for (let i = 0; i + 3 <= term.length; i++) {
    const piece = term.slice(i, i + 3);
    if (/^[a-z0-9]{3}$/.test(piece)) grams.push({ piece, gram: piece });
    else if (/^[a-z0-9]{2}[^\p{L}\p{N}]$/u.test(piece)) grams.push({ piece: literal(piece), gram: `${piece.slice(0, 2)} ` });
    else if (/^[^\p{L}\p{N}][a-z0-9]{2}$/u.test(piece)) grams.push({ piece: literal(piece), gram: ` ${piece.slice(1)}` });
  }
  return grams;
}

/** PostgresSearch.rareGrams's answer by `sample` (countGrams of persons' search texts). */
export function rarestPieces(term: string, { size, holding }: Sample): string[] | null {
  const pieces = termGrams(term);
  // Too few persons to tell rare from common (sparse keys, an empty store): all trigrams.
  if (pieces.length === 0 || size < MIN_SAMPLE) return null;
  const hits = (g: TermGram) => holding.get(g.gram) ?? 0;
  // A common trigram beside rare ones only adds work to the index.
  const rare = (g: TermGram) => hits(g) <= size * RARE_SHARE;
  const byGram = new Map(pieces.map((g) => [g.gram, g]));
  // As rare in the sample, three of the term's characters tell more than a word's end or start's
  // two: the persons' sample says nothing of a customer id's `us_` and `_b4` (every customer's, one in 256).
  const boundary = (g: TermGram) => (g.gram.includes(' ') ? 1 : 0);
  const rarest = [...byGram.values()].sort((a, b) => hits(a) - hits(b) || boundary(a) - boundary(b)).filter((g, i) => i === 0 || rare(g)).slice(0, 3);
  return rare(rarest[0]!) ? rarest.map((g) => g.piece) : null;
}

/** The people search of one PostgreSQL control store, with its sample of the persons. */
export class PostgresSearch implements PeopleSearch {
  readonly joinsByIndex = true;
  readonly unownedCustomersIndexed = true;
  readonly personSearch = null;
  private kept: { at: number; sample: Promise<Sample> } | undefined;

  containsLower(column: string, term: string, grams?: readonly string[]): string {
    return containsLower(column, term, grams);
  }

  personMatches(p: string, term: string, grams?: readonly string[]): string {
    return `(${['email', 'external_id', 'name'].map((c) => containsLower(`${p}.${c}`, term, grams)).join(' OR ')})`;
  }

  /** The indexes answer every term: no candidates of the engine's own. */
  candidates(): Promise<Candidates> {
    return Promise.resolve(SCANNED);
  }

  // PostgreSQL keeps its trigram indexes with the rows it stores, deletes included.
  indexPersons(): void {}

  indexCustomers(): void {}

  forget(): void {}

  /**
   * The pieces of the term with its three rarest trigrams (the only ones pg_trgm indexes: of letters and
   * digits, padded at a word's end) by a sample of the persons, when the rarest is rare; else null:
   * all trigrams, as the LIKE of the whole term. Only the plan depends on the sample (kept a minute;
   * a stale one is as correct): the answer is checked on the term.
   */
  async rareGrams(sql: ControlSql, term: string): Promise<string[] | null> {
    return termGrams(term).length === 0 ? null : rarestPieces(term, await this.sample(sql));
  }

  private sample(sql: ControlSql): Promise<Sample> {
    if (this.kept && performance.now() - this.kept.at <= SAMPLE_MS) return this.kept.sample;
    const kept = {
      at: performance.now(),
      sample: sql.all(PERSON_SAMPLE).then((rows) => countGrams(rows.map((r) => r.t as string)), (err: unknown) => {
        if (this.kept === kept) this.kept = undefined;
        throw err;
      }),
    };
    this.kept = kept;
    return kept.sample;
  }
}
