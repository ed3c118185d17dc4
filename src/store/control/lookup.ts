// People lookup (GET /people): persons, and paying customers attributed to no person yet, whose
// email, external_id, name or customer id contains the term. Keyset-paginated on `sort_key`.

import { columnOf, type ControlDialect, type ControlSql, type ControlValue } from './store.js';

export interface LookupRow {
  sort_key: string;
  person_key: number | null;
  person_id: string | null;
  external_id: string | null;
  email: string | null;
  name: string | null;
  visitor_key: number | null;
  customer_ids: string[];
  link_state: string | null;
}

// A customer belongs to its person, else to the person its visitor is linked to now (docs/criteria.md);
// a deferred customer whose visitor got linked reads as linked even before the listener ran.
const LINKED_VISITOR = 'LEFT JOIN visitors v ON v.workspace_id = $1 AND v.visitor_key = c.visitor_key AND v.person_key IS NOT NULL';
const OWNER = 'coalesce(c.person_key, v.person_key)';
const LINK_STATE = "CASE WHEN c.link_state = 'deferred' AND v.person_key IS NOT NULL THEN 'linked' ELSE c.link_state END";

/** A person's place in the pages: customers ('c' and their id) come first, then persons by key. */
const SORT_KEY = (personKey: string) => `'p' || lpad(CAST(${personKey} AS VARCHAR), 20, '0')`;
const MAX_KEY = 2n ** 63n - 1n;

/**
 * A key that every person after the cursor `after` (a sort key) exceeds: the indexed side of the
 * exact comparison of sort keys, which stays beside it for any other cursor text.
 */
function personKeyBound(after: string): bigint {
  const digits = /^p(\d{20})$/.exec(after)?.[1];
  if (digits === undefined) return 0n;
  const key = BigInt(digits);
  return key < MAX_KEY ? key : MAX_KEY;
}

/** Past this many index rows under its rarest trigram a term is common: the search column (the customers) is scanned. */
const COMMON_GRAM = 20_000;
/** Past this many candidates (persons under all three rarest trigrams) the scan is cheaper than checking each. */
const MAX_CANDIDATES = 2_000;
/**
 * The customers' threshold of COMMON_GRAM: intersecting their text keys costs more than the
 * persons' integers, and scanning them less (bench/RESULTS.md, "People lookup").
 */
const COMMON_CUSTOMER_GRAM = 2_000;

/** The candidates of the trigram indexes, by side; null: that side is scanned. */
interface Candidates {
  persons: number[] | null;
  customers: string[] | null;
}

const SCANNED: Candidates = { persons: null, customers: null };

/**
 * The persons and the customers whose search texts hold the term's three rarest trigrams (by each
 * index's counts), found through the trigram indexes (DuckDB) in two statements for both sides. A
 * side is scanned (null) where the engine keeps no index, the term has no trigram (under three
 * characters, or a line feed: matched column by column), or it is too common for the index to pay.
 * The page's statement checks the candidates for the whole term.
 */
async function candidates(store: ControlSql, ws: string, term: string): Promise<Candidates> {
  const grams = store.dialect.personGrams;
  if (!grams || term === '' || term.includes('\n')) return SCANNED;
  const counts = await store.all(grams.counts, [ws, term]);
  if (counts.length === 0) return SCANNED;
  const rarest = (side: 'persons' | 'customers', common: number): string[] | null => {
    const sorted = [...counts].sort((x, y) => Number(x[side]) - Number(y[side]) || ((x.gram as string) < (y.gram as string) ? -1 : 1));
    if (Number(sorted[0]![side]) > common) return null;
    const [a, b = a, c = b] = sorted.slice(0, 3).map((r) => r.gram as string);
    return [a!, b!, c!];
  };
  const [persons, customers] = [rarest('persons', COMMON_GRAM), rarest('customers', COMMON_CUSTOMER_GRAM)];
  if (persons === null && customers === null) return SCANNED;
  const rows = await store.all(grams.candidates(persons !== null, customers !== null), [ws, ...(persons ?? []), ...(customers ?? [])]);
  const personKeys = rows.flatMap((r) => (r.person_key === null ? [] : [Number(r.person_key)]));
  const customerIds = rows.flatMap((r) => (r.customer_id === null ? [] : [r.customer_id as string]));
  return {
    persons: persons === null || personKeys.length > MAX_CANDIDATES ? null : personKeys,
    customers: customers === null || customerIds.length > MAX_CANDIDATES ? null : customerIds,
  };
}

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
const samples = new WeakMap<ControlSql, { at: number; sample: Promise<Sample> }>();

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
function countGrams(texts: string[]): Sample {
  const holding = new Map<string, number>();
  for (const text of texts) for (const g of indexGrams(text)) holding.set(g, (holding.get(g) ?? 0) + 1);
  return { size: texts.length, holding };
}

