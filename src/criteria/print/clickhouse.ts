// The ClickHouse dialect: a plan → one SQL statement plus its `{pN:Type}` query parameters, over
// the analytical tables of store/clickhouse/schema.ts. Same answers as the DuckDB dialect, spelled
// for the engine:
// - no set operators over per-leaf subqueries (DuckDB's form): ClickHouse runs a CTE again at each
//   reference, and hundreds of leaf subqueries pass its plan limits (query_plan_max_optimizations_to_apply
//   at 999 leaves) or run for long (bench/RESULTS.md, "ClickHouse beside DuckDB"). Each table is read
//   once for all its leaves (countIf per leaf), and the plan is a boolean formula over the leaves a
//   profile is in (walker.ts planFormula);
// - a LEFT JOIN miss gives 0 (not NULL) unless join_use_nulls = 1: profile expressions read a key
//   as "none" whether it is 0 or NULL, so they hold under either setting;
// - current state (persons, customers, subscriptions, invoices, payment events) is the row of
//   highest version per key, read with FINAL (exact whatever the merge state, and faster than
//   argMax per key); visitor links come from the links dictionary plus the links past its cut;
// - payload predicates read the native JSON column's typed subcolumns (`.:String`, `.:Int64`…),
//   never JSONExtract, which converts ("12" would equal 12); trait predicates read the persons'
//   traits text with JSONExtract only where JSONType says the value is of the type compared;
// - case-insensitive ops use lowerUTF8 (lower is ASCII-only).

import { type Breakdown, BREAKDOWN_TOP, type LeafScan, NON_ATTRIBUTED, type Sample, type SetPlan, type TimeRange } from '../plan.js';
import { perPayment, type ReportInterval, type ReportPlan, TOUCH_DIMENSIONS, type TouchDimension } from '../report.js';
import type { Count, Predicate, PredicateOp, Scalar } from '../schema.js';
import { NEGATED_OPS, PAGEVIEW_FIELDS, PAYMENTS_FIELDS, PAYLOAD_PREFIX, TRAITS_PREFIX } from '../schema.js';
import { type LiftPlan, liftAttribution } from '../lift.js';
import { clickhouseLiftSql } from './clickhouse-lift.js';
import { literal, quote, VISITOR_LINKS } from './clickhouse-text.js';
import { minorDigits } from '../currency.js';
import { clickhouseConverted, clickhouseMissingRate } from './clickhouse-currency.js';
import { CLICKHOUSE_ANCHOR, clickhouseCredits } from './clickhouse-touches.js';
import type { Printer } from './printer.js';
import { anyOfSql, type LeafTests, planFormulas, type SqlParam } from './walker.js';

export type ClickHouseParam = SqlParam | number[] | string[];

export interface ClickHouseQuery {
  sql: string;
  /** Values of the `{name:Type}` placeholders, for the client's `query_params`. */
  params: Record<string, ClickHouseParam>;
}

type ParamType = 'String' | 'Float64' | 'Bool' | 'UInt64' | "DateTime64(6, 'UTC')" | 'Array(Int64)' | 'Array(String)';

const SCALAR_TYPE = { string: 'String', boolean: 'Bool' } as const;

class Params {
  readonly values: Record<string, ClickHouseParam> = {};
  private readonly index = new Map<string, string>();

  /** `database`: where the tables are (an identifier from configuration); unset: the connection's default. */
  constructor(private readonly database: string | undefined) {}

  /** A table of the analytical schema, qualified by the database when there is one. */
  table(name: string): string {
    return this.database === undefined ? name : `${quote(this.database)}.${name}`;
  }

  /** The links dictionary's name as dictGet reads it: a string literal (of configured identifiers), `db.name` unquoted. */
  dictionary(): string {
    return literal(this.database === undefined ? VISITOR_LINKS : `${this.database}.${VISITOR_LINKS}`);
  }

  /** A placeholder for `value` read as `type`; equal values of a type share one. */
  add(value: ClickHouseParam, type: ParamType): string {
    const key = `${type}:${JSON.stringify(value)}`;
    let ref = this.index.get(key);
    if (!ref) {
      const name = `p${this.index.size + 1}`;
      this.values[name] = value;
      ref = `{${name}:${type}}`;
      this.index.set(key, ref);
    }
    return ref;
  }

  /**
   * A predicate value, typed as what it is (a JSON number compares as Float64). A number travels
   * as its shortest round-trip decimal text: chDB refuses to bind an integer beyond 2^53.
   */
  scalar(value: Scalar): string {
    return typeof value === 'number' ? this.add(String(value), 'Float64') : this.add(value, SCALAR_TYPE[typeof value as 'string' | 'boolean']);
  }

  timestamp(at: Date): string {
    return this.add(at.toISOString().replace('T', ' ').replace('Z', ''), "DateTime64(6, 'UTC')");
  }
}

const ORDERED: Partial<Record<PredicateOp, string>> = { '=': '=', '>': '>', '>=': '>=', '<': '<', '<=': '<=' };

/** `x` lowercased contains / starts with / ends with `p` lowercased. */
function textMatch(op: PredicateOp, x: string, p: string): string {
  const [a, b] = [`lowerUTF8(${x})`, `lowerUTF8(${p})`];
  if (op === 'contains') return `position(${a}, ${b}) > 0`;
  return op === 'starts_with' ? `startsWith(${a}, ${b})` : `endsWith(${a}, ${b})`;
}

const isText = (op: PredicateOp) => op === 'contains' || op === 'starts_with' || op === 'ends_with';

type ValueType = 'String' | 'Number' | 'Bool';

/** A typed column (Nullable where absent values exist), or a path of the JSON `properties` or traits. */
interface Target {
  /** Whether the value is present: neither absent nor null. */
  isSet(): string;
  /** The value when it is of JSON type `type`, else NULL (for a column: the column). */
  typed(type: ValueType): string;
}

function columnTarget(alias: string, field: string, known: Record<string, unknown>): Target {
  if (!Object.hasOwn(known, field)) throw new Error(`field ${field} is not whitelisted`);
  const column = `${alias}.${quote(field)}`;
  return { isSet: () => `${column} IS NOT NULL`, typed: () => column };
}

