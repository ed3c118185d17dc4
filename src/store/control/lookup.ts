// People lookup (GET /people): persons, and paying customers attributed to no person yet, whose
// email, external_id, name or customer id contains the term. Keyset-paginated on `sort_key`.

import { fewCandidates, fewCandidatesPage } from './lookup-few.js';
import { pagePerson, type PagePerson, pagePersonsByKeys } from './lookup-persons.js';
import { aliasOf, personsByAlias } from './merges.js';
import type { Candidates } from './search.js';
import { columnOf, type ControlRow, type ControlSql, type ControlValue } from './store.js';

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
const LINK_STATE = "CASE WHEN c.link_state = 'deferred' AND v.person_key IS NOT NULL THEN 'linked' ELSE c.link_state END";
const WORKSPACE_VISITORS = '(SELECT visitor_key, person_key FROM visitors WHERE workspace_id = $1)';
const LINKED_VISITOR = (visitors: string) => `LEFT JOIN ${visitors} v ON v.visitor_key = c.visitor_key AND v.person_key IS NOT NULL`;
const OWNER = 'coalesce(c.person_key, v.person_key)';

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

/**
 * Matching persons and customers first (PostgreSQL: its trigram indexes; DuckDB: the candidates of
 * its trigram indexes, checked here, or the search column and a scan of the customers for a common
 * term), then the page of them; then, by the page's keys, its persons and their customers only:
 * nothing reads every customer's owner.
 */
