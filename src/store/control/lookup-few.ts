// People lookup of a term with few candidates (an exact email, external id or customer id; a rare
// substring): the candidates of the engine's own trigram indexes read by their keys in one
// statement, checked for the term here, and the page assembled here as lookup.ts's statement
// assembles it. That statement's planning and joins cost DuckDB several times these key reads
// (bench/RESULTS.md, "People lookup").

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

/**
 * The page's keys (sorted, at most `limit`, after the cursor `after`) of the term `term`
 * (lowercased) among these candidates, as lookup.ts's statement finds them: persons holding the
 * term, and `aliased` (the persons an identifier merged away names); the owners of customers whose
 * id holds it (the customer's person, else its visitor's); customers holding it by id or email
 * that have no owner and are not linked.
 */
export async function fewCandidatesPage(
  store: ControlSql, ws: string, term: string, after: string, limit: number, found: { persons: number[]; customers: string[] }, aliased: number[],
  lower: (value: string) => string,
): Promise<PageKey[]> {
  const d = store.dialect;
  const params: ControlValue[] = [ws];
  const param = (value: ControlValue) => `$${params.push(value)}`;
  const parts = [
    ...found.persons.length === 0 ? [] : [`SELECT 'p' AS kind, person_key, NULL AS customer_id, email, external_id, name, NULL AS visitor_key, NULL AS link_state
      FROM ${d.byKeys('persons', 'person_key', param(columnOf(found.persons)), '$1', 'person_key, email, external_id, name')} AS p`],
    // Each part names its columns: the first one present names the union's.
    ...found.customers.length === 0 ? [] : [`SELECT 'c' AS kind, person_key, customer_id, email, NULL AS external_id, NULL AS name, visitor_key, link_state
      FROM ${d.byKeys('payment_customers', 'customer_id', param(columnOf(found.customers)), '$1', 'customer_id, email, person_key, visitor_key, link_state', 'text')} AS c`],
  ];
  const rows = parts.length === 0 ? [] : await store.all(parts.join(' UNION ALL '), params);
  const holds = (value: unknown) => typeof value === 'string' && lower(value).includes(term);
  const key = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  const persons = rows.filter((r) => r.kind === 'p' && (holds(r.email) || holds(r.external_id) || holds(r.name)));
  const customers = rows.filter((r) => r.kind === 'c' && (holds(r.customer_id) || holds(r.email)));
  // The links of the matched customers' visitors (a customer follows its visitor's person).
  const visitorKeys = [...new Set(customers.flatMap((c) => (c.visitor_key === null ? [] : [Number(c.visitor_key)])))];
  const linked = new Map<number, number>();
  if (visitorKeys.length > 0) {
    for (const v of await store.all(`SELECT visitor_key, person_key FROM ${d.byKeys('visitors', 'visitor_key', '$2', '$1', 'visitor_key, person_key')} AS v
      WHERE person_key IS NOT NULL`, [ws, columnOf(visitorKeys)])) linked.set(Number(v.visitor_key), Number(v.person_key));
  }
  const ownerOf = (c: ControlRow) => key(c.person_key) ?? (c.visitor_key === null ? null : linked.get(Number(c.visitor_key)) ?? null);
  const afterCursor = (sortKey: string) => byBytes(sortKey, after) > 0;
  const firstPage = <T extends { sort_key: string }>(items: T[]) => items.filter((i) => afterCursor(i.sort_key)).sort((a, b) => byBytes(a.sort_key, b.sort_key)).slice(0, limit);
  const personKeys = new Set([
    ...aliased,
    ...persons.map((p) => Number(p.person_key)),
    ...customers.filter((c) => holds(c.customer_id)).flatMap((c) => { const owner = ownerOf(c); return owner === null ? [] : [owner]; }),
  ]);
  const unowned = customers.filter((c) => c.person_key === null && c.link_state !== 'linked' && ownerOf(c) === null).map((c): PageKey => ({
    sort_key: `c${c.customer_id as string}`, person_key: null, customer_id: c.customer_id as string,
    email: (c.email as string | null) ?? null, visitor_key: key(c.visitor_key), link_state: c.link_state as string,
  }));
  const owners = [...personKeys].map((k): PageKey => ({ sort_key: sortKeyOf(k), person_key: k, customer_id: null, email: null, visitor_key: null, link_state: null }));
  return firstPage([...firstPage(owners), ...firstPage(unowned)]);
}