/** Path steps printed as identifiers; any other step is bound (getSubcolumn, slower: reads the whole document). */
const PLAIN_STEP = /^[A-Za-z0-9_$-]+$/;

function payloadTarget(field: string, params: Params): Target {
  const path = field.slice(PAYLOAD_PREFIX.length);
  const steps = path.split('.');
  const plain = steps.every((s) => PLAIN_STEP.test(s));
  const value = plain ? `e.properties.${steps.map(quote).join('.')}` : `getSubcolumn(e.properties, ${params.add(path, 'String')})`;
  const variant = (type: string) => (plain ? `${value}.:${quote(type)}` : `dynamicElement(${value}, '${type}')`);
  return {
    // ClickHouse's JSON keeps only leaves: an object-valued path is present through property_objects.
    isSet: () => `(${value} IS NOT NULL OR has(e.property_objects, ${params.add(path, 'String')}))`,
    typed: (type) => (type === 'Number'
      // JSON numbers are Int64, UInt64 or Float64 by their text; compared as numbers, like DuckDB's DOUBLE.
      ? `coalesce(toFloat64(${variant('Int64')}), ${variant('Float64')}, toFloat64(${variant('UInt64')}))`
      : variant(type)),
  };
}

/** JSONType's names of each value type, and the JSONExtract function that reads it. */
const TRAIT_TYPES: Record<ValueType, [types: string, extract: string]> = {
  String: ["'String'", 'JSONExtractString'],
  Number: ["'Int64', 'UInt64', 'Double'", 'JSONExtractFloat'],
  Bool: ["'Bool'", 'JSONExtractBool'],
};

/** A path of the traits text `x.traits`, each step a bound key (a step never indexes an array). */
function traitTarget(field: string, params: Params): Target {
  const steps = field.slice(TRAITS_PREFIX.length).split('.').map((step) => params.add(step, 'String')).join(', ');
  const type = `JSONType(x.traits, ${steps})`;
  return {
    isSet: () => `${type} != 'Null'`,
    typed: (t) => `if(${type} IN (${TRAIT_TYPES[t][0]}), ${TRAIT_TYPES[t][1]}(x.traits, ${steps}), NULL)`,
  };
}

const typeOf = (value: Scalar): ValueType => (typeof value === 'string' ? 'String' : typeof value === 'number' ? 'Number' : 'Bool');

function positive(target: Target, op: PredicateOp, value: Predicate['value'], params: Params): string {
  if (op === 'is_set') return target.isSet();
  if (op === 'in') {
    // One IN per JSON type present among the values: a value never matches another type.
    const byType = new Map<ValueType, string[]>();
    for (const v of value as Scalar[]) byType.set(typeOf(v), [...(byType.get(typeOf(v)) ?? []), params.scalar(v)]);
    const parts = [...byType].map(([type, refs]) => `${target.typed(type)} IN (${refs.join(', ')})`);
    return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
  }
  const scalar = value as Scalar;
  const x = target.typed(typeOf(scalar));
  return isText(op) ? textMatch(op, x, params.scalar(scalar)) : `${x} ${ORDERED[op]} ${params.scalar(scalar)}`;
}

function predicateSql(target: Target, predicate: Predicate, params: Params): string {
  const base = NEGATED_OPS[predicate.op];
  // Negative ops are the complement of their positive op, absent values included.
  return base
    ? `NOT coalesce(${positive(target, base, predicate.value, params)}, false)`
    : positive(target, predicate.op, predicate.value, params);
}

function rangeSql(column: string, range: TimeRange, params: Params): string[] {
  const out: string[] = [];
  if (range.from) out.push(`${column} >= ${params.timestamp(range.from)}`);
  if (range.to) out.push(`${column} ${range.toExclusive ? '<' : '<='} ${params.timestamp(range.to)}`);
  return out;
}

/**
 * The current row of each key of a state table: the row of its highest version, by FINAL (the
 * table's sort key is the workspace and the key), which merges the versions at read time whatever
 * the merge state, and much faster than argMax per key (bench/RESULTS.md, "ClickHouse beside DuckDB").
 */
function current(table: string, key: string, columns: string[], w: string, params: Params): string {
  return `(SELECT ${key}, ${columns.map(quote).join(', ')} FROM ${params.table(table)} FINAL WHERE workspace_id = ${w})`;
}

/**
 * The links of visitors changed after the links dictionary's cut (the key-0 entry, see
 * store/clickhouse/schema.ts): the current row of each, unlinked ones included, since they override
 * the dictionary. Only the newest parts' granules hold versions past the cut (a minmax index).
 */
const recentLinks = (w: string, params: Params) => `(SELECT visitor_key, argMax(person_key, version) AS person_key
      FROM ${params.table('visitors')}
      WHERE workspace_id = ${w} AND version > toUInt64(dictGet(${params.dictionary()}, 'person_key', toUInt64(0)))
      GROUP BY visitor_key)`;

/**
 * A row's owner as one Int64: its person's key, else minus its visitor's (0: neither). Grouping by
 * one Int64 is faster than by the (person, visitor) pair (bench/RESULTS.md, "ClickHouse beside
 * DuckDB"); only the negative owners (anonymous rows) then need their visitor's link looked up.
 */
const owner = (person: string, visitor: string) => `if(${person} != 0, ${person}, -${visitor})`;

interface NumberedScan {
  n: number;
  scan: LeafScan;
}

