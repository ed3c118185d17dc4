// The representative criteria of the benchmarks, each with the DuckDB SQL an analyst would write by
// hand for the same question over the same tables: the plain joins (visitor keys are unique, so on
// the key alone), literal values, no type checks on JSON properties. `$1` is the workspace, `$2`
// the evaluation time.

export interface BenchCase {
  name: string;
  criteria: unknown;
  handSql: string;
  /**
   * The same by hand over the typed payload columns (store/duckdb/typed.ts), where the criteria
   * filters a payload: `typed(name, path, kind)` stands for the column, found in event_slots.
   */
  handTypedSql?: string;
}

/** A typed payload column in `handTypedSql` (resolveTyped replaces it with the column name). */
export const typed = (name: string, path: string, kind: 'string' | 'number' | 'boolean') => `{typed:${name}:${path}:${kind}}`;

/** `sql` with each typed(…) placeholder replaced by `column(name, path, kind)`. */
export function resolveTyped(sql: string, column: (name: string, path: string, kind: string) => string): string {
  return sql.replace(/\{typed:([^:}]+):([^:}]+):([^:}]+)\}/g, (_, name: string, path: string, kind: string) => column(name, path, kind));
}

const ever = { kind: 'ever' };
const lastDays = (n: number) => ({ kind: 'last_n_days', n });
const once = (window: unknown) => ({ op: 'did', count: null, window });

/** Profile of an event row / page view row / payments row, as the store resolves people. */
const EVENT_PROFILE = 'coalesce(e.person_key, v.person_key, -e.visitor_key)';
// An event without a person needs its visitor's link only when that visitor is marked as having
// such events (visitors.anonymous_events): the same storage the compiled SQL reads.
const EVENTS = `events e LEFT JOIN (SELECT * FROM visitors WHERE anonymous_events) v ON v.visitor_key = e.visitor_key`;
const PAGEVIEWS = `pageviews pv LEFT JOIN visitors v ON v.visitor_key = pv.visitor_key`;
const PV_PROFILE = 'coalesce(v.person_key, -pv.visitor_key)';
const PAY_PROFILE = 'coalesce(c.person_key, v.person_key, -c.visitor_key)';
const customers = (table: string) => `${table} x JOIN payment_customers c ON c.workspace_id = x.workspace_id AND c.customer_id = x.customer_id
  LEFT JOIN visitors v ON v.visitor_key = c.visitor_key`;
const since = (days: number) => `CAST($2 AS TIMESTAMP) - INTERVAL ${days} DAY`;