/** A piece of the term that pg_trgm reads as one trigram of its index, and that trigram. */
interface TermGram {
  piece: string;
  gram: string;
}

/**
 * The term's pieces of three characters that pg_trgm turns into exactly one trigram: three letters or
 * digits, or a word's last two before the character that ends it in the term (`77@` is the trigram
 * `77 ` of every word ending in 77). Not a word's start: its trigram `  x` holds every word from x.
 */
function termGrams(term: string): TermGram[] {
  const grams: TermGram[] = [];
  for (let i = 0; i + 3 <= term.length; i++) {
    const piece = term.slice(i, i + 3);
    if (/^[a-z0-9]{3}$/.test(piece)) grams.push({ piece, gram: piece });
    // LIKE's wildcards and escape would not end the word; a letter outside ASCII is one to pg_trgm.
    else if (/^[a-z0-9]{2}[^\p{L}\p{N}%_\\]$/u.test(piece)) grams.push({ piece, gram: `${piece.slice(0, 2)} ` });
  }
  return grams;
}

/**
 * The pieces of the term with its three rarest trigrams (the only ones pg_trgm indexes: of letters and
 * digits, padded at a word's end) by a sample of the persons, when the engine searches its trigram
 * indexes by them (PostgreSQL) and the rarest is rare; else null: all trigrams, as the LIKE of the
 * whole term. Only the plan depends on the sample (kept a minute per store; a stale one is as
 * correct): the answer is checked on the term.
 */
async function rareGrams(store: ControlSql, term: string): Promise<string[] | null> {
  const sql = store.dialect.personSample;
  if (!sql) return null;
  const pieces = termGrams(term);
  if (pieces.length === 0) return null;
  let kept = samples.get(store);
  if (!kept || performance.now() - kept.at > SAMPLE_MS) {
    const sample = store.all(sql).then((rows) => countGrams(rows.map((r) => r.t as string)), (err: unknown) => {
      samples.delete(store);
      throw err;
    });
    kept = { at: performance.now(), sample };
    samples.set(store, kept);
  }
  const { size, holding } = await kept.sample;
  // Too few persons to tell rare from common (sparse keys, an empty store): all trigrams.
  if (size < MIN_SAMPLE) return null;
  const hits = (g: TermGram) => holding.get(g.gram) ?? 0;
  // A common trigram beside rare ones only adds work to the index.
  const rare = (g: TermGram) => hits(g) <= size * RARE_SHARE;
  const byGram = new Map(pieces.map((g) => [g.gram, g]));
  const rarest = [...byGram.values()].sort((a, b) => hits(a) - hits(b)).filter((g, i) => i === 0 || rare(g)).slice(0, 3);
  return rare(rarest[0]!) ? rarest.map((g) => g.piece) : null;
}

/**
 * Matching persons and customers first (PostgreSQL: its trigram indexes; DuckDB: the candidates of
 * its trigram indexes, checked here, or the search column and a scan of the customers for a common
 * term), then the page of them; then, by the page's keys, its persons and their customers only:
 * nothing reads every customer's owner.
 */