export async function lookupPeople(store: ControlSql, ws: string, q: string, after: string, limit: number): Promise<LookupRow[]> {
  const { search } = store;
  const term = q.toLowerCase();
  const found = await search.candidates(store, ws, term);
  const { page, people } = search.lower && fewCandidates(found) ? await fewCandidatesPage(store, ws, q, term, after, limit, found, search.lower)
    : await statementPage(store, ws, q, term, after, limit, found);
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

/** The page by the lookup's statement, then its persons. */
async function statementPage(store: ControlSql, ws: string, q: string, term: string, after: string, limit: number, found: Candidates,
): Promise<{ page: ControlRow[]; people: Map<number, PagePerson> }> {
  const { search } = store;
  const grams = await search.rareGrams(store, term);
  // An identifier of a person merged away finds the person it names now (exactly, not as a part):
  // read in the lookup's statement where the engine joins by its indexes, else by their keys first.
  const aliased: Aliased = q === '' ? [] : search.joinsByIndex ? { q } : await personsByAlias(store, ws, q);
  // Neither index holds a candidate: nothing matches (the persons found by a customer id are its owners).
  if (found.persons?.length === 0 && found.customers?.length === 0 && Array.isArray(aliased) && aliased.length === 0) return { page: [], people: new Map() };
  const page = await pageOfStatement(store, ws, term, after, limit, grams, found, aliased);
  const people = await (search.joinsByIndex ? pagePersonsJoined : pagePersonsByKeys)(store, ws, page.flatMap((r) => (r.person_key === null ? [] : [Number(r.person_key)])));
  return { page, people };
}

/** The persons an identifier merged away names (their keys), or the term to read them by in the lookup's statement. */
type Aliased = number[] | { q: string };

/** The page's keys (persons by key, customers without an owner whole) by the lookup's statement. */
async function pageOfStatement(store: ControlSql, ws: string, term: string, after: string, limit: number, grams: string[] | null, found: Candidates, aliased: Aliased,
): Promise<ControlRow[]> {
  const { dialect: d, search } = store;
  const params: ControlValue[] = [ws, term, after, limit, personKeyBound(after)];
  const param = (value: ControlValue) => `$${params.push(value)}`;
  const noAliases = Array.isArray(aliased) && aliased.length === 0;
  // Bound only when the statement reads them (an unused parameter is an error).
  const aliasPersons = noAliases ? '' : Array.isArray(aliased) ? d.byKeys('persons', 'person_key', param(columnOf(aliased)), '$1', 'person_key')
    : `(SELECT person_key FROM persons WHERE workspace_id = $1 AND person_key IN (SELECT person_key FROM person_aliases
      WHERE ${aliasOf('$1', param(aliased.q.toLowerCase()), param(aliased.q))}))`;
  const aliasHit = noAliases ? '' : `
    alias_hit AS (SELECT a.person_key FROM ${aliasPersons} AS a WHERE a.person_key > $5 AND ${SORT_KEY('a.person_key')} > $3),`;
  // The matched customers' visitors (their links): of the candidates, read by their keys (a join
  // reads every visitor on DuckDB); else the workspace's.
  const candidateVisitors = found.customers === null ? null : await visitorsOfCustomers(store, ws, found.customers);
  const visitorsOf = candidateVisitors === null ? WORKSPACE_VISITORS
    : candidateVisitors.length === 0 ? '(SELECT visitor_key, person_key FROM visitors WHERE FALSE)'
      : d.byKeys('visitors', 'visitor_key', param(columnOf(candidateVisitors)), '$1', 'visitor_key, person_key');
  const gramParams = grams?.map(param);
  const has = (column: string) => search.containsLower(column, '$2', gramParams);
  // Every person contains the empty term, even one without email, external_id and name.
  const personMatches = term === '' ? 'TRUE' : search.personMatches('p', '$2', gramParams);
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
  const unownedApart = search.unownedCustomersIndexed;
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
  return store.all(`WITH
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
        AND NOT EXISTS (SELECT 1 FROM ${visitorsOf} v WHERE v.visitor_key = c.visitor_key AND v.person_key IS NOT NULL)
      ORDER BY 'c' || c.customer_id LIMIT $4
    ),
    ${personSide},
${aliasHit}
    owners_hit AS (
      SELECT DISTINCT o.owner FROM (SELECT ${OWNER} AS owner FROM matched c ${LINKED_VISITOR(visitorsOf)} WHERE c.by_id) o
      WHERE o.owner > $5 AND ${SORT_KEY('o.owner')} > $3 ORDER BY o.owner LIMIT $4
    ),
    keys AS (
      SELECT ${SORT_KEY('m.person_key')} AS sort_key, m.person_key, CAST(NULL AS VARCHAR) AS customer_id
      FROM (SELECT person_key FROM persons_hit UNION SELECT owner FROM owners_hit${noAliases ? '' : ' UNION SELECT person_key FROM alias_hit'}) m
      UNION ALL
      SELECT 'c' || customer_id, NULL, customer_id FROM unowned_hit
    ),
    page AS (SELECT sort_key, person_key, customer_id FROM keys ORDER BY sort_key LIMIT $4)
    SELECT page.sort_key, page.person_key, h.email, h.visitor_key, h.customer_id, h.link_state
    FROM page LEFT JOIN unowned_hit h ON h.customer_id = page.customer_id
    ORDER BY page.sort_key`, params);
}

/** The visitors of these customers (by id). */
async function visitorsOfCustomers(store: ControlSql, ws: string, customerIds: string[]): Promise<number[]> {
  if (customerIds.length === 0) return [];
  const rows = await store.all(`SELECT DISTINCT visitor_key FROM ${store.dialect.byKeys('payment_customers', 'customer_id', '$2', '$1', 'customer_id, visitor_key', 'text')} AS c
    WHERE visitor_key IS NOT NULL`, [ws, columnOf(customerIds)]);
  return rows.map((r) => Number(r.visitor_key));
}

/**
 * The page's persons with their customers, in one statement that joins them by the engine's indexes
 * (PostgreSQL: nested loops over the page's keys).
 */
async function pagePersonsJoined(store: ControlSql, ws: string, personKeys: number[]): Promise<Map<number, PagePerson>> {
  if (personKeys.length === 0) return new Map();
  const d = store.dialect;
  const rows = await store.all(`WITH
    own AS (SELECT * FROM ${d.byKeys('payment_customers', 'person_key', '$2', '$1', 'customer_id, person_key, visitor_key, link_state')} AS c),
    linked_visitors AS (SELECT * FROM ${d.byKeys('visitors', 'person_key', '$2', '$1', 'visitor_key, person_key')} AS v),
    owned_customers AS (
      SELECT c.customer_id, c.person_key AS owner, ${LINK_STATE} AS link_state FROM own c ${LINKED_VISITOR(WORKSPACE_VISITORS)}
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
  return new Map(rows.map((r) => [Number(r.person_key),
    pagePerson(r, (r.customer_ids as string[] | null) ?? [], (r.link_state as string | null) ?? null)]));
}
