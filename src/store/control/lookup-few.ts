// People lookup of a term with few candidates (an exact email, external id or customer id; a rare
// substring): the candidates of the engine's own trigram indexes read by their keys in one
// statement, checked for the term here, and the page assembled here as lookup.ts's statement
// assembles it. That statement's planning and joins cost DuckDB several times these key reads
// (bench/RESULTS.md, "People lookup").

import { followUp, keysParam, type PagePerson, pagePersonsByKeys, personRowsByKeys, personsOf } from './lookup-persons.js';
import { aliasOf } from './merges.js';
import type { Candidates } from './search.js';
import { type ControlRow, type ControlSql, type ControlValue } from './store.js';

/**
 * A row of the page before its persons are read, as lookup.ts's statement gives it: a person by key,
 * or a customer without an owner (its id, email, visitor and link state).
 */
export interface PageKey {
  sort_key: string;
  person_key: number | null;
  customer_id: string | null;
  email: string | null;
  visitor_key: number | null;
  link_state: string | null;
}

/** Whether both sides have candidates (the engine's indexes give none past a few thousand): read by their keys and checked here. */
export const fewCandidates = (found: Candidates): found is { persons: number[]; customers: string[] } =>
  found.persons !== null && found.customers !== null;

/** Text order as the engines compare text (by UTF-8 bytes), not by UTF-16 units. */
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const sortKeyOf = (personKey: number) => `p${String(personKey).padStart(20, '0')}`;

/** The page of a term with few candidates: its keys, and its persons with their customers. */
export interface FewCandidatesPage {
  page: PageKey[];
  people: Map<number, PagePerson>;
}

/**
 * The page (sorted, at most `limit` keys, after the cursor `after`) of the term `q` (`term`
 * lowercased) among these candidates, as lookup.ts's statement finds it: persons holding the term,
 * and the persons an identifier merged away names (q exactly); the owners of customers whose id
 * holds it (the customer's person, else its visitor's); customers holding it by id or email that
 * have no owner and are not linked. One statement reads the aliases, the candidates and, for a few
 * candidate customers, the links of their visitors, with, when the candidate persons are few enough
 * to be the page, what those persons own (personRowsByKeys); a second what that one left (followUp),
 * only when it left something. A person of the page read by none of these (an owner, an alias) is
 * read after (pagePersonsByKeys). An exact email or external id: one statement; a customer id: two.
 */