/** Whether one row of the leaf's table (alias `e`, `pv` or `x`) counts for the leaf. */
function condition(scan: LeafScan, params: Params): string {
  const parts: string[] = [];
  switch (scan.table) {
    case 'events':
      parts.push(`e.event_name = ${params.add(scan.name, 'String')}`, ...rangeSql('e.ts', scan.range, params));
      parts.push(...anyOfSql(scan.anyOf, (group) => group.map((p) => predicateSql(payloadTarget(p.field, params), p, params)).join(' AND ')));
      break;
    case 'pageviews':
      parts.push(...rangeSql('pv.ts', scan.range, params));
      parts.push(...anyOfSql(scan.anyOf, (group) =>
        group.map((p) => predicateSql(columnTarget('pv', p.field, PAGEVIEW_FIELDS), p, params)).join(' AND ')));
      break;
    case 'payment_events':
      parts.push(`x.kind = ${params.add(scan.kind, 'String')}`, ...rangeSql('x.ts', scan.range, params));
      break;
    case 'subscriptions':
    case 'invoices': {
      const fields = PAYMENTS_FIELDS[scan.table === 'subscriptions' ? 'subscription' : 'invoice'];
      parts.push(...scan.predicates.map((p) => predicateSql(columnTarget('x', p.field, fields), p, params)));
      break;
    }
    case 'persons':
      parts.push(...scan.predicates.map((p) => predicateSql(traitTarget(p.field, params), p, params)));
      break;
  }
  return parts.length === 0 ? 'true' : parts.join(' AND ');
}

/** The time range every leaf's rows fall in, when each has that bound (lets the sort key skip parts). */
function hull(column: string, ranges: TimeRange[], params: Params): string[] {
  const out: string[] = [];
  const froms = ranges.map((r) => r.from);
  const tos = ranges.map((r) => r.to);
  if (froms.every((d) => d !== undefined)) out.push(`${column} >= ${params.timestamp(new Date(Math.min(...froms.map(Number))))}`);
  if (tos.every((d) => d !== undefined)) out.push(`${column} <= ${params.timestamp(new Date(Math.max(...tos.map(Number))))}`);
  return out;
}

/**
 * Rows `(owner…, leaf, n)`: for each owner, the number `n` of its rows of `source` that count for
 * each leaf, zeros left out. The table is read once for all its leaves; `source` keeps only the
 * rows that count for some leaf (anyLeaf).
 */
function counted(owner: [expression: string, name: string][], source: string, leaves: NumberedScan[], params: Params): string {
  // The source keeps only rows counting for some leaf (anyLeaf): with one leaf, every row counts.
  if (leaves.length === 1) {
    return `SELECT ${owner.map(([e, name]) => `${e} AS ${name}`).join(', ')}, ${leaves[0]!.n} AS leaf, count() AS n
      FROM ${source}
      GROUP BY ${owner.map(([e]) => e).join(', ')}`;
  }
  const counts = leaves.map((l) => `countIf(${condition(l.scan, params)})`).join(',\n        ');
  return `SELECT ${owner.map(([, name]) => name).join(', ')}, t.1 AS leaf, t.2 AS n FROM (
      SELECT ${owner.map(([e, name]) => `${e} AS ${name}`).join(', ')}, [${counts}] AS counts
      FROM ${source}
      GROUP BY ${owner.map(([e]) => e).join(', ')})
    ARRAY JOIN arrayZip([${leaves.map((l) => l.n).join(', ')}], counts) AS t WHERE t.2 > 0`;
}

/** A row that counts for at least one of the leaves: the others add nothing, so they are not grouped. */
const anyLeaf = (leaves: NumberedScan[], params: Params): string => `(${leaves.map((l) => condition(l.scan, params)).join(' OR ')})`;

/** Whether profile `profile` (an Int64 expression) is in the sample. */
function sampled(profile: string, sample: Sample, params: Params): string {
  const [salt, modulus, keep] = [sample.salt, sample.modulus, sample.keep].map((n) => params.add(n, 'UInt64'));
  return `cityHash64(${profile}, ${salt}) % ${modulus} < ${keep}`;
}

/**
 * Rows `(owner, leaf, n)` of the leaves, each table read once. With a sample, rows whose person is
 * known are sampled before their predicates are read (profiles are sampled after).
 */
function ownerRows(leaves: NumberedScan[], w: string, params: Params, sample: Sample | undefined): string[] {
  const of = (...tables: LeafScan['table'][]) => leaves.filter((l) => tables.includes(l.scan.table));
  const ranges = (ls: NumberedScan[]) => ls.map((l) => ('range' in l.scan ? l.scan.range : { toExclusive: false }));
  const parts: string[] = [];
  const events = of('events');
  if (events.length > 0) {
    const names = [...new Set(events.map((l) => (l.scan as { name: string }).name))].map((n) => params.add(n, 'String'));
    const where = [`e.workspace_id = ${w}`, `e.event_name IN (${names.join(', ')})`, ...hull('e.ts', ranges(events), params)];
    if (sample) where.push(`(e.person_key = 0 OR ${sampled('e.person_key', sample, params)})`);
    where.push(anyLeaf(events, params));
    parts.push(counted([[owner('e.person_key', 'e.visitor_key'), 'owner']],
      `${params.table('events')} AS e\n      WHERE ${where.join(' AND ')}`, events, params));
  }
  const pageviews = of('pageviews');
  if (pageviews.length > 0) {
    const where = [`pv.workspace_id = ${w}`, ...hull('pv.ts', ranges(pageviews), params), anyLeaf(pageviews, params)];
    parts.push(counted([['-pv.visitor_key', 'owner']],
      `${params.table('pageviews')} AS pv\n      WHERE ${where.join(' AND ')}`, pageviews, params));
  }
  const customers: string[] = [];
  const paymentEvents = of('payment_events');
  if (paymentEvents.length > 0) {
    // The kind is part of the key, so it filters before the current row is picked; the time after.
    const kinds = [...new Set(paymentEvents.map((l) => (l.scan as { kind: string }).kind))].map((k) => params.add(k, 'String'));
    // FINAL leaves out an event whose current version is withdrawn (ReplacingMergeTree's is_deleted column).
    const rows = `(SELECT kind, customer_id, ts FROM ${params.table('payment_events')} FINAL
      WHERE workspace_id = ${w} AND kind IN (${kinds.join(', ')}))`;
    customers.push(counted([['x.customer_id', 'customer_id']], `${rows} AS x WHERE ${anyLeaf(paymentEvents, params)}`, paymentEvents, params));
  }
  for (const [table, entity] of [['subscriptions', 'subscription'], ['invoices', 'invoice']] as const) {
    const state = of(table);
    if (state.length === 0) continue;
    const rows = current(table, `${entity}_id`, ['customer_id', ...Object.keys(PAYMENTS_FIELDS[entity])], w, params);
    // Filtered after FINAL (the current row of each key first): a WHERE, never a PREWHERE, here.
    customers.push(counted([['x.customer_id', 'customer_id']], `${rows} AS x WHERE ${anyLeaf(state, params)}`, state, params));
  }
  const persons = of('persons');
  if (persons.length > 0) {
    // Persons only: an anonymous profile has no traits.
    const rows = current('persons', 'person_key', ['traits'], w, params);
    const where = [...(sample ? [sampled('x.person_key', sample, params)] : []), anyLeaf(persons, params)];
    parts.push(counted([['x.person_key', 'owner']], `${rows} AS x WHERE ${where.join(' AND ')}`, persons, params));
  }
  if (customers.length > 0) {
    // Payments rows belong to their customer's person, else to its visitor's.
    parts.push(`SELECT ${owner('c.person_key', 'c.visitor_key')} AS owner, o.leaf AS leaf, o.n AS n
    FROM (${customers.join('\n    UNION ALL ')}) AS o
      JOIN ${current('payment_customers', 'customer_id', ['person_key', 'visitor_key'], w, params)} AS c ON c.customer_id = o.customer_id`);
  }
  return parts;
}

