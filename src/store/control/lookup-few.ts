// People lookup of a term with few candidates (an exact email, external id or customer id; a rare
// substring): the candidates of the engine's own trigram indexes read by their keys in one
// statement, checked for the term here, and the page assembled here as lookup.ts's statement
// assembles it. That statement's planning and joins cost DuckDB several times these key reads
// (bench/RESULTS.md, "People lookup").

import { type PagePerson, pagePersonsByKeys, personRowsByKeys, personsOf, visitorParts } from './lookup-persons.js';
import { aliasOf } from './merges.js';
import type { Candidates } from './search.js';
import { columnOf, type ControlRow, type ControlSql, type ControlValue } from './store.js';

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
 * have no owner and are not linked. One statement reads the aliases and the candidates, with, when
 * they are few enough to be the page, the candidate persons' customers and visitors; a second what
 * those persons own through their visitors and the links of the matched customers' visitors; a person
 * of the page read by neither (an owner, an alias) is read after, as lookup.ts reads a page's.
 */
export async function fewCandidatesPage(
  store: ControlSql, ws: string, q: string, term: string, after: string, limit: number, found: { persons: number[]; customers: string[] },
  lower: (value: string) => string,
): Promise<FewCandidatesPage> {
  const d = store.dialect;
  const params: ControlValue[] = [ws];
  const param = (value: ControlValue) => `$${params.push(value)}`;
  // The candidate persons are all the page may hold of them: read whole (kinds p, c, v).
  const whole = found.persons.length > 0 && found.persons.length <= limit;
  const parts = [
    ...found.persons.length === 0 ? [] : [whole ? personRowsByKeys(d, '$1', param(columnOf(found.persons)))
      : `SELECT 'p' AS kind, person_key, person_id AS id, external_id, email, name, CAST(NULL AS VARCHAR) AS link_state, CAST(NULL AS BIGINT) AS visitor_key
      FROM ${d.byKeys('persons', 'person_key', param(columnOf(found.persons)), '$1', 'person_key, person_id, external_id, email, name')} AS p`],
    ...found.customers.length === 0 ? [] : [`SELECT 'm' AS kind, person_key, customer_id AS id, CAST(NULL AS VARCHAR) AS external_id, email,
        CAST(NULL AS VARCHAR) AS name, link_state, visitor_key
      FROM ${d.byKeys('payment_customers', 'customer_id', param(columnOf(found.customers)), '$1', 'customer_id, email, person_key, visitor_key, link_state', 'text')} AS c`],
    ...q === '' ? [] : [`SELECT 'a' AS kind, person_key, CAST(NULL AS VARCHAR) AS id, CAST(NULL AS VARCHAR) AS external_id, CAST(NULL AS VARCHAR) AS email,
        CAST(NULL AS VARCHAR) AS name, CAST(NULL AS VARCHAR) AS link_state, CAST(NULL AS BIGINT) AS visitor_key
      FROM person_aliases WHERE ${aliasOf('$1', param(q.toLowerCase()), param(q))}`],
  ];
  const rows = parts.length === 0 ? [] : await store.all(parts.join(' UNION ALL '), params);
  const holds = (value: unknown) => typeof value === 'string' && lower(value).includes(term);
  const key = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  const persons = rows.filter((r) => r.kind === 'p' && (holds(r.email) || holds(r.external_id) || holds(r.name)));
  const customers = rows.filter((r) => r.kind === 'm' && (holds(r.id) || holds(r.email)));
  // The links of the visitors of the matched customers without a person (such a customer follows
  // its visitor's person), with what the persons read whole own through their visitors.
  const visitorKeys = [...new Set(customers.flatMap((c) => (c.person_key !== null || c.visitor_key === null ? [] : [Number(c.visitor_key)])))];
  const read = whole ? rows.filter((r) => r.kind === 'p' || r.kind === 'c' || r.kind === 'v') : [];
  const secondParams: ControlValue[] = [ws];
  const secondParts = visitorParts(d, '$1', read, (value) => `$${secondParams.push(value)}`, visitorKeys);
  const second = secondParts.length === 0 ? [] : await store.all(secondParts.join(' UNION ALL '), secondParams);
  const linked = new Map(second.filter((r) => r.kind === 'vl').map((v) => [Number(v.visitor_key), Number(v.person_key)]));
  const ownerOf = (c: ControlRow) => key(c.person_key) ?? (c.visitor_key === null ? null : linked.get(Number(c.visitor_key)) ?? null);
  const afterCursor = (sortKey: string) => byBytes(sortKey, after) > 0;
  const firstPage = <T extends { sort_key: string }>(items: T[]) => items.filter((i) => afterCursor(i.sort_key)).sort((a, b) => byBytes(a.sort_key, b.sort_key)).slice(0, limit);
  const personKeys = new Set([
    ...rows.filter((r) => r.kind === 'a').map((r) => Number(r.person_key)),
    ...persons.map((p) => Number(p.person_key)),
    ...customers.filter((c) => holds(c.id)).flatMap((c) => { const owner = ownerOf(c); return owner === null ? [] : [owner]; }),
  ]);
  const unowned = customers.filter((c) => c.person_key === null && c.link_state !== 'linked' && ownerOf(c) === null).map((c): PageKey => ({
    sort_key: `c${c.id as string}`, person_key: null, customer_id: c.id as string,
    email: (c.email as string | null) ?? null, visitor_key: key(c.visitor_key), link_state: c.link_state as string,
  }));
  const owners = [...personKeys].map((k): PageKey => ({ sort_key: sortKeyOf(k), person_key: k, customer_id: null, email: null, visitor_key: null, link_state: null }));
  const page = firstPage([...firstPage(owners), ...firstPage(unowned)]);
  const people = personsOf(read, second);
  const missing = page.flatMap((r) => (r.person_key === null || people.has(r.person_key) ? [] : [r.person_key]));
  for (const [k, person] of await pagePersonsByKeys(store, ws, missing)) people.set(k, person);
  return { page, people };
}
