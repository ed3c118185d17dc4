// The people lookup's persons read by lists of keys (DuckDB: each table read from an index by a key
// list, never joined by a key found in the same statement, which would hash the whole table). The
// first read's rows (personRowsByKeys) can ride in another statement, and its follow-up's parts in
// another's (store/control/lookup-few.ts): a lookup of few candidates costs fewer statements.

import type { LookupRow } from './lookup.js';
import { columnOf, type ControlDialect, type ControlRow, type ControlSql, type ControlValue } from './store.js';

export type PagePerson = Omit<LookupRow, 'sort_key'>;

/**
 * Persons by a list of keys (the parameter `keys`; `ws` the workspace's), their own customers and
 * their visitors: a row each, by its kind ('p', 'c', 'v'; columns kind, person_key, id, external_id,
 * email, name, link_state, visitor_key).
 */
export const personRowsByKeys = (d: ControlDialect, ws: string, keys: string): string => `
    SELECT 'p' AS kind, person_key, person_id AS id, external_id, email, name, CAST(NULL AS VARCHAR) AS link_state, CAST(NULL AS BIGINT) AS visitor_key
      FROM ${d.byKeys('persons', 'person_key', keys, ws, 'person_key, person_id, external_id, email, name')} AS p
    UNION ALL
    SELECT 'c', person_key, customer_id, NULL, NULL, NULL, link_state, visitor_key
      FROM ${d.byKeys('payment_customers', 'person_key', keys, ws, 'customer_id, person_key, visitor_key, link_state')} AS c
    UNION ALL
    SELECT 'v', person_key, NULL, NULL, NULL, NULL, NULL, visitor_key
      FROM ${d.byKeys('visitors', 'person_key', keys, ws, 'visitor_key, person_key')} AS v`;

const ofKind = (rows: ControlRow[], kind: string) => rows.filter((r) => r.kind === kind);

/**
 * The parts (kinds 'vc', 'vl'; columns kind, visitor_key, customer_id, link_state, person_key) that
 * read what the persons of `first` (personRowsByKeys's rows) own through their visitors: those
 * visitors' customers without a person, and the links ('vl': visitor and person) of their deferred
 * customers' visitors and of `linksOf`. A part without keys is left out (DuckDB scans the table for
 * an empty list). `param` binds a value.
 */
export function visitorParts(d: ControlDialect, ws: string, first: ControlRow[], param: (value: ControlValue) => string, linksOf: number[] = []): string[] {
  const visitors = ofKind(first, 'v').map((r) => Number(r.visitor_key));
  const links = [...new Set([...linksOf, ...ofKind(first, 'c').filter((c) => c.link_state === 'deferred' && c.visitor_key !== null).map((c) => Number(c.visitor_key))])];
  return [
    ...visitors.length === 0 ? [] : [`SELECT 'vc' AS kind, visitor_key, customer_id, link_state, person_key
      FROM ${d.byKeys('payment_customers', 'visitor_key', param(columnOf(visitors)), ws, 'customer_id, person_key, visitor_key, link_state')} AS c
      WHERE person_key IS NULL`],
    ...links.length === 0 ? [] : [`SELECT 'vl' AS kind, visitor_key, NULL AS customer_id, NULL AS link_state, person_key
      FROM ${d.byKeys('visitors', 'visitor_key', param(columnOf(links)), ws, 'visitor_key, person_key')} AS v
      WHERE person_key IS NOT NULL`],
  ];
}

/** A customer of a page's person, with the link state the page shows for it. */
interface Owned {
  customer_id: string;
  link_state: string;
}

/** The owner's link state: linked over email_matched over the least other (as the states sort). */
function linkStateOf(customers: Owned[]): string | null {
  const states = customers.map((c) => c.link_state);
  if (states.includes('linked')) return 'linked';
  if (states.includes('email_matched')) return 'email_matched';
  return states.length === 0 ? null : states.reduce((a, b) => (b < a ? b : a));
}

/** A page's person from its row (person_key, person_id, external_id, email, name) and its customers. */
export function pagePerson(r: ControlRow, customerIds: string[], linkState: string | null): PagePerson {
  return {
    person_key: Number(r.person_key),
    person_id: r.person_id as string,
    external_id: (r.external_id as string | null) ?? null,
    email: (r.email as string | null) ?? null,
    name: (r.name as string | null) ?? null,
    visitor_key: null,
    customer_ids: customerIds,
    link_state: linkState,
  };
}

/**
 * The persons of `first` (personRowsByKeys's rows) with their customers: their own, and those of
 * their visitors (disjoint), from `second` (the rows of visitorParts).
 */
export function personsOf(first: ControlRow[], second: ControlRow[]): Map<number, PagePerson> {
  const visitorOwner = new Map(ofKind(first, 'v').map((r) => [Number(r.visitor_key), Number(r.person_key)]));
  // A deferred customer whose visitor got linked reads as linked.
  const linkedVisitors = new Set(ofKind(second, 'vl').map((r) => Number(r.visitor_key)));
  const owned = new Map<number, Owned[]>();
  const give = (owner: number, customer: Owned) => {
    const customers = owned.get(owner);
    if (customers) customers.push(customer);
    else owned.set(owner, [customer]);
  };
  for (const c of ofKind(first, 'c')) {
    const linked = c.link_state === 'deferred' && c.visitor_key !== null && linkedVisitors.has(Number(c.visitor_key));
    give(Number(c.person_key), { customer_id: c.id as string, link_state: linked ? 'linked' : c.link_state as string });
  }
  for (const c of ofKind(second, 'vc')) {
    const owner = visitorOwner.get(Number(c.visitor_key));
    if (owner !== undefined) give(owner, { customer_id: c.customer_id as string, link_state: c.link_state === 'deferred' ? 'linked' : c.link_state as string });
  }
  return new Map(ofKind(first, 'p').map((r) => {
    const customers = owned.get(Number(r.person_key)) ?? [];
    return [Number(r.person_key), pagePerson({ ...r, person_id: r.id }, customers.map((c) => c.customer_id).sort(), linkStateOf(customers))];
  }));
}

/**
 * The page's persons with their customers, by lists of keys: two statements (the persons, their own
 * customers and visitors; then what they own through their visitors), the second only when needed.
 * The same in one statement for an engine that joins through its indexes: pagePersonsJoined.
 */
export async function pagePersonsByKeys(store: ControlSql, ws: string, personKeys: number[]): Promise<Map<number, PagePerson>> {
  if (personKeys.length === 0) return new Map();
  const first = await store.all(personRowsByKeys(store.dialect, '$1', '$2'), [ws, columnOf(personKeys)]);
  const params: ControlValue[] = [ws];
  const parts = visitorParts(store.dialect, '$1', first, (value) => `$${params.push(value)}`);
  return personsOf(first, parts.length === 0 ? [] : await store.all(parts.join(' UNION ALL '), params));
}