/** A count a profile's rows must have for a leaf, as `lo <= n <= hi` (or outside it, for `!=`); n >= 1 always. */
function countRange(count: Count | null): [lo: number, hi: number, outside: 0 | 1] {
  // Past 2^53 a count bound means "never reached": chDB binds no larger integer, and no profile has that many rows.
  const v = Math.min(count?.value ?? 1, Number.MAX_SAFE_INTEGER);
  const most = Number.MAX_SAFE_INTEGER;
  switch (count?.op) {
    case undefined: return [1, most, 0];
    case '>=': return [Math.max(v, 1), most, 0];
    case '>': return [Math.min(v + 1, most), most, 0];
    case '=': return [v, v, 0];
    case '<=': return [1, v, 0];
    case '<': return [1, v - 1, 0];
    case '!=': return [v, v, 1];
  }
}

const LEAVES_OF_PROFILE: LeafTests = {
  any: (ns) => (ns.length === 1 ? `has(leaves, ${ns[0]})` : `hasAny(leaves, [${ns.join(', ')}])`),
  all: (ns) => (ns.length === 1 ? `has(leaves, ${ns[0]})` : `hasAll(leaves, [${ns.join(', ')}])`),
};

/**
 * An anonymous owner's person (owner < 0; 0 is nobody, and key 0 of the dictionary is its cut): its
 * recent link when it has one (a miss reads visitor_key 0), else the dictionary's; unlinked: itself.
 * Over rows `o` with an `owner`, joined to the recent links as `l` (ownersJoin).
 */
function profileOfOwner(params: Params): string {
  const linked = `if(l.visitor_key != 0, l.person_key, dictGetOrDefault(${params.dictionary()}, 'person_key', toUInt64(-o.owner), toInt64(0)))`;
  return `if(o.owner >= 0, o.owner, ifNull(nullIf(${linked}, 0), o.owner))`;
}

/** Rows `owners` (with an `owner` column) as `o`, with the recent links that profileOfOwner reads. */
const ownersJoin = (owners: string, w: string, params: Params) => `(
    ${owners}
    ) AS o
      LEFT JOIN ${recentLinks(w, params)} AS l ON l.visitor_key = -o.owner`;

/**
 * Per profile (its person, else its visitor's linked person, else minus the visitor; 0 is nobody)
 * the leaves it is in, each with its count checked (bounds per leaf number in bound arrays):
 * rows `(profile, leaf)`. Every table is read once, whatever the number of leaves: per owner the
 * rows counting for each leaf first.
 */
function leafRows(leaves: LeafScan[], w: string, params: Params, sample: Sample | undefined): string {
  const ranges = leaves.map((scan) => countRange('count' in scan ? scan.count : null));
  const having = ['profile != 0'];
  if (ranges.some(([lo, hi]) => lo !== 1 || hi !== Number.MAX_SAFE_INTEGER)) {
    const [lo, hi, outside] = [0, 1, 2].map((i) => params.add(ranges.map((r) => r[i]!), 'Array(Int64)'));
    having.push(`(n BETWEEN ${lo}[leaf + 1] AND ${hi}[leaf + 1]) != ${outside}[leaf + 1]`);
  }
  if (sample) having.push(sampled('profile', sample, params));
  const parts = ownerRows(leaves.map((scan, n) => ({ n, scan })), w, params, sample);
  return `SELECT ${profileOfOwner(params)} AS profile, o.leaf AS leaf, sum(o.n) AS n
    FROM ${ownersJoin(parts.join('\n    UNION ALL '), w, params)}
    GROUP BY profile, leaf
    HAVING ${having.join(' AND ')}`;
}

/** The leaves each profile is in, as `(profile, leaves)`, for testing the plans' formulas. */
const leavesOfProfiles = (rows: string) => `SELECT profile, groupArray(leaf) AS leaves FROM (
    ${rows}
  ) GROUP BY profile`;

/** The plan's profiles: the plan as a formula over the leaves each profile is in. */
function profilesSql(plan: SetPlan, ws: string, params: Params, sample: Sample | undefined): string {
  const w = params.add(ws, 'String');
  const { formulas: [formula], leaves } = planFormulas([plan], LEAVES_OF_PROFILE);
  const rows = leafRows(leaves, w, params, sample);
  // A plan that is one leaf: its profiles, without gathering leaves per profile.
  if (formula === LEAVES_OF_PROFILE.any([0])) return `SELECT profile FROM (${rows})`;
  return `SELECT profile FROM (${leavesOfProfiles(rows)})
  WHERE ${formula}`;
}

