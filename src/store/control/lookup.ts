// People lookup (GET /people): persons, and paying customers attributed to no person yet, whose
// email, external_id, name or customer id contains the term. Keyset-paginated on `sort_key`.

import type { ControlDialect, ControlSql } from './store.js';

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
const CUSTOMERS = `SELECT c.customer_id, c.email, c.visitor_key, coalesce(c.person_key, v.person_key) AS owner,
    CASE WHEN c.link_state = 'deferred' AND v.person_key IS NOT NULL THEN 'linked' ELSE c.link_state END AS link_state
  FROM payment_customers c
    LEFT JOIN (SELECT visitor_key, person_key FROM visitors WHERE workspace_id = $1 AND person_key IS NOT NULL) v
      ON v.visitor_key = c.visitor_key
  WHERE c.workspace_id = $1`;

export async function lookupPeople(store: ControlSql, ws: string, q: string, after: string, limit: number): Promise<LookupRow[]> {
  const d: ControlDialect = store.dialect;
  const has = (column: string) => d.contains(`lower(coalesce(${column}, ''))`, '$2');
  const rows = await store.all(`WITH customers AS (${CUSTOMERS}),
    owned AS (
      SELECT owner, ${d.listAgg('customer_id')} AS customer_ids,
        CASE WHEN bool_or(link_state = 'linked') THEN 'linked' WHEN bool_or(link_state = 'email_matched') THEN 'email_matched'
          ELSE min(link_state) END AS link_state
      FROM customers WHERE owner IS NOT NULL GROUP BY owner
    ),
    -- Matching persons first (a scan of persons and of customers), then their details.
    matches AS (
      SELECT person_key FROM persons p
      WHERE p.workspace_id = $1 AND (${has('p.email')} OR ${has('p.external_id')} OR ${has('p.name')})
      UNION
      SELECT owner FROM customers c WHERE c.owner IS NOT NULL AND ${has('c.customer_id')}
    ),
    people AS (
      SELECT 'p' || lpad(CAST(p.person_key AS VARCHAR), 20, '0') AS sort_key, p.person_key, p.person_id, p.external_id,
        p.email, p.name, CAST(NULL AS BIGINT) AS visitor_key, coalesce(o.customer_ids, ${d.listOf(null)}) AS customer_ids, o.link_state
      FROM matches m JOIN persons p ON p.person_key = m.person_key AND p.workspace_id = $1
        LEFT JOIN owned o ON o.owner = p.person_key
      UNION ALL
      SELECT 'c' || c.customer_id, NULL, NULL, NULL, c.email, NULL, c.visitor_key, ${d.listOf('c.customer_id')}, c.link_state
      FROM customers c
      WHERE c.owner IS NULL AND (${has('c.email')} OR ${has('c.customer_id')})
    )
    SELECT * FROM people WHERE sort_key > $3 ORDER BY sort_key LIMIT $4`,
  [ws, q.toLowerCase(), after, limit]);
  return rows.map((r) => ({
    sort_key: r.sort_key as string,
    person_key: r.person_key === null ? null : Number(r.person_key),
    person_id: (r.person_id as string | null) ?? null,
    external_id: (r.external_id as string | null) ?? null,
    email: (r.email as string | null) ?? null,
    name: (r.name as string | null) ?? null,
    visitor_key: r.visitor_key === null ? null : Number(r.visitor_key),
    customer_ids: (r.customer_ids as string[] | null) ?? [],
    link_state: (r.link_state as string | null) ?? null,
  }));
}