export async function lookupPeople(store: ControlSql, ws: string, q: string, after: string, limit: number): Promise<LookupRow[]> {
  const d: ControlDialect = store.dialect;
  const term = q.toLowerCase();
  const grams = await rareGrams(store, term);
  const found = await candidates(store, ws, term);
  // Neither index holds a candidate: nothing matches (the persons found by a customer id are its owners).
  if (found.persons?.length === 0 && found.customers?.length === 0) return [];
  const params: ControlValue[] = [ws, term, after, limit, personKeyBound(after)];
  const param = (value: ControlValue) => `$${params.push(value)}`;
  const gramParams = grams?.map(param);
  const has = (column: string) => d.containsLower(column, '$2', gramParams);
  // Every person contains the empty term, even one without email, external_id and name.
  const personMatches = term === '' ? 'TRUE' : d.personMatches('p', '$2', gramParams);
  // The candidates are checked apart from the page's bounds and order, which kept DuckDB from
  // reading them by their keys (a scan of the persons instead).
  const personsHit = found.persons === null
    ? `SELECT p.person_key FROM persons p WHERE p.workspace_id = $1 AND p.person_key > $5 AND ${SORT_KEY('p.person_key')} > $3 AND ${personMatches}`
    : `SELECT p.person_key FROM person_checked p WHERE p.person_key > $5 AND ${SORT_KEY('p.person_key')} > $3`;
  // No candidate: no row read (DuckDB scans a key column for an empty key list).
  const personChecked = found.persons === null ? ''
    : `person_checked AS MATERIALIZED (SELECT p.person_key FROM ${found.persons.length === 0 ? 'persons p WHERE FALSE AND'
      : `${d.byKeys('persons', 'person_key', param(columnOf(found.persons)), '$1', 'person_key, email, external_id, name, search')} AS p WHERE`} ${personMatches}),`;
  // Where the customers without an owner have trigram indexes of their own, they are read by them,
  // not every customer whose email holds the term (for a page that may hold none); the matches by
  // id apart (the owners they give).
  const unownedApart = d.unownedCustomersIndexed;
  const customerMatches = `(${has('c.customer_id')} OR ${has('c.email')})`;
  const customersFrom = found.customers === null ? 'payment_customers c WHERE c.workspace_id = $1 AND'
    : found.customers.length === 0 ? 'payment_customers c WHERE FALSE AND'
      : `${d.byKeys('payment_customers', 'customer_id', param(columnOf(found.customers)), '$1',
        'customer_id, email, person_key, visitor_key, link_state', 'text')} AS c WHERE`;
  // A rare term's matches are all read first: PostgreSQL, misjudging how many the trigrams and
  // strpos() keep, walked a million persons in key order for the first 51 (bench/RESULTS.md, "People lookup").
  const personSide = grams === null ? `persons_hit AS (${personsHit} ORDER BY person_key LIMIT $4)`
    : `person_matches AS MATERIALIZED (${personsHit}),
    persons_hit AS (SELECT person_key FROM person_matches ORDER BY person_key LIMIT $4)`;
  const page = await store.all(`WITH
    -- The matching customers, read once (on DuckDB its index's candidates by their ids, or one scan
    -- of the customers; on PostgreSQL those matching by id only). Each side's first page only. On
    -- PostgreSQL a common term walks the persons in key order and stops, a rare one reads its index
    -- matches; a customer's visitor is read for the matches only.
    matched AS MATERIALIZED (${unownedApart
      ? `SELECT c.customer_id, c.person_key, c.visitor_key, TRUE AS by_id FROM payment_customers c WHERE c.workspace_id = $1 AND ${has('c.customer_id')}`
      : `SELECT c.customer_id, c.email, c.person_key, c.visitor_key, c.link_state, ${has('c.customer_id')} AS by_id FROM ${customersFrom} ${customerMatches}`}
    ),
    ${personChecked}
    -- A linked customer has an owner: its person, or its visitor's (a link is never undone); only
    -- the others' visitors are read.
    unowned_hit AS (
      SELECT c.customer_id, c.email, c.visitor_key, c.link_state
      FROM ${unownedApart ? `payment_customers c WHERE c.workspace_id = $1 AND ${customerMatches} AND` : 'matched c WHERE'}
        c.person_key IS NULL AND c.link_state <> 'linked' AND 'c' || c.customer_id > $3
        AND NOT EXISTS (SELECT 1 FROM visitors v WHERE v.workspace_id = $1 AND v.visitor_key = c.visitor_key AND v.person_key IS NOT NULL)
      ORDER BY 'c' || c.customer_id LIMIT $4
    ),
    ${personSide},
    owners_hit AS (
      SELECT DISTINCT o.owner FROM (SELECT ${OWNER} AS owner FROM matched c ${LINKED_VISITOR} WHERE c.by_id) o
      WHERE o.owner > $5 AND ${SORT_KEY('o.owner')} > $3 ORDER BY o.owner LIMIT $4
    ),
    keys AS (
      SELECT ${SORT_KEY('m.person_key')} AS sort_key, m.person_key, CAST(NULL AS VARCHAR) AS customer_id
      FROM (SELECT person_key FROM persons_hit UNION SELECT owner FROM owners_hit) m
      UNION ALL
      SELECT 'c' || customer_id, NULL, customer_id FROM unowned_hit
    ),
    page AS (SELECT sort_key, person_key, customer_id FROM keys ORDER BY sort_key LIMIT $4)
    SELECT page.sort_key, page.person_key, h.email, h.visitor_key, h.customer_id, h.link_state
    FROM page LEFT JOIN unowned_hit h ON h.customer_id = page.customer_id
    ORDER BY page.sort_key`, params);
  const people = await pagePersons(store, ws, page.flatMap((r) => (r.person_key === null ? [] : [Number(r.person_key)])));
  return page.flatMap((r): LookupRow[] => {
    if (r.person_key !== null) {
      const person = people.get(Number(r.person_key));
      return person ? [{ sort_key: r.sort_key as string, ...person }] : [];
    }
    return [{
      sort_key: r.sort_key as string, person_key: null, person_id: null, external_id: null, email: (r.email as string | null) ?? null, name: null,
      visitor_key: r.visitor_key === null ? null : Number(r.visitor_key), customer_ids: [r.customer_id as string], link_state: r.link_state as string,
    }];
  });
}