export async function fewCandidatesPage(
  store: ControlSql, ws: string, q: string, term: string, after: string, limit: number, found: { persons: number[]; customers: string[] },
  lower: (value: string) => string,
): Promise<FewCandidatesPage> {
  const d = store.dialect;
  const params: ControlValue[] = [ws];
  const param = (value: ControlValue) => `$${params.push(value)}`;
  // The candidate persons are all the page may hold of them: read whole.
  const whole = found.persons.length > 0 && found.persons.length <= limit;
  const persons = found.persons.length === 0 ? null : keysParam(found.persons, param);
  const customers = found.customers.length === 0 ? null : keysParam(found.customers, param);
  const parts = [
    ...persons === null ? [] : [whole ? personRowsByKeys(d, '$1', persons)
      : `SELECT 'p' AS kind, person_key, person_id AS id, external_id, email, name, CAST(NULL AS VARCHAR) AS link_state, CAST(NULL AS BIGINT) AS visitor_key
      FROM ${d.byKeys('persons', 'person_key', persons, '$1', 'person_key, person_id, external_id, email, name')} AS p`],
    ...customers === null ? [] : [`SELECT 'm' AS kind, person_key, customer_id AS id, CAST(NULL AS VARCHAR) AS external_id, email,
        CAST(NULL AS VARCHAR) AS name, link_state, visitor_key
      FROM ${d.byKeys('payment_customers', 'customer_id', customers, '$1', 'customer_id, email, person_key, visitor_key, link_state', 'text')} AS c`],
    // The links of a few candidate customers' visitors (a customer without a person follows its
    // visitor's); of more, read after by their keys (as personRowsByKeys's visitors' customers).
    ...customers === null || typeof customers === 'string' ? [] : [`SELECT 'vl' AS kind, person_key, CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR),
        CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), visitor_key
      FROM visitors WHERE workspace_id = $1 AND person_key IS NOT NULL AND visitor_key IN (SELECT visitor_key
        FROM ${d.byKeys('payment_customers', 'customer_id', customers, '$1', 'customer_id, person_key, visitor_key', 'text')} AS c WHERE person_key IS NULL)`],
    ...q === '' ? [] : [`SELECT 'a' AS kind, person_key, CAST(NULL AS VARCHAR) AS id, CAST(NULL AS VARCHAR) AS external_id, CAST(NULL AS VARCHAR) AS email,
        CAST(NULL AS VARCHAR) AS name, CAST(NULL AS VARCHAR) AS link_state, CAST(NULL AS BIGINT) AS visitor_key
      FROM person_aliases WHERE ${aliasOf('$1', param(q.toLowerCase()), param(q))}`],
  ];
  const first = parts.length === 0 ? [] : await store.all(parts.join(' UNION ALL '), params);
  // What the persons read whole still need, with the links of more candidate customers' visitors.
  const read = whole ? first.filter((r) => ['p', 'c', 'v', 'vc'].includes(r.kind as string)) : [];
  const customerVisitors = typeof customers !== 'string' ? []
    : first.flatMap((c) => (c.kind === 'm' && c.person_key === null && c.visitor_key !== null ? [Number(c.visitor_key)] : []));
  const rows = [...first, ...await followUp(store, ws, read, typeof persons === 'string', customerVisitors)];
  const holds = (value: unknown) => typeof value === 'string' && lower(value).includes(term);
  const key = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  const matched = rows.filter((r) => r.kind === 'p' && (holds(r.email) || holds(r.external_id) || holds(r.name)));
  const matchedCustomers = rows.filter((r) => r.kind === 'm' && (holds(r.id) || holds(r.email)));
  const linked = new Map(rows.filter((r) => r.kind === 'vl').map((v) => [Number(v.visitor_key), Number(v.person_key)]));
  const ownerOf = (c: ControlRow) => key(c.person_key) ?? (c.visitor_key === null ? null : linked.get(Number(c.visitor_key)) ?? null);
  const afterCursor = (sortKey: string) => byBytes(sortKey, after) > 0;
  const firstPage = <T extends { sort_key: string }>(items: T[]) => items.filter((i) => afterCursor(i.sort_key)).sort((a, b) => byBytes(a.sort_key, b.sort_key)).slice(0, limit);
  const personKeys = new Set([
    ...rows.filter((r) => r.kind === 'a').map((r) => Number(r.person_key)),
    ...matched.map((p) => Number(p.person_key)),
    ...matchedCustomers.filter((c) => holds(c.id)).flatMap((c) => { const owner = ownerOf(c); return owner === null ? [] : [owner]; }),
  ]);
  const unowned = matchedCustomers.filter((c) => c.person_key === null && c.link_state !== 'linked' && ownerOf(c) === null).map((c): PageKey => ({
    sort_key: `c${c.id as string}`, person_key: null, customer_id: c.id as string,
    email: (c.email as string | null) ?? null, visitor_key: key(c.visitor_key), link_state: c.link_state as string,
  }));
  const owners = [...personKeys].map((k): PageKey => ({ sort_key: sortKeyOf(k), person_key: k, customer_id: null, email: null, visitor_key: null, link_state: null }));
  const page = firstPage([...firstPage(owners), ...firstPage(unowned)]);
  // The persons read whole, then the page's persons not read whole.
  const people = personsOf(whole ? rows : []);
  const missing = page.flatMap((r) => (r.person_key === null || people.has(r.person_key) ? [] : [r.person_key]));
  for (const [k, person] of await pagePersonsByKeys(store, ws, missing)) people.set(k, person);
  return { page, people };
}