/** One statement: `select` around the plan's set of profiles (of the sampled ones only, with a sample). */
function print(
  plan: SetPlan, workspaceId: string, database: string | undefined, select: (set: string, params: Params) => string, sample?: Sample,
): ClickHouseQuery {
  const params = new Params(database);
  return { sql: select(profilesSql(plan, workspaceId, params, sample), params), params: params.values };
}

/**
 * Rows `(profile, value)`: each profile's value for a breakdown, for the profiles that have one
 * (of the audience `set` at least).
 */
function breakdownValues(breakdown: Breakdown, set: string, w: string, params: Params): string {
  switch (breakdown.kind) {
    case 'first_touch_channel':
      // The page views of the audience's visitors only (finding every profile's first touch grew
      // with the workspace). The set is read again for them (a CTE is not kept between its uses).
      return firstTouches(`SELECT profile FROM (${set})`, w, params);
    case 'trait':
      return `SELECT x.person_key AS profile, ${traitValue(breakdown.path, params)} AS value
    FROM ${current('persons', 'person_key', ['traits'], w, params)} AS x`;
    case 'payments_status': {
      const [table, key] = breakdown.entity === 'subscription' ? ['subscriptions', 'subscription_id'] : ['invoices', 'invoice_id'];
      return `SELECT ${profileOfOwner(params)} AS profile, argMax(o.status, o.at) AS value
    FROM ${ownersJoin(`SELECT ${owner('c.person_key', 'c.visitor_key')} AS owner, x.status AS status, x.created_at AS at
      FROM ${current(table, key, ['customer_id', 'status', 'created_at'], w, params)} AS x
        JOIN ${current('payment_customers', 'customer_id', ['person_key', 'visitor_key'], w, params)} AS c ON c.customer_id = x.customer_id`, w, params)}
    GROUP BY profile`;
    }
  }
}

// The revenue report (criteria/report.ts): payments and refunds per bucket and group, as DuckDB's
// printRevenue gives them. Subqueries in place of DuckDB's CTEs (ClickHouse runs a CTE again at
// each reference); state tables read FINAL (a withdrawn refund is left out by it).

/** The payments of the workspace, every one once (`money_id` its id): paid invoices, one-time payments (the payments mirror). */
function paymentsMoney(w: string, params: Params): string {
  const invoices = `${params.table('invoices')} FINAL WHERE workspace_id = ${w}`;
  return `SELECT concat('i', invoice_id) AS money_id, customer_id, assumeNotNull(paid_at) AS ts, amount_paid AS amount, lower(currency) AS currency, 1 AS is_payment
      FROM ${invoices} AND amount_paid > 0 AND paid_at IS NOT NULL
      UNION ALL
      SELECT concat('p', payment_id), assumeNotNull(customer_id), assumeNotNull(paid_at), assumeNotNull(amount), lower(assumeNotNull(currency)), 1
      FROM ${params.table('payments')} FINAL WHERE workspace_id = ${w} AND customer_id IS NOT NULL AND amount IS NOT NULL
        AND currency IS NOT NULL AND paid_at IS NOT NULL AND (invoice_id IS NULL OR invoice_id NOT IN (SELECT invoice_id FROM ${invoices}))`;
}

/** The money of the workspace, every row once (`money_id` its id): payments, and refunds. */
function revenueMoney(w: string, params: Params): string {
  return `${paymentsMoney(w, params)}
      UNION ALL
      SELECT concat('r', object_id), customer_id, ts, assumeNotNull(amount), lower(assumeNotNull(currency)), 0
      FROM ${params.table('payment_events')} FINAL WHERE workspace_id = ${w} AND kind = 'refund_issued' AND amount IS NOT NULL AND currency IS NOT NULL`;
}

/**
 * Customers with their person (its own, else its visitor's) and profile; a LEFT JOIN miss reads 0 or
 * NULL alike. `frozen`: a deleted payer's customer has the profile it was attributed through (frozen_payers).
 */
function customersSql(w: string, params: Params, frozen = true): string {
  const live = 'if(person_key != 0, person_key, -c.visitor_key)';
  return `SELECT c.customer_id AS customer_id, if(c.person_key != 0, c.person_key, ifNull(v.person_key, 0)) AS person_key,
          ${frozen ? `if(${live} != 0, ${live}, f.profile)` : live} AS profile
        FROM ${current('payment_customers', 'customer_id', ['person_key', 'visitor_key'], w, params)} AS c
          LEFT JOIN (SELECT visitor_key, person_key FROM ${params.table('visitors')} FINAL WHERE workspace_id = ${w}
            AND visitor_key IN (SELECT visitor_key FROM ${params.table('payment_customers')} WHERE workspace_id = ${w})) AS v ON v.visitor_key = c.visitor_key${frozen ? `
          LEFT JOIN ${current('frozen_payers', 'customer_id', ['profile'], w, params)} AS f ON f.customer_id = c.customer_id` : ''}`;
}

/** Each paying profile's first payment, over its customers (decisions §10: no touch after it counts). */
function firstPayments(w: string, params: Params): string {
  return `SELECT c.profile AS profile, min(m.ts) AS first_paid
      FROM (${paymentsMoney(w, params)}) AS m JOIN (${customersSql(w, params)}) AS c ON c.customer_id = m.customer_id
      WHERE c.profile != 0 GROUP BY c.profile`;
}

/**
 * Rows (profile, value) for the profiles of `profiles` (a statement): the channel category of the
 * first touch, the earliest page view of the profile's visitors (an anonymous profile's own, those
 * linked to its person now) at or before its first payment; none without one.
 */