export const BENCH_CASES: BenchCase[] = [
  {
    name: 'signed up, ever',
    criteria: { version: 1, root: { source: 'product_event', name: 'signup', occurrence: once(ever) } },
    handSql: `SELECT count(DISTINCT ${EVENT_PROFILE}) FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'signup'`,
  },
  {
    name: 'purchased 3+ times in 90 days',
    criteria: { version: 1, root: { source: 'product_event', name: 'purchase',
      occurrence: { op: 'did', count: { op: '>=', value: 3 }, window: lastDays(90) } } },
    handSql: `SELECT count(*) FROM (SELECT ${EVENT_PROFILE} AS p FROM ${EVENTS}
      WHERE e.workspace_id = $1 AND e.event_name = 'purchase' AND e.ts >= ${since(90)} AND e.ts <= CAST($2 AS TIMESTAMP)
      GROUP BY p HAVING count(*) >= 3)`,
  },
  {
    name: 'viewed expensive books in 30 days (2 JSON filters)',
    criteria: { version: 1, root: { source: 'product_event', name: 'view_item',
      filter: { 'payload.item.category': { op: '=', value: 'books' }, 'payload.item.price': { op: '>', value: 100 } },
      occurrence: once(lastDays(30)) } },
    handSql: `SELECT count(DISTINCT ${EVENT_PROFILE}) FROM ${EVENTS}
      WHERE e.workspace_id = $1 AND e.event_name = 'view_item' AND e.ts >= ${since(30)} AND e.ts <= CAST($2 AS TIMESTAMP)
        AND json_extract_string(e.properties, '$.item.category') = 'books'
        AND TRY_CAST(json_extract(e.properties, '$.item.price') AS DOUBLE) > 100`,
    handTypedSql: `SELECT count(DISTINCT ${EVENT_PROFILE}) FROM ${EVENTS}
      WHERE e.workspace_id = $1 AND e.event_name = 'view_item' AND e.ts >= ${since(30)} AND e.ts <= CAST($2 AS TIMESTAMP)
        AND e.${typed('view_item', 'item.category', 'string')} = 'books' AND e.${typed('view_item', 'item.price', 'number')} > 100`,
  },
  {
    name: 'AI visitors in 30 days who signed up',
    criteria: { version: 1, root: { op: 'and', children: [
      { source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } }, occurrence: once(lastDays(30)) },
      { source: 'product_event', name: 'signup', occurrence: once(ever) },
    ] } },
    handSql: `SELECT count(*) FROM (
      SELECT ${PV_PROFILE} FROM ${PAGEVIEWS} WHERE pv.workspace_id = $1 AND pv.channel_category = 'AI'
        AND pv.ts >= ${since(30)} AND pv.ts <= CAST($2 AS TIMESTAMP)
      INTERSECT SELECT ${EVENT_PROFILE} FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'signup')`,
  },
  {
    name: 'AI visitors who signed up, minus churned (anchored not)',
    criteria: { version: 1, root: { op: 'and', children: [
      { source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } }, occurrence: once(ever) },
      { source: 'product_event', name: 'signup', occurrence: once(ever) },
      { op: 'not', child: { source: 'payments', event: 'subscription_canceled', occurrence: { window: ever } } },
    ] } },
    handSql: `SELECT count(*) FROM (
      (SELECT ${PV_PROFILE} FROM ${PAGEVIEWS} WHERE pv.workspace_id = $1 AND pv.channel_category = 'AI'
       INTERSECT SELECT ${EVENT_PROFILE} FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'signup')
      EXCEPT SELECT ${PAY_PROFILE} FROM ${customers('payment_events')} WHERE x.workspace_id = $1 AND x.kind = 'subscription_canceled')`,
  },
  {
    name: 'paid search, paid social or email visitors in a campaign window (or)',
    criteria: { version: 1, root: { op: 'or', children: ['Paid Search', 'Paid Social', 'Email'].map((category) => ({
      source: 'pageview', filter: { channel_category: { op: '=', value: category } },
      occurrence: once({ kind: 'between', from: '2026-09-01', to: '2026-09-30' }),
    })) } },
    handSql: `SELECT count(DISTINCT ${PV_PROFILE}) FROM ${PAGEVIEWS}
      WHERE pv.workspace_id = $1 AND pv.channel_category IN ('Paid Search', 'Paid Social', 'Email')
        AND pv.ts >= TIMESTAMP '2026-09-01' AND pv.ts < TIMESTAMP '2026-10-01'`,
  },
  {
    name: 'active subscribers paying 20+ who did not log in for 30 days (did_not)',
    criteria: { version: 1, root: { op: 'and', children: [
      { source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: 'active' }, amount: { op: '>=', value: 2000 } } },
      { source: 'product_event', name: 'login', occurrence: { op: 'did_not', count: null, window: lastDays(30) } },
    ] } },
    handSql: `SELECT count(*) FROM (
      SELECT ${PAY_PROFILE} FROM ${customers('subscriptions')} WHERE x.workspace_id = $1 AND x.status = 'active' AND x.amount >= 2000
        AND ${PAY_PROFILE} IS NOT NULL
      EXCEPT SELECT ${EVENT_PROFILE} FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'login'
        AND e.ts >= ${since(30)} AND e.ts <= CAST($2 AS TIMESTAMP))`,
  },
  {
    name: 'power users eyeing enterprise who never exported (3 leaves, JSON filter, count, not)',
    criteria: { version: 1, root: { op: 'and', children: [
      { source: 'product_event', name: 'feature_used', occurrence: { op: 'did', count: { op: '>=', value: 10 }, window: lastDays(30) } },
      { source: 'product_event', name: 'plan_viewed', filter: { 'payload.plan': { op: '=', value: 'enterprise' } }, occurrence: once(ever) },
      { op: 'not', child: { source: 'product_event', name: 'export_report', occurrence: once(ever) } },
    ] } },
    handSql: `SELECT count(*) FROM (
      (SELECT ${EVENT_PROFILE} AS p FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'feature_used'
         AND e.ts >= ${since(30)} AND e.ts <= CAST($2 AS TIMESTAMP) GROUP BY p HAVING count(*) >= 10
       INTERSECT SELECT ${EVENT_PROFILE} FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'plan_viewed'
         AND json_extract_string(e.properties, '$.plan') = 'enterprise')
      EXCEPT SELECT ${EVENT_PROFILE} FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'export_report')`,
    handTypedSql: `SELECT count(*) FROM (
      (SELECT ${EVENT_PROFILE} AS p FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'feature_used'
         AND e.ts >= ${since(30)} AND e.ts <= CAST($2 AS TIMESTAMP) GROUP BY p HAVING count(*) >= 10
       INTERSECT SELECT ${EVENT_PROFILE} FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'plan_viewed'
         AND e.${typed('plan_viewed', 'plan', 'string')} = 'enterprise')
      EXCEPT SELECT ${EVENT_PROFILE} FROM ${EVENTS} WHERE e.workspace_id = $1 AND e.event_name = 'export_report')`,
  },
  {
    name: 'first paid invoice in 30 days, arrived from google',
    criteria: { version: 1, root: { op: 'and', children: [
      { source: 'payments', event: 'first_paid_invoice', occurrence: { window: lastDays(30) } },
      { source: 'pageview', filter: { referrer_host: { op: '=', value: 'google.com' } }, occurrence: once(ever) },
    ] } },
    handSql: `SELECT count(*) FROM (
      SELECT ${PAY_PROFILE} FROM ${customers('payment_events')} WHERE x.workspace_id = $1 AND x.kind = 'first_paid_invoice'
        AND x.ts >= ${since(30)} AND x.ts <= CAST($2 AS TIMESTAMP)
      INTERSECT SELECT ${PV_PROFILE} FROM ${PAGEVIEWS} WHERE pv.workspace_id = $1 AND pv.referrer_host = 'google.com')`,
  },
];
