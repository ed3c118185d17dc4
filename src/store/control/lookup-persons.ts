// The people lookup's persons read by lists of keys (DuckDB: each table read from an index by a key
// list, never joined by a key found in the same statement to a table it would then hash whole; the
// customers of the persons' visitors are the one join, onto the few visitors read by key). The
// persons' rows (personRowsByKeys) can ride in another statement (store/control/lookup-few.ts), and
// what a follow-up reads (links) in another's: a lookup of few candidates costs fewer statements.

import type { LookupRow } from './lookup.js';
import { columnOf, type ControlDialect, type ControlRow, type ControlSql, type ControlValue } from './store.js';

export type PagePerson = Omit<LookupRow, 'sort_key'>;

/**
 * Keys bound a parameter each where few, else as one list parameter: DuckDB compares a few bound keys
 * as constants, where a list costs it a JSON parse and a join (bench/RESULTS.md, "People lookup").
 */
const FEW_KEYS = 4;

/** The parameters of `keys` (not empty) for ControlDialect.byKeys, bound by `param`. */
export const keysParam = (keys: readonly (number | string)[], param: (value: ControlValue) => string): string | string[] =>
  (keys.length <= FEW_KEYS ? keys.map((k) => param(k)) : param(columnOf(keys)));

/**
 * Persons by keys (`keys`, from keysParam; `ws` the workspace's), their own customers and their
 * visitors, with, for keys bound one each, those visitors' customers without a person: a row each,
 * by its kind ('p', 'c', 'v', 'vc'; columns kind, person_key, id, external_id, email, name,
 * link_state, visitor_key; a customer's id in `id`). From a list of keys DuckDB planned that join
 * the wrong way round (every customer without a person hashed): followUp reads them by their visitors' keys.
 */
export const personRowsByKeys = (d: ControlDialect, ws: string, keys: string | readonly string[]): string => `
    SELECT 'p' AS kind, person_key, person_id AS id, external_id, email, name, CAST(NULL AS VARCHAR) AS link_state, CAST(NULL AS BIGINT) AS visitor_key
      FROM ${d.byKeys('persons', 'person_key', keys, ws, 'person_key, person_id, external_id, email, name')} AS p
    UNION ALL
    SELECT 'c', person_key, customer_id, NULL, NULL, NULL, link_state, visitor_key
      FROM ${d.byKeys('payment_customers', 'person_key', keys, ws, 'customer_id, person_key, visitor_key, link_state')} AS c
    UNION ALL
    SELECT 'v', person_key, NULL, NULL, NULL, NULL, NULL, visitor_key
      FROM ${d.byKeys('visitors', 'person_key', keys, ws, 'visitor_key, person_key')} AS v${typeof keys === 'string' ? '' : `
    UNION ALL
    SELECT 'vc', person_key, customer_id, NULL, NULL, NULL, link_state, visitor_key
      FROM payment_customers WHERE workspace_id = ${ws} AND person_key IS NULL
        AND visitor_key IN (SELECT visitor_key FROM ${d.byKeys('visitors', 'person_key', keys, ws, 'visitor_key, person_key')} AS v)`}`;

/** The customers without a person of the visitors of `visitorKeys` (from keysParam), as personRowsByKeys's 'vc' rows. */
const visitorCustomers = (d: ControlDialect, ws: string, visitorKeys: string | readonly string[]): string => `
    SELECT 'vc' AS kind, person_key, customer_id AS id, CAST(NULL AS VARCHAR) AS external_id, CAST(NULL AS VARCHAR) AS email,
        CAST(NULL AS VARCHAR) AS name, link_state, visitor_key
      FROM ${d.byKeys('payment_customers', 'visitor_key', visitorKeys, ws, 'customer_id, person_key, visitor_key, link_state')} AS c
      WHERE person_key IS NULL`;

/**
 * The part (kind 'vl'; the columns of personRowsByKeys) that reads the links (visitor and person) of
 * the visitors of `visitorKeys` (from keysParam) that are linked to a person.
 */