/**
 * The page's persons with their customers: their own, and those of their visitors (disjoint), each
 * table read by the page's keys (a statement of its own, so that DuckDB reads them by a key list).
 */
async function pagePersons(store: ControlSql, ws: string, personKeys: number[]): Promise<Map<number, Omit<LookupRow, 'sort_key'>>> {
  if (personKeys.length === 0) return new Map();
  const d = store.dialect;
  const rows = await store.all(`WITH
    own AS (SELECT * FROM ${d.byKeys('payment_customers', 'person_key', '$2', '$1', 'customer_id, person_key, visitor_key, link_state')} AS c),
    linked_visitors AS (SELECT * FROM ${d.byKeys('visitors', 'person_key', '$2', '$1', 'visitor_key, person_key')} AS v),
    owned_customers AS (
      SELECT c.customer_id, c.person_key AS owner, ${LINK_STATE} AS link_state FROM own c ${LINKED_VISITOR}
      UNION ALL
      SELECT c.customer_id, v.person_key, CASE WHEN c.link_state = 'deferred' THEN 'linked' ELSE c.link_state END
      FROM linked_visitors v JOIN payment_customers c ON c.workspace_id = $1 AND c.visitor_key = v.visitor_key AND c.person_key IS NULL
    ),
    owned AS (
      SELECT owner, ${d.listAgg('customer_id')} AS customer_ids,
        CASE WHEN bool_or(link_state = 'linked') THEN 'linked' WHEN bool_or(link_state = 'email_matched') THEN 'email_matched'
          ELSE min(link_state) END AS link_state
      FROM owned_customers GROUP BY owner
    )
    SELECT p.person_key, p.person_id, p.external_id, p.email, p.name, coalesce(o.customer_ids, ${d.listOf(null)}) AS customer_ids, o.link_state
    FROM ${d.byKeys('persons', 'person_key', '$2', '$1', 'person_key, person_id, external_id, email, name')} AS p
      LEFT JOIN owned o ON o.owner = p.person_key`,
  [ws, columnOf(personKeys)]);
  return new Map(rows.map((r) => [Number(r.person_key), {
    person_key: Number(r.person_key),
    person_id: r.person_id as string,
    external_id: (r.external_id as string | null) ?? null,
    email: (r.email as string | null) ?? null,
    name: (r.name as string | null) ?? null,
    visitor_key: null,
    customer_ids: (r.customer_ids as string[] | null) ?? [],
    link_state: (r.link_state as string | null) ?? null,
  }]));
}