function firstTouches(profiles: string, w: string, params: Params): string {
  return `SELECT x.profile AS profile, argMin(pv.channel_category, tuple(pv.ts, pv.pageview_id)) AS value
    FROM ${params.table('pageviews')} AS pv
      JOIN (SELECT l.visitor_key AS visitor_key, l.profile AS profile, ifNull(fp.profile, 0) != 0 AS paid, fp.first_paid AS until
        FROM (SELECT -profile AS visitor_key, profile FROM (${profiles}) WHERE profile < 0
          UNION ALL
          SELECT visitor_key, person_key AS profile FROM ${params.table('visitors')} FINAL
          WHERE workspace_id = ${w} AND person_key != 0 AND person_key IN (${profiles})) AS l
          LEFT JOIN (${firstPayments(w, params)}) AS fp ON fp.profile = l.profile) AS x ON x.visitor_key = pv.visitor_key
    WHERE pv.workspace_id = ${w} AND (NOT x.paid OR pv.ts <= x.until)
    GROUP BY x.profile`;
}

const CLICKHOUSE_BUCKET: Record<ReportInterval, string> = { day: 'toDate', week: 'toMonday', month: 'toStartOfMonth' };

/**
 * The page views of the customers' profiles with their profile and `value` the column grouped by: a
 * superset of the payers' (the statement joins them on the profile), read without the money rows,
 * which ClickHouse would compute again for each reference. Only LEFT joins: ClickHouse's join
 * reordering turned inner joins of page views, visitors and payers into a cross product
 * (bench/RESULTS.md, "Revenue report").
 */
function customerPageviews(touch: TouchDimension, w: string, params: Params): string {
  const customers = customersSql(w, params);
  const profile = 'if(person_key != 0, person_key, -visitor_key)';
  const column = quote(TOUCH_DIMENSIONS[touch]);
  const visitors = `SELECT visitor_key, ${profile} AS profile FROM ${params.table('visitors')} FINAL
          WHERE workspace_id = ${w} AND ${profile} IN (SELECT profile FROM (${customers}) WHERE profile != 0)`;
  return `SELECT ifNull(v.profile, 0) AS profile, pv.ts AS ts, pv.pageview_id AS pageview_id, pv.channel_category AS channel_category,
          pv.${column} AS value, 1 AS matched
        FROM ${params.table('pageviews')} AS pv LEFT JOIN (${visitors}) AS v ON v.visitor_key = pv.visitor_key
        WHERE pv.workspace_id = ${w} AND pv.visitor_key IN (SELECT visitor_key FROM (${visitors}))
        UNION ALL
        SELECT profile, ts, pageview_id, channel_category, ${column}, 1 FROM ${params.table('frozen_touches')} FINAL
        WHERE workspace_id = ${w} AND profile IN (SELECT profile FROM (${customers}) WHERE profile != 0)`;
}

/** Each paying customer's group, first_touch or a trait (see DuckDB's revenueGroups); `found` 0: Non-attributed. */
function revenueGroups(report: ReportPlan, w: string, payers: string, params: Params): string {
  if ('trait' in report.group) {
    const value = traitValue(report.group.trait, params);
    return `SELECT p.customer_id AS customer_id, p.person_key != 0 AS found, ${value} AS grp
      FROM (${payers}) AS p LEFT JOIN ${current('persons', 'person_key', ['traits'], w, params)} AS x ON x.person_key = p.person_key`;
  }
  // No touch after the payment counts: the first touch at or before its profile's first payment (decisions §10).
  const counts = 'ifNull(x.matched, 0) = 1 AND (p.touch_until IS NULL OR x.ts <= p.touch_until)';
  const touch = `argMinIf(tuple(x.value), tuple(x.ts, x.pageview_id), ${counts}).1`;
  const pageviews = customerPageviews(report.group.touch, w, params);
  return `SELECT p.customer_id AS customer_id, countIf(${counts}) > 0 AS found, CAST(${touch} AS Nullable(String)) AS grp
      FROM (${payers}) AS p LEFT JOIN (${pageviews}) AS x ON x.profile = p.profile
      GROUP BY p.customer_id`;
}

/** A trait of `x.traits` as text: a string's value, another JSON value's text; NULL when absent or null. */
function traitValue(path: string, params: Params): string {
  const steps = path.split('.').map((step) => params.add(step, 'String')).join(', ');
  return `CAST(multiIf(JSONType(x.traits, ${steps}) = 'String', JSONExtractString(x.traits, ${steps}),
        JSONType(x.traits, ${steps}) = 'Null', NULL, JSONExtractRaw(x.traits, ${steps})) AS Nullable(String))`;
}

/**
 * The revenue report's money rows in the range (once, or per touch value sharing it) with their
 * group, profile, and `attributed` 0 when Non-attributed; `restrict` a further condition on the
 * rows' `profile`.
 */
/** The money rows (revenueMoney), converted to `currency` when there is one. */
function moneyIn(currency: string | null, w: string, params: Params): string {
  return currency
    ? clickhouseConverted(revenueMoney(w, params), params.add(currency, 'String'), params.add(10 ** minorDigits(currency), 'UInt64'), w,
      params.table('exchange_rates'), (v) => params.add(v, typeof v === 'number' ? 'UInt64' : 'String'))
    : revenueMoney(w, params);
}