const visitorLinks = (d: ControlDialect, ws: string, visitorKeys: string | readonly string[]): string => `
    SELECT 'vl' AS kind, person_key, CAST(NULL AS VARCHAR) AS id, CAST(NULL AS VARCHAR) AS external_id, CAST(NULL AS VARCHAR) AS email,
        CAST(NULL AS VARCHAR) AS name, CAST(NULL AS VARCHAR) AS link_state, visitor_key
      FROM ${d.byKeys('visitors', 'visitor_key', visitorKeys, ws, 'visitor_key, person_key')} AS v
      WHERE person_key IS NOT NULL`;

const ofKind = (rows: ControlRow[], kind: string) => rows.filter((r) => r.kind === kind);

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
 * The persons of `rows` (personRowsByKeys's, with the 'vl' links of their deferred customers'
 * visitors) with their customers: their own, and those of their visitors (disjoint).
 */
export function personsOf(rows: ControlRow[]): Map<number, PagePerson> {
  const visitorOwner = new Map(ofKind(rows, 'v').map((r) => [Number(r.visitor_key), Number(r.person_key)]));
  // A deferred customer whose visitor got linked reads as linked.
  const linkedVisitors = new Set(ofKind(rows, 'vl').map((r) => Number(r.visitor_key)));
  const owned = new Map<number, Owned[]>();
  const give = (owner: number, customer: Owned) => {
    const customers = owned.get(owner);
    if (customers) customers.push(customer);
    else owned.set(owner, [customer]);
  };
  for (const c of ofKind(rows, 'c')) {
    const linked = c.link_state === 'deferred' && c.visitor_key !== null && linkedVisitors.has(Number(c.visitor_key));
    give(Number(c.person_key), { customer_id: c.id as string, link_state: linked ? 'linked' : c.link_state as string });
  }
  for (const c of ofKind(rows, 'vc')) {
    const owner = visitorOwner.get(Number(c.visitor_key));
    if (owner !== undefined) give(owner, { customer_id: c.id as string, link_state: c.link_state === 'deferred' ? 'linked' : c.link_state as string });
  }
  return new Map(ofKind(rows, 'p').map((r) => {
    const customers = owned.get(Number(r.person_key)) ?? [];
    return [Number(r.person_key), pagePerson({ ...r, person_id: r.id }, customers.map((c) => c.customer_id).sort(), linkStateOf(customers))];
  }));
}

/**
 * What personRowsByKeys's `rows` still need, in one statement or none: their visitors' customers
 * when the statement did not read them (`ofVisitors`), and the links ('vl') of their deferred
 * customers' visitors and of the visitors of `linksOf`.
 */
export async function followUp(store: ControlSql, ws: string, rows: ControlRow[], ofVisitors: boolean, linksOf: readonly number[] = []): Promise<ControlRow[]> {
  const visitors = ofVisitors ? [...new Set(ofKind(rows, 'v').map((r) => Number(r.visitor_key)))] : [];
  const links = [...new Set([...linksOf, ...ofKind(rows, 'c').filter((c) => c.link_state === 'deferred' && c.visitor_key !== null).map((c) => Number(c.visitor_key))])];
  const params: ControlValue[] = [ws];
  const param = (value: ControlValue) => `$${params.push(value)}`;
  const parts = [
    ...visitors.length === 0 ? [] : [visitorCustomers(store.dialect, '$1', keysParam(visitors, param))],
    ...links.length === 0 ? [] : [visitorLinks(store.dialect, '$1', keysParam(links, param))],
  ];
  return parts.length === 0 ? [] : store.all(parts.join(' UNION ALL '), params);
}

/**
 * The page's persons with their customers, by lists of keys: one statement (the persons, their own
 * customers, their visitors, and for a few keys those visitors' customers), a second only for what it
 * did not read (followUp). The same in one statement for an engine that joins through its indexes:
 * pagePersonsJoined.
 */
export async function pagePersonsByKeys(store: ControlSql, ws: string, personKeys: number[]): Promise<Map<number, PagePerson>> {
  if (personKeys.length === 0) return new Map();
  const params: ControlValue[] = [ws];
  const keys = keysParam(personKeys, (value) => `$${params.push(value)}`);
  const rows = await store.all(personRowsByKeys(store.dialect, '$1', keys), params);
  return personsOf([...rows, ...await followUp(store, ws, rows, typeof keys === 'string')]);
}