function revenueRows(report: ReportPlan, w: string, params: Params, restrict: string): string {
  const [from, to] = [params.timestamp(report.from), params.timestamp(report.to)];
  const split = perPayment(report);
  const reportMoney = moneyIn(report.currency ?? null, w, params);
  const money = split ? `(SELECT *, ${CLICKHOUSE_ANCHOR} FROM (${reportMoney}))` : `(${reportMoney})`;
  // first_paid: the customer's first payment ever; touch_until: its profile's (a customer without one: its own).
  const inRange = `SELECT money_id, customer_id, ts, amount, currency, is_payment, first_paid, touch_until,${split ? ' anchor,' : ''} person_key, profile FROM (
      SELECT m.money_id AS money_id, m.customer_id AS customer_id, m.ts AS ts, m.amount AS amount, m.currency AS currency, m.is_payment AS is_payment,
        ${split ? 'm.anchor AS anchor, ' : ''}ifNull(c.person_key, 0) AS person_key, ifNull(c.profile, 0) AS profile,
        min(if(m.is_payment = 1, m.ts, NULL)) OVER (PARTITION BY m.customer_id) AS first_paid,
        min(if(m.is_payment = 1, m.ts, NULL)) OVER (PARTITION BY profile, if(profile = 0, m.customer_id, '')) AS touch_until
      FROM ${money} AS m
        LEFT JOIN (${customersSql(w, params)}) AS c ON c.customer_id = m.customer_id)
      WHERE ts >= ${from} AND ts < ${to}${restrict}`;
  const payers = `SELECT customer_id, any(person_key) AS person_key, any(profile) AS profile, any(first_paid) AS first_paid,
        any(touch_until) AS touch_until
      FROM (${inRange}) GROUP BY customer_id`;
  const missing = params.add(NON_ATTRIBUTED, 'String');
  // Each money row once, or (per-payment models) once per touch value sharing it.
  return split
    ? `SELECT r.money_id AS money_id, r.customer_id AS customer_id, if(ifNull(c.credited, 0) = 1, c.share, r.amount) AS amount, r.currency AS currency,
      r.is_payment AS is_payment, r.ts AS ts, r.first_paid AS first_paid, r.profile AS profile, ifNull(c.credited, 0) AS attributed,
      if(ifNull(c.credited, 0) = 1, c.v, ${missing}) AS grp
    FROM (${inRange}) AS r LEFT JOIN (${clickhouseCredits(report, split.model, inRange,
      customerPageviews(split.touch, w, params), (v, type) => params.add(v, type))}) AS c ON c.money_id = r.money_id`
    : `SELECT r.money_id AS money_id, r.customer_id AS customer_id, r.amount AS amount, r.currency AS currency, r.is_payment AS is_payment,
      r.ts AS ts, r.first_paid AS first_paid, r.profile AS profile, ifNull(g.found, 0) AS attributed, if(ifNull(g.found, 0) = 1, g.grp, ${missing}) AS grp
    FROM (${inRange}) AS r
      LEFT JOIN (${revenueGroups(report, w, payers, params)}) AS g ON g.customer_id = r.customer_id`;
}

/** The revenue report as rows at four levels, as DuckDB's printRevenue. */
function revenueSql(report: ReportPlan, ws: string, params: Params): string {
  const audience = report.audience ? `\n        AND profile != 0 AND profile IN (${profilesSql(report.audience, ws, params, undefined)})` : '';
  const w = params.add(ws, 'String');
  const from = params.timestamp(report.from);
  const bucket = (ts: string) => `${CLICKHOUSE_BUCKET[report.interval]}(${ts})`;
  const rows = revenueRows(report, w, params, audience);
  return `SELECT grouping(bucket, grp, currency) AS level, bucket, grp, currency,
  sumIf(amount, is_payment = 1) AS paid, sumIf(amount, is_payment = 0) AS refunded, uniqExactIf(money_id, is_payment = 0) AS refund_count,
  uniqExactIf(customer_id, is_payment = 1) AS paying, uniqExactIf(customer_id, is_first) AS new_paying
FROM (
  SELECT money_id, customer_id, amount, currency, is_payment, grp, toString(${bucket('ts')}) AS bucket,
    ifNull(is_payment = 1 AND first_paid >= ${from} AND ${bucket('first_paid')} = ${bucket('ts')}, false) AS is_first
  FROM (${rows})
)
GROUP BY GROUPING SETS ((bucket, grp, currency), (bucket, grp), (currency), ())`;
}

/**
 * Settings for running these statements: a tree at the size limits (1,000 nodes, each leaf with
 * several predicates) is a statement past ClickHouse's default max_query_size (256 KiB) and
 * max_ast_elements (50,000). Given with the query (max_query_size cannot be set inside it);
 * UInt64 settings as strings, as @clickhouse/client types them.
 */
export const CLICKHOUSE_QUERY_SETTINGS = {
  max_query_size: String(16 * 1024 * 1024),
  max_ast_elements: '2000000',
  max_expanded_ast_elements: '2000000',
};

/**
 * The ClickHouse statements of a plan over the tables of `database` (an identifier from
 * configuration); unset: the connection's default database.
 */
export class ClickHousePrinter implements Printer<ClickHouseQuery> {
  constructor(private readonly database?: string) {}

  count(plan: SetPlan, workspaceId: string, sample?: Sample): ClickHouseQuery {
    return print(plan, workspaceId, this.database, (set) => `SELECT count() AS count FROM (\n  ${set}\n) AS audience`, sample);
  }

  /** A profile without a value reads NULL (a join miss is the type's default unless join_use_nulls: `t.profile` is then 0). */
  breakdown(plan: SetPlan, workspaceId: string, breakdown: Breakdown): ClickHouseQuery {
    return print(plan, workspaceId, this.database, (set, params) => {
      const w = params.add(workspaceId, 'String');
      const missing = breakdown.kind === 'first_touch_channel' ? params.add(NON_ATTRIBUTED, 'String') : 'NULL';
      return `SELECT value, count() AS count, sum(count()) OVER () AS total FROM (
  SELECT if(ifNull(t.profile, 0) = 0, ${missing}, t.value) AS value
  FROM (\n  ${set}\n) AS a
    LEFT JOIN (${breakdownValues(breakdown, set, w, params)}) AS t ON t.profile = a.profile
)
GROUP BY value
ORDER BY count DESC, value ASC NULLS LAST
LIMIT ${BREAKDOWN_TOP}`;
    });
  }

  /** Each table read once. */
  overlap(plans: SetPlan[], workspaceId: string): ClickHouseQuery {
    const params = new Params(this.database);
    const w = params.add(workspaceId, 'String');
    const { formulas, leaves } = planFormulas(plans, LEAVES_OF_PROFILE);
    const mask = formulas.map((f, i) => `(${f}) * ${2 ** i}`).join(' + ');
    const sql = `SELECT mask, count() AS count FROM (
  SELECT ${mask} AS mask FROM (${leavesOfProfiles(leafRows(leaves, w, params, undefined))})
) WHERE mask != 0 GROUP BY mask`;
    return { sql, params: params.values };
  }

  members(plan: SetPlan, workspaceId: string): ClickHouseQuery {
    return print(plan, workspaceId, this.database, (set, params) => {
      const w = params.add(workspaceId, 'String');
      // A miss must read as NULL here (no person, no visitor), not as the type's default.
      return `SELECT a.profile AS profile, p.person_id AS person_id, v.visitor_id AS visitor_id, p.external_id AS external_id, p.email AS email
FROM (\n  ${set}\n) AS a
  LEFT JOIN ${current('persons', 'person_key', ['person_id', 'external_id', 'email'], w, params)} AS p ON p.person_key = a.profile
  LEFT JOIN ${current('visitors', 'visitor_key', ['visitor_id'], w, params)} AS v ON v.visitor_key = -a.profile
ORDER BY a.profile
SETTINGS join_use_nulls = 1`;
    });
  }

  /** In the order DuckDB lists them. */
  membersByIds(plan: SetPlan, workspaceId: string): ClickHouseQuery {
    const query = this.members(plan, workspaceId);
    return {
      sql: `SELECT person_id, visitor_id, external_id, email FROM (${query.sql}) AS members ORDER BY person_id ASC NULLS LAST, visitor_id ASC`,
      params: query.params,
    };
  }

  profiles(plan: SetPlan, workspaceId: string): ClickHouseQuery {
    return print(plan, workspaceId, this.database, (set) => `SELECT profile FROM (\n  ${set}\n) AS audience`);
  }

  revenue(report: ReportPlan, workspaceId: string): ClickHouseQuery {
    const params = new Params(this.database);
    return { sql: revenueSql(report, workspaceId, params), params: params.values };
  }

  missingRate(report: ReportPlan, workspaceId: string): ClickHouseQuery {
    const params = new Params(this.database);
    const w = params.add(workspaceId, 'String');
    const [from, to] = [params.timestamp(report.from), params.timestamp(report.to)];
    const sql = clickhouseMissingRate(revenueMoney(w, params), params.add(report.currency ?? '', 'String'), from, to, w, params.table('exchange_rates'),
      (v) => params.add(v, typeof v === 'number' ? 'UInt64' : 'String'));
    return { sql, params: params.values };
  }

  /** As DuckDB's printFreeze; touches first, so that a freeze interrupted between them is done again whole (FINAL reads a retried row once). */
  freeze(workspaceId: string, customerIds: string[]): ClickHouseQuery[] {
    const statement = (print: (w: string, fresh: string, params: Params) => string): ClickHouseQuery => {
      const params = new Params(this.database);
      const w = params.add(workspaceId, 'String');
      const fresh = `SELECT customer_id, profile FROM (${customersSql(w, params, false)})
        WHERE customer_id IN (SELECT arrayJoin(${params.add(customerIds, 'Array(String)')})) AND profile != 0
          AND customer_id NOT IN (SELECT customer_id FROM ${params.table('frozen_payers')} FINAL WHERE workspace_id = ${w})`;
      return { sql: print(w, fresh, params), params: params.values };
    };
    return [
      statement((w, fresh, params) => `INSERT INTO ${params.table('frozen_touches')}
        (workspace_id, profile, pageview_id, ts, path, referrer_host, medium, campaign, channel, channel_category)
      SELECT pv.workspace_id, f.profile, pv.pageview_id, pv.ts, pv.path, pv.referrer_host, pv.medium, pv.campaign, pv.channel, pv.channel_category
      FROM ${params.table('pageviews')} AS pv
        INNER JOIN (SELECT visitor_key, if(person_key != 0, person_key, -visitor_key) AS profile FROM ${params.table('visitors')} FINAL
          WHERE workspace_id = ${w}) AS v ON v.visitor_key = pv.visitor_key
        INNER JOIN (SELECT p.profile AS profile, max(m.ts) AS until FROM (${fresh}) AS p
          INNER JOIN (${revenueMoney(w, params)}) AS m ON m.customer_id = p.customer_id GROUP BY p.profile) AS f ON f.profile = v.profile
      WHERE pv.workspace_id = ${w} AND pv.ts <= f.until AND pv.visitor_key IN (SELECT visitor_key FROM ${params.table('visitors')} FINAL
        WHERE workspace_id = ${w} AND if(person_key != 0, person_key, -visitor_key) IN (SELECT profile FROM (${fresh})))`),
      statement((w, fresh, params) => `INSERT INTO ${params.table('frozen_payers')} (workspace_id, customer_id, profile)
      SELECT ${w}, customer_id, profile FROM (${fresh})`),
    ];
  }

  lift(plan: LiftPlan, workspaceId: string): ClickHouseQuery {
    const params = new Params(this.database);
    const w = params.add(workspaceId, 'String');
    const bind = (v: string | number) => params.add(v, typeof v === 'number' ? 'UInt64' : 'String');
    const members = `SELECT profile FROM ${params.table('audience_members')} WHERE workspace_id = ${w} AND snapshot_id = ${bind(plan.snapshotId)}`;
    const report = liftAttribution(plan);
    const money = report
      ? `SELECT profile, currency, amount, is_payment FROM (${revenueRows(report, w, params, `\n        AND profile != 0 AND profile IN (${members})`)})
        WHERE attributed = 1`
      : `SELECT c.profile AS profile, m.currency AS currency, m.amount AS amount, m.is_payment AS is_payment
        FROM (${moneyIn(plan.currency, w, params)}) AS m JOIN (${customersSql(w, params)}) AS c ON c.customer_id = m.customer_id
        WHERE m.ts >= ${params.timestamp(plan.from)} AND m.ts < ${params.timestamp(plan.to)} AND c.profile != 0`;
    const sql = clickhouseLiftSql(plan, { w, money, members: params.table('audience_members'), bind });
    return { sql, params: params.values };
  }

  firstTouches(workspaceId: string, profiles: number[]): ClickHouseQuery {
    const params = new Params(this.database);
    const listed = `SELECT arrayJoin(${params.add(profiles, 'Array(Int64)')}) AS profile`;
    return { sql: firstTouches(listed, params.add(workspaceId, 'String'), params), params: params.values };
  }
}

/** The statements over the connection's default database (tests that create the tables there). */
export const clickhousePrinter = new ClickHousePrinter();
