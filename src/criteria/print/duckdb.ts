// The DuckDB dialect: a plan → one SQL statement plus its bound `$n` parameters. User values only
// ever become parameters, identifiers come from the whitelists in schema.ts.
//
// A profile is an integer: a person's `person_key`, or minus the `visitor_key` of an anonymous
// visitor (keys are positive). The store's tables (store/duckdb/migrations.ts) provide the columns used.

import { pointer } from '../errors.js';
import {
  type Breakdown, BREAKDOWN_TOP, type LeafScan, NON_ATTRIBUTED, type Sample, type ScalarKind, type SetPlan, type TimeRange, type TypedPaths,
} from '../plan.js';
import type { TouchModel } from '../attribution.js';
import { perPayment, type ReportInterval, type ReportPlan, TOUCH_DIMENSIONS, type TouchDimension } from '../report.js';
import type { Count, Predicate, PredicateOp, Scalar } from '../schema.js';
import { NEGATED_OPS, PAGEVIEW_FIELDS, PAYMENTS_FIELDS, PAYLOAD_PREFIX, TRAITS_PREFIX } from '../schema.js';
import { minorDigits } from '../currency.js';
import { duckdbConverted, duckdbMissingRate } from './duckdb-currency.js';
import { type LiftPlan, liftAttribution } from '../lift.js';
import { duckdbLiftSql } from './duckdb-lift.js';
import { DUCKDB_ANCHOR, duckdbCredits } from './duckdb-touches.js';
import type { Printer } from './printer.js';
import { anyOfSql, SetPrinter, type SqlParam, type Within } from './walker.js';

export interface CompiledQuery {
  sql: string;
  params: SqlParam[];
}

class Params {
  readonly values: SqlParam[] = [];
  private readonly index = new Map<string, string>();

  /**
   * A placeholder for `value`; equal values share one. An integer past 2^53 (1e300, 2^64) is bound
   * as its decimal text read as DOUBLE: DuckDB would bind it as BIGINT and refuse it past 2^63, and
   * numbers compare as DOUBLE anyway.
   */
  add(value: SqlParam): string {
    const key = `${typeof value}:${String(value)}`;
    let ref = this.index.get(key);
    if (!ref) {
      const huge = typeof value === 'number' && !Number.isSafeInteger(value) && Number.isInteger(value);
      this.values.push(huge ? String(value) : value);
      ref = huge ? `CAST($${this.values.length} AS DOUBLE)` : `$${this.values.length}`;
      this.index.set(key, ref);
    }
    return ref;
  }

  timestamp(at: Date): string {
    return `CAST(${this.add(at.toISOString().replace('T', ' ').replace('Z', ''))} AS TIMESTAMP)`;
  }
}

const ORDERED: Partial<Record<PredicateOp, string>> = { '=': '=', '>': '>', '>=': '>=', '<': '<', '<=': '<=' };
const TEXT_FUNCTION: Partial<Record<PredicateOp, string>> = {
  contains: 'contains', starts_with: 'starts_with', ends_with: 'suffix',
};
const COUNT_SQL: Record<Count['op'], string> = { '>=': '>=', '>': '>', '=': '=', '<=': '<=', '<': '<', '!=': '<>' };

/**
 * A typed column, or a JSON value addressed by a pointer into a JSON column, with the columns
 * (`typed`) holding the value where it is of one JSON type, when the store keeps that type typed.
 */
type Target = { column: string } | JsonTarget;
type JsonTarget = { json: string; pointer: string; typed?: (kind: ScalarKind) => string | undefined };

function jsonPointer(dotted: string): string {
  return dotted.split('.').reduce(pointer, '');
}

const TYPED_PREFIX: Record<ScalarKind, string> = { string: 'prop_s', number: 'prop_n', boolean: 'prop_b' };

/** The events column of typed slot `slot` of `kind` (store/duckdb/typed.ts): the only way its name is spelled. */
export function typedColumn(kind: ScalarKind, slot: number): string {
  if (!Number.isSafeInteger(slot) || slot < 1) throw new Error(`a typed slot is a positive integer, not ${slot}`);
  return `${TYPED_PREFIX[kind]}${slot}`;
}

const kindOf = (value: Scalar): ScalarKind => typeof value as ScalarKind;

/** A typed column's comparison with one scalar (the text ops case-insensitive). */
function columnCompare(column: string, op: PredicateOp, p: string): string {
  const text = TEXT_FUNCTION[op];
  return text ? `${text}(lower(${column}), lower(${p}))` : `${column} ${ORDERED[op]} ${p}`;
}

/**
 * SQL for a comparison of the target with one scalar, false where the types differ. A value type
 * the store keeps typed reads its column, which holds only values of that type. For JSON,
 * parsing the properties document is the cost, so each check parses it once where it can: equality
 * compares the extracted value with the value's own JSON text; a number is read from the extracted
 * JSON text, which casts only when it is a JSON number (a JSON string keeps its quotes); string
 * comparisons check the JSON type only on rows whose text already matched.
 */
function compare(target: Target, op: PredicateOp, value: Scalar, params: Params): string {
  const p = params.add(value);
  if ('column' in target) return columnCompare(target.column, op, p);
  const typed = target.typed?.(kindOf(value));
  if (typed) return columnCompare(typed, op, p);
  const path = params.add(target.pointer);
  if (typeof value === 'number') return `${jsonNumber(target, path)} ${ORDERED[op]} ${p}`;
  if (op === '=') return `${jsonValue(target, path)} = to_json(${p})`;
  const str = `json_extract_string(${target.json}, ${path})`;
  const text = TEXT_FUNCTION[op];
  const match = text ? `${text}(lower(${str}), lower(${p}))` : `${str} ${ORDERED[op]} ${p}`;
  return then(match, `json_type(${target.json}, ${path}) = 'VARCHAR'`);
}

const jsonValue = (target: { json: string }, path: string) => `json_extract(${target.json}, ${path})`;
const jsonNumber = (target: { json: string }, path: string) => `TRY_CAST(CAST(${jsonValue(target, path)} AS VARCHAR) AS DOUBLE)`;

/**
 * `in` over a JSON value: each value type kept typed as an IN on its column, the rest with one
 * parse for the numbers and one for the strings and booleans.
 */
function jsonIn(target: JsonTarget, values: Scalar[], params: Params): string {
  const parts: string[] = [];
  const numbers: string[] = [];
  const others: string[] = [];
  const byColumn = new Map<string, string[]>();
  for (const v of values) {
    const typed = target.typed?.(kindOf(v));
    if (typed) byColumn.set(typed, [...(byColumn.get(typed) ?? []), params.add(v)]);
    else if (typeof v === 'number') numbers.push(params.add(v));
    else others.push(`to_json(${params.add(v)})`);
  }
  for (const [column, refs] of byColumn) parts.push(`${column} IN (${refs.join(', ')})`);
  if (numbers.length > 0 || others.length > 0) {
    const path = params.add(target.pointer);
    if (numbers.length > 0) parts.push(`${jsonNumber(target, path)} IN (${numbers.join(', ')})`);
    if (others.length > 0) parts.push(`${jsonValue(target, path)} IN (${others.join(', ')})`);
  }
  return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
}

/** `first AND next`, evaluating `next` only where `first` holds. */
function then(first: string, next: string): string {
  return `CASE WHEN ${first} THEN ${next} ELSE false END`;
}

function positive(target: Target, op: PredicateOp, value: Predicate['value'], params: Params): string {
  if (op === 'is_set') {
    return 'column' in target
      ? `${target.column} IS NOT NULL`
      : `coalesce(json_type(${target.json}, ${params.add(target.pointer)}), 'NULL') <> 'NULL'`;
  }
  if (op === 'in') {
    const values = value as Scalar[];
    if ('column' in target) return `${target.column} IN (${values.map((v) => params.add(v)).join(', ')})`;
    return jsonIn(target, values, params);
  }
  return compare(target, op, value as Scalar, params);
}

function predicateSql(target: Target, predicate: Predicate, params: Params): string {
  const base = NEGATED_OPS[predicate.op];
  // Negative ops are the complement of their positive op, absent values included.
  return base
    ? `NOT coalesce(${positive(target, base, predicate.value, params)}, false)`
    : positive(target, predicate.op, predicate.value, params);
}

/** Whether a predicate reads the JSON document (is_set does, and any value type not kept typed). */
function readsJson(target: JsonTarget, predicate: Predicate): boolean {
  if ((NEGATED_OPS[predicate.op] ?? predicate.op) === 'is_set') return true;
  const values = Array.isArray(predicate.value) ? predicate.value : [predicate.value as Scalar];
  return values.some((v) => !target.typed?.(kindOf(v)));
}

/** Document parses a JSON predicate costs: none when typed, two for string ordering and text ops. */
function jsonCost(target: JsonTarget, predicate: Predicate): number {
  if (!readsJson(target, predicate)) return 0;
  return typeof predicate.value === 'string' && !['=', '!='].includes(predicate.op) ? 2 : 1;
}

/** The JSON target of a payload or trait field, with the scan's typed columns of its path. */
function jsonTarget(json: string, prefix: string, field: string, typed?: { alias: string; paths: TypedPaths }): JsonTarget {
  const path = field.slice(prefix.length);
  const slots = typed && Object.hasOwn(typed.paths, path) ? typed.paths[path] : undefined;
  const column = (kind: ScalarKind) => {
    const slot = slots?.[kind];
    return slot === undefined ? undefined : `${typed!.alias}.${typedColumn(kind, slot)}`;
  };
  return { json, pointer: jsonPointer(path), typed: slots && column };
}

/**
 * Predicates on paths of the JSON column `json` (fields `<prefix><path>`): those read from typed
 * columns as plain conjuncts (the scan can filter on them), then the JSON ones cheapest first, each
 * evaluated only on the rows the previous ones kept.
 */
function jsonSql(json: string, prefix: string, predicates: Predicate[], params: Params, typed?: { alias: string; paths: TypedPaths }): string {
  const targets = predicates.map((p) => ({ p, target: jsonTarget(json, prefix, p.field, typed) }));
  const sorted = targets.sort((a, b) => jsonCost(a.target, a.p) - jsonCost(b.target, b.p));
  const plain = sorted.filter(({ p, target }) => !readsJson(target, p)).map(({ p, target }) => predicateSql(target, p, params));
  const chained = sorted.filter(({ p, target }) => readsJson(target, p)).map(({ p, target }) => predicateSql(target, p, params));
  const parts = chained.length > 0 ? [...plain, chained.reduceRight((rest, part) => then(part, rest))] : plain;
  return parts.length === 1 ? parts[0]! : `(${parts.join(' AND ')})`;
}

function rangeSql(column: string, range: TimeRange, params: Params): string[] {
  const out: string[] = [];
  if (range.from) out.push(`${column} >= ${params.timestamp(range.from)}`);
  if (range.to) out.push(`${column} ${range.toExclusive ? '<' : '<='} ${params.timestamp(range.to)}`);
  return out;
}

function columnTarget(alias: string, field: string, known: Record<string, unknown>): Target {
  if (!Object.hasOwn(known, field)) throw new Error(`field ${field} is not whitelisted`);
  return { column: `${alias}."${field}"` };
}

/**
 * Visitors linked to a person, the only ones a row's profile needs looking up. Keys are unique
 * across workspaces, so the join is on the integer key alone (a composite key with the workspace
 * id costs more than the rest of a typical leaf).
 */
function linkedVisitors(w: string): string {
  return `(SELECT visitor_key, person_key FROM visitors WHERE workspace_id = ${w} AND person_key IS NOT NULL)`;
}

/**
 * Whether a leaf within `within` reads only the set's visitors' rows (visitorsOf), whose profiles are
 * all in the set: a page-view leaf, where those visitors are most of what it would look up, within a
 * payments leaf's few profiles or over every page view of the workspace. Filtered page views within a
 * large set cost more that way (bench/RESULTS.md, "100 M events").
 */
function readsBySet(scan: LeafScan, within: Within): boolean {
  if (scan.table !== 'pageviews') return false;
  const unfiltered = scan.anyOf.some((group) => group.length === 0);
  return within.small || (unfiltered && !scan.range.from && !scan.range.to);
}

/**
 * The visitors of the profiles of the set `within`, with their persons: the linked visitors of its
 * persons, and the anonymous visitors that are its negative profiles (a leaf gives a visitor's
 * negative key only while it is not linked). A restricted page-view leaf reads only their page views
 * instead of looking up every page view's visitor (bench/RESULTS.md, "100 M events").
 */
function visitorsOf(within: Within, w: string): string {
  // Materialized: inline in the join it was slower at the same CPU (bench/RESULTS.md, "100 M events").
  return within.derive('visitors', `SELECT visitor_key, person_key FROM visitors WHERE workspace_id = ${w} AND person_key IN (SELECT profile FROM ${within.name})
    UNION ALL SELECT -profile, NULL FROM ${within.name} WHERE profile < 0`);
}

/**
 * The linked visitors an event without a person can belong to: those with such events (marked at
 * ingest and import). Most linked visitors have none, and hashing all of them was much of an event
 * leaf's time (bench/RESULTS.md, "100 M events"). A statement's event leaves all read them as one
 * CTE, which DuckDB computes once when more than one leaf reads it (each leaf scanned the visitors
 * again) and inlines for one.
 */
class AnonymousLinks {
  private cte: string | null = null;

  /** The CTE's name, for the statement of workspace placeholder `w`. */
  ref(w: string): string {
    this.cte ??= `anonymous_links AS (SELECT visitor_key, person_key FROM visitors WHERE workspace_id = ${w} AND person_key IS NOT NULL AND anonymous_events)`;
    return 'anonymous_links';
  }

  /** The CTE, when a leaf read it: first in the statement's WITH list. */
  ctes(): string[] {
    return this.cte === null ? [] : [this.cte];
  }
}

/**
 * Whether profile `profile` (an expression) is in the sample. The sample's integers are the
 * service's own, printed as UBIGINT literals: bound INTEGER parameters made DuckDB compute the
 * modulo in HUGEINT, many times slower (bench/RESULTS.md, "Breakdowns, sampled counts and overlaps").
 */
function sampled(profile: string, sample: Sample): string {
  const [salt, modulus, keep] = [sample.salt, sample.modulus, sample.keep].map((n) => {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`a sample takes non-negative integers, not ${n}`);
    return `${n}::UBIGINT`;
  });
  return `hash(${profile}, ${salt}) % ${modulus} < ${keep}`;
}

/**
 * Rows of one leaf as `profile` values (with repeats), before counting. With a sample, rows whose
 * person is known are sampled before their JSON is read (the leaf samples every row after).
 */
function scanRows(scan: LeafScan, ws: string, params: Params, links: AnonymousLinks, sample: Sample | undefined, within?: Within): string {
  const w = params.add(ws);
  const where: string[] = [];
  switch (scan.table) {
    case 'events': {
      where.push(`e.workspace_id = ${w}`, `e.event_name = ${params.add(scan.name)}`, ...rangeSql('e.ts', scan.range, params));
      const typed = scan.typed && { alias: 'e', paths: scan.typed };
      const payload = anyOfSql(scan.anyOf, (group) => jsonSql('e.properties', PAYLOAD_PREFIX, group, params, typed));
      const parsesJson = scan.anyOf.some((group) => group.some((p) => readsJson(jsonTarget('e.properties', PAYLOAD_PREFIX, p.field, typed), p)));
      // Rows whose person is known are sampled before their payload is parsed (a CASE: DuckDB would
      // parse the JSON first). Anonymous rows are sampled once their profile is known: joining
      // every anonymous row's JSON text to the links first measured slower than parsing it.
      const inSample = sample && `(e.person_key IS NULL OR ${sampled('e.person_key', sample)})`;
      if (inSample) where.push(payload.length > 0 ? then(inSample, payload.join(' AND ')) : inSample);
      else where.push(...payload);
      const conditions = where.join('\n      AND ');
      // Most events carry their person; only the others get a join key for the visitor's link (two
      // branches, with and without a person, each read the name's time range, and were slower). Rows
      // whose filters parse the JSON are filtered once into a materialized CTE first: with the join
      // beside the JSON filters the leaf was slower (both: bench/RESULTS.md, "100 M events").
      const profiles = (rows: string) => `SELECT coalesce(e.person_key, v.person_key, -e.visitor_key) AS profile
    FROM ${rows} LEFT JOIN ${links.ref(w)} v ON v.visitor_key = CASE WHEN e.person_key IS NULL THEN e.visitor_key END`;
      if (!parsesJson) return `${profiles('events e')}
    WHERE ${conditions}`;
      return `WITH matched AS MATERIALIZED (SELECT e.person_key, e.visitor_key FROM events e
    WHERE ${conditions})
    ${profiles('matched e')}`;
    }
    case 'pageviews':
      where.push(`pv.workspace_id = ${w}`, ...rangeSql('pv.ts', scan.range, params));
      where.push(...anyOfSql(scan.anyOf, (group) =>
        group.map((p) => predicateSql(columnTarget('pv', p.field, PAGEVIEW_FIELDS), p, params)).join(' AND ')));
      return `SELECT coalesce(v.person_key, -pv.visitor_key) AS profile
    FROM pageviews pv ${within && readsBySet(scan, within) ? `JOIN ${visitorsOf(within, w)}` : `LEFT JOIN ${linkedVisitors(w)}`} v ON v.visitor_key = pv.visitor_key
    WHERE ${where.join('\n      AND ')}`;
    case 'payment_events':
      where.push(`x.workspace_id = ${w}`, `x.kind = ${params.add(scan.kind)}`, ...rangeSql('x.ts', scan.range, params));
      return customerRows('payment_events', w, where);
    case 'subscriptions':
    case 'invoices': {
      const fields = PAYMENTS_FIELDS[scan.table === 'subscriptions' ? 'subscription' : 'invoice'];
      where.push(`x.workspace_id = ${w}`);
      for (const p of scan.predicates) where.push(predicateSql(columnTarget('x', p.field, fields), p, params));
      return customerRows(scan.table, w, where);
    }
    case 'persons':
      // Persons only: an anonymous profile has no traits.
      where.push(`p.workspace_id = ${w}`);
      if (sample) where.push(sampled('p.person_key', sample));
      if (scan.predicates.length > 0) where.push(jsonSql('p.traits', TRAITS_PREFIX, scan.predicates, params));
      return `SELECT p.person_key AS profile FROM persons p
    WHERE ${where.join('\n      AND ')}`;
  }
}

/** Payments rows belong to their customer's person, else to its visitor's person or anonymous profile. */
function customerRows(table: string, w: string, where: string[]): string {
  return `SELECT coalesce(c.person_key, v.person_key, -c.visitor_key) AS profile
    FROM ${table} x
      JOIN payment_customers c ON c.workspace_id = x.workspace_id AND c.customer_id = x.customer_id
      LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = c.visitor_key
    WHERE ${where.join('\n      AND ')}`;
}

/**
 * A leaf's distinct profiles (or those counted enough), of the set `within` only when given. The
 * set is distinct (a leaf's profiles or a set operation's), so it is joined, which is faster than
 * `IN (SELECT …)` (bench/RESULTS.md, "100 M events").
 */
function leafSql(scan: LeafScan, ws: string, params: Params, links: AnonymousLinks, sample: Sample | undefined, within?: Within): string {
  // Rows read by the set's visitors are of its profiles already, and joining them to it again was
  // slower (bench/RESULTS.md, "100 M events").
  const joined = within && !readsBySet(scan, within);
  const rows = `(${scanRows(scan, ws, params, links, sample, within)}) AS r${joined ? ` JOIN ${within.name} AS s ON s.profile = r.profile` : ''}`;
  const where = `r.profile IS NOT NULL${sample ? ` AND ${sampled('r.profile', sample)}` : ''}`;
  const count = 'count' in scan ? scan.count : null;
  if (!count) return `SELECT DISTINCT r.profile AS profile FROM ${rows} WHERE ${where}`;
  return `SELECT r.profile AS profile FROM ${rows} WHERE ${where} GROUP BY r.profile HAVING count(*) ${COUNT_SQL[count.op]} ${params.add(count.value)}`;
}

const DUCKDB_SET_OPERATORS = { union: 'UNION', intersect: 'INTERSECT', except: 'EXCEPT' };

/**
 * One statement: the leaves shared by the plans as CTEs, then `select` around their set expressions
 * (of the sampled profiles only, with a sample).
 */
function printSets(plans: SetPlan[], workspaceId: string, select: (sets: string[], params: Params) => string, sample?: Sample): CompiledQuery {
  const params = new Params();
  const all: SetPlan = plans.length === 1 ? plans[0]! : { kind: 'union', inputs: plans };
  const links = new AnonymousLinks();
  const printer = new SetPrinter(all, (scan, within) => leafSql(scan, workspaceId, params, links, sample, within), DUCKDB_SET_OPERATORS, { restrict: true });
  const sets = plans.map((plan) => printer.set(plan));
  const outer = select(sets, params);
  return { sql: `${printer.withClause(links.ctes())}${outer}`, params: params.values };
}

function print(plan: SetPlan, workspaceId: string, select: (set: string, params: Params) => string, sample?: Sample): CompiledQuery {
  return printSets([plan], workspaceId, ([set], params) => select(set!, params), sample);
}

/** `SELECT count(*) AS count`: the audience size, or of its sampled part. */
export function printCount(plan: SetPlan, workspaceId: string, sample?: Sample): CompiledQuery {
  return print(plan, workspaceId, (set) => `SELECT count(*) AS count FROM (\n  ${set}\n) AS audience`, sample);
}

/** A profile's value for a breakdown: the joins that find it and its expression. */
function breakdownValue(breakdown: Breakdown, w: string, params: Params): { join: string; value: string } {
  switch (breakdown.kind) {
    case 'first_touch_channel':
      // The page views of the audience's visitors only (finding every profile's first touch grew with the workspace, not the audience).
      return {
        join: `LEFT JOIN (${firstTouches('SELECT profile FROM audience', w)}) AS t ON t.profile = a.profile`,
        value: `coalesce(t.value, ${params.add(NON_ATTRIBUTED)})`,
      };
    case 'trait': {
      const path = params.add(jsonPointer(breakdown.path));
      return {
        join: `LEFT JOIN persons p ON p.workspace_id = ${w} AND p.person_key = a.profile`,
        // A string as itself, another scalar (or an object) as its JSON text, JSON null as absent.
        value: `json_extract_string(p.traits, ${path})`,
      };
    }
    case 'payments_status': {
      const table = breakdown.entity === 'subscription' ? 'subscriptions' : 'invoices';
      return {
        join: `LEFT JOIN (SELECT coalesce(c.person_key, v.person_key, -c.visitor_key) AS profile, arg_max(x.status, x.created_at) AS status
    FROM ${table} x
      JOIN payment_customers c ON c.workspace_id = x.workspace_id AND c.customer_id = x.customer_id
      LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = c.visitor_key
    WHERE x.workspace_id = ${w} GROUP BY 1) AS t ON t.profile = a.profile`,
        value: 't.status',
      };
    }
  }
}

/**
 * The audience's profiles per value of `breakdown`, most first, at most BREAKDOWN_TOP rows:
 * `{ value, count, total }`, total being the audience size.
 */
export function printBreakdown(plan: SetPlan, workspaceId: string, breakdown: Breakdown): CompiledQuery {
  return print(plan, workspaceId, (set, params) => {
    const { join, value } = breakdownValue(breakdown, params.add(workspaceId), params);
    return `SELECT value, count(*) AS count, sum(count(*)) OVER () AS total
FROM (WITH audience AS MATERIALIZED (\n  ${set}\n)\n  SELECT ${value} AS value FROM audience AS a\n  ${join}) AS b
GROUP BY value
ORDER BY count DESC, value NULLS LAST
LIMIT ${BREAKDOWN_TOP}`;
  });
}

/** The profiles of any of `plans` per membership mask (bit i: in plans[i]): `{ mask, count }`. */
export function printOverlap(plans: SetPlan[], workspaceId: string): CompiledQuery {
  return printSets(plans, workspaceId, (sets) => {
    const tagged = sets.map((set, i) => `SELECT profile, ${2 ** i} AS bit FROM (\n  ${set}\n) AS s${i}`).join('\n  UNION ALL ');
    return `SELECT mask, count(*) AS count FROM (
  SELECT profile, bit_or(bit) AS mask FROM (\n  ${tagged}\n  ) AS tagged GROUP BY profile
) AS profiles GROUP BY mask`;
  });
}

/** The members as snapshot rows `{ profile, person_id, visitor_id, external_id, email }`, by profile. */
export function printMembers(plan: SetPlan, workspaceId: string): CompiledQuery {
  return print(plan, workspaceId, (set, params) => {
    const w = params.add(workspaceId);
    return `SELECT a.profile, p.person_id, v.visitor_id, p.external_id, p.email
FROM (\n  ${set}\n) AS a
  LEFT JOIN persons p ON p.workspace_id = ${w} AND p.person_key = a.profile
  LEFT JOIN visitors v ON v.workspace_id = ${w} AND v.visitor_key = -a.profile
ORDER BY a.profile`;
  });
}

/** The members' public ids, by person_id then visitor_id (people first): the same rows from a directory read in place and from its import. */
export function printMembersByIds(plan: SetPlan, workspaceId: string): CompiledQuery {
  const query = printMembers(plan, workspaceId);
  return {
    sql: `SELECT person_id, visitor_id, external_id, email FROM (${query.sql}) AS members ORDER BY person_id NULLS LAST, visitor_id`,
    params: query.params,
  };
}

/** `SELECT profile`: the members' profiles alone, for `INSERT … SELECT` of a snapshot inside the database. */
export function printProfiles(plan: SetPlan, workspaceId: string): CompiledQuery {
  return print(plan, workspaceId, (set) => `SELECT profile FROM (\n  ${set}\n) AS audience`);
}

// The revenue report (criteria/report.ts): payments and refunds per bucket and group.

/** A customer's profile: its person, else its visitor's person, else minus its visitor (as customerRows). */
const CUSTOMER_PROFILE = 'coalesce(c.person_key, v.person_key, -c.visitor_key)';

/** Each paying profile's first payment, over its customers (decisions §10: no touch after it counts). */
function firstPayments(w: string): string {
  return `SELECT ${CUSTOMER_PROFILE} AS profile, min(m.ts) AS first_paid
      FROM (${paymentsMoney(w)}) m
        JOIN payment_customers c ON c.workspace_id = ${w} AND c.customer_id = m.customer_id
        LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = c.visitor_key
      GROUP BY 1`;
}

/**
 * Rows (profile, value) for the profiles of `profiles` (a statement): the channel category of
 * the first touch, the earliest page view of the profile's visitors (an anonymous profile's own,
 * those linked to its person now) at or before its first payment; none without one.
 */
function firstTouches(profiles: string, w: string): string {
  return `SELECT x.profile, arg_min(pv.channel_category, (pv.ts, pv.pageview_id)) AS value
    FROM (SELECT -profile AS visitor_key, profile FROM (${profiles}) WHERE profile < 0
      UNION ALL
      SELECT visitor_key, person_key FROM visitors WHERE workspace_id = ${w} AND person_key IN (${profiles})) AS x
      JOIN pageviews pv ON pv.visitor_key = x.visitor_key
      LEFT JOIN (${firstPayments(w)}) fp ON fp.profile = x.profile
    WHERE pv.workspace_id = ${w} AND (fp.first_paid IS NULL OR pv.ts <= fp.first_paid)
    GROUP BY x.profile`;
}

/** GET /people's first touches (Printer.firstTouches). */
export function printFirstTouches(workspaceId: string, profiles: number[]): CompiledQuery {
  const params = new Params();
  const w = params.add(workspaceId);
  const listed = `SELECT unnest(CAST(CAST(${params.add(JSON.stringify(profiles))} AS JSON) AS BIGINT[])) AS profile`;
  return { sql: firstTouches(listed, w), params: params.values };
}

/** The payments of the workspace, every one once (`money_id` its id): paid invoices, one-time payments (no stored invoice). */
function paymentsMoney(w: string): string {
  return `SELECT 'i' || invoice_id AS money_id, customer_id, paid_at AS ts, amount_paid AS amount, lower(currency) AS currency, true AS is_payment
    FROM invoices WHERE workspace_id = ${w} AND amount_paid > 0 AND paid_at IS NOT NULL
    UNION ALL
    SELECT 'p' || payment_id, customer_id, paid_at, amount, lower(currency), true
    FROM one_time_payments WHERE workspace_id = ${w} AND paid_at IS NOT NULL AND currency IS NOT NULL`;
}

/** The money of the workspace, every row once (`money_id` its id): payments, and refunds not withdrawn. */
function revenueMoney(w: string): string {
  return `${paymentsMoney(w)}
    UNION ALL
    SELECT 'r' || object_id, customer_id, ts, amount, lower(currency), false
    FROM payment_events WHERE workspace_id = ${w} AND kind = 'refund_issued' AND amount IS NOT NULL AND currency IS NOT NULL`;
}

const DUCKDB_TRUNC: Record<ReportInterval, string> = { day: "'day'", week: "'week'", month: "'month'" };

/**
 * Each paying customer's group (first_touch, or a trait whatever the model): its first touch's
 * column (the earliest page view of its profile at or before the profile's first payment,
 * decisions §10), or its person's trait; `found` false: Non-attributed.
 */
function revenueGroups(report: ReportPlan, w: string, params: Params): string {
  if ('trait' in report.group) {
    const path = params.add(jsonPointer(report.group.trait));
    return `SELECT p.customer_id, p.person_key IS NOT NULL AS found, json_extract_string(ps.traits, ${path}) AS grp
    FROM payers p LEFT JOIN persons ps ON ps.workspace_id = ${w} AND ps.person_key = p.person_key`;
  }
  const column = `pv."${TOUCH_DIMENSIONS[report.group.touch]}"`;
  return `SELECT p.customer_id, t.touch IS NOT NULL AS found, t.touch.v AS grp
    FROM payers p LEFT JOIN (
      SELECT customer_id, arg_min({'v': v}, (ts, pageview_id)) AS touch FROM (
        SELECT t.customer_id, pv.ts, pv.pageview_id, ${column} AS v
        FROM pageviews pv JOIN (
          SELECT p.customer_id, p.touch_until, v.visitor_key FROM payers p
            JOIN (SELECT visitor_key, coalesce(person_key, -visitor_key) AS profile FROM visitors WHERE workspace_id = ${w}) v ON v.profile = p.profile
        ) t ON t.visitor_key = pv.visitor_key
        WHERE pv.workspace_id = ${w}
        AND (t.touch_until IS NULL OR pv.ts <= t.touch_until)
        UNION ALL
        SELECT p.customer_id, pv.ts, pv.pageview_id, ${column}
        FROM payers p JOIN frozen_touches pv ON pv.workspace_id = ${w} AND pv.profile = p.profile
        WHERE p.touch_until IS NULL OR pv.ts <= p.touch_until)
      GROUP BY customer_id
    ) t ON t.customer_id = p.customer_id`;
}

/** The money rows (revenueMoney), converted to `currency` when there is one. */
function moneyIn(currency: string | null, w: string, params: Params): string {
  return currency
    ? duckdbConverted(revenueMoney(w), params.add(currency), params.add(10 ** minorDigits(currency)), w, (v) => params.add(v))
    : revenueMoney(w);
}

/**
 * The revenue report's CTEs ending in `report_rows`: each money row in the range (once, or per
 * touch value sharing it) with its group, its profile, and `attributed` false when Non-attributed;
 * `restrict` a further condition on `in_range`'s `m`.
 */
function revenueRowsCtes(report: ReportPlan, w: string, params: Params, restrict: string): string[] {
  const split = perPayment(report);
  const [from, to] = [params.timestamp(report.from), params.timestamp(report.to)];
  const reportMoney = moneyIn(report.currency ?? null, w, params);
  // money_key: the row's number in this statement, a cheaper key than its id; customer_key its customer's least
  // one; first_paid: the customer's first payment ever. In the anchor's window pass when there is one (one sort).
  const customer = split ? 'PARTITION BY customer_id ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING' : 'PARTITION BY customer_id';
  const money = `(SELECT *,${split ? ` ${DUCKDB_ANCHOR},` : ''} min(money_key) OVER (${customer}) AS customer_key,
      min(ts) FILTER (WHERE is_payment) OVER (${customer}) AS first_paid
    FROM (SELECT *, row_number() OVER () AS money_key FROM (${reportMoney})))`;
  // A deleted payer's customers keep the profile they were attributed through (frozen_payers).
  return [`customers AS (
    SELECT c.customer_id, coalesce(c.person_key, v.person_key) AS person_key, coalesce(${CUSTOMER_PROFILE}, f.profile) AS profile
    FROM payment_customers c LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = c.visitor_key
      LEFT JOIN frozen_payers f ON f.workspace_id = ${w} AND f.customer_id = c.customer_id
    WHERE c.workspace_id = ${w}
  )`,
    // touch_until: the first payment of its profile (a customer without one: its own).
    `in_range AS MATERIALIZED (
    SELECT m.money_key, m.customer_id, m.customer_key, m.ts, m.amount, m.currency, m.is_payment, m.first_paid, m.touch_until,${split ? ' m.anchor,' : ''}
      m.person_key, m.profile
    FROM (SELECT m.*, c.person_key, c.profile,
        min(m.first_paid) OVER (PARTITION BY c.profile, CASE WHEN c.profile IS NULL THEN m.customer_key END) AS touch_until
      FROM ${money} m LEFT JOIN customers c ON c.customer_id = m.customer_id) m
    WHERE m.ts >= ${from} AND m.ts < ${to}${restrict}
  )`,
    ...(split ? perPaymentRows(report, split, w, params)
      : ['payers AS (SELECT DISTINCT customer_id, person_key, profile, first_paid, touch_until FROM in_range)',
        `report_rows AS (
    SELECT r.money_key, r.customer_id, r.customer_key, r.amount, r.currency, r.is_payment, r.ts, r.first_paid, r.profile, coalesce(g.found, false) AS attributed,
      CASE WHEN g.found THEN g.grp ELSE ${params.add(NON_ATTRIBUTED)} END AS grp
    FROM in_range r LEFT JOIN (${revenueGroups(report, w, params)}) g ON g.customer_id = r.customer_id
  )`])];
}

/**
 * The revenue report as rows at four levels, `level` being grouping(bucket, grp, currency): 0 money
 * per bucket, group and currency; 1 counts per bucket and group; 6 money per currency; 7 counts.
 * A customer's profile is its person, else its visitor's person, else minus its visitor (as in
 * customerRows); its page views are those of its profile's visitors. Customers are counted by
 * grouping per customer first: DuckDB's DISTINCT aggregates over grouping sets cost far more. The
 * totals read `in_range`, each money row once (a refund split over groups counts once).
 */
export function printRevenue(report: ReportPlan, workspaceId: string): CompiledQuery {
  const params = new Params();
  const links = new AnonymousLinks();
  const printer = report.audience
    ? new SetPrinter(report.audience, (scan, within) => leafSql(scan, workspaceId, params, links, undefined, within), DUCKDB_SET_OPERATORS, { restrict: true })
    : null;
  const audience = printer && report.audience ? `\n      AND m.profile IN (${printer.set(report.audience)})` : '';
  const w = params.add(workspaceId);
  const from = params.timestamp(report.from);
  const bucket = (ts: string) => `date_trunc(${DUCKDB_TRUNC[report.interval]}, ${ts})`;
  const ctes = [...links.ctes(), ...(printer?.ctes ?? []), ...revenueRowsCtes(report, w, params, audience)];
  const perCustomer = `sum(amount) FILTER (WHERE is_payment) AS paid, sum(amount) FILTER (WHERE NOT is_payment) AS refunded,
    count(*) FILTER (WHERE NOT is_payment) AS refunds, bool_or(is_payment) AS paying,
    bool_or(is_payment AND first_paid >= ${from} AND ${bucket('first_paid')} = ${bucket('ts')}) AS is_first`;
  return {
    sql: `WITH ${ctes.join(',\n')}
SELECT level, strftime(bucket, '%Y-%m-%d') AS bucket, grp, currency, coalesce(sum(paid), 0) AS paid, coalesce(sum(refunded), 0) AS refunded, coalesce(sum(refunds), 0) AS refund_count,
  count(*) FILTER (WHERE paying) AS paying, count(*) FILTER (WHERE is_first) AS new_paying
FROM (
  SELECT grouping(bucket, grp, currency) AS level, bucket, grp, currency, ${perCustomer}
  FROM (SELECT *, ${bucket('ts')} AS bucket FROM report_rows)
  GROUP BY GROUPING SETS ((bucket, grp, currency, customer_key), (bucket, grp, customer_key))
  UNION ALL
  SELECT 6 + grouping(currency), NULL, NULL, currency, ${perCustomer}
  FROM in_range GROUP BY GROUPING SETS ((currency, customer_key), (customer_key)))
GROUP BY level, bucket, grp, currency`,
    params: params.values,
  };
}

/** Printer.missingRate: the earliest money row of the range without a rate to convert it to the report's currency. */
export function printMissingRate(report: ReportPlan, workspaceId: string): CompiledQuery {
  const params = new Params();
  const w = params.add(workspaceId);
  const [from, to] = [params.timestamp(report.from), params.timestamp(report.to)];
  return { sql: duckdbMissingRate(revenueMoney(w), params.add(report.currency ?? ''), from, to, w, (v) => params.add(v)), params: params.values };
}

/**
 * The statements that freeze the attribution of payers about to lose their person (privacy deletes,
 * docs/privacy.md), touches first: the profile of each listed customer that has one and is not
 * frozen yet, and that profile's page views up to its customers' latest money row. Run in one
 * transaction, so a retry finds them frozen or not at all.
 */
export function printFreeze(workspaceId: string, customerIds: string[]): CompiledQuery[] {
  const statement = (print: (w: string, fresh: string) => string): CompiledQuery => {
    const params = new Params();
    const w = params.add(workspaceId);
    const fresh = `SELECT c.customer_id, ${CUSTOMER_PROFILE} AS profile
      FROM payment_customers c LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = c.visitor_key
      WHERE c.workspace_id = ${w} AND c.customer_id IN (SELECT unnest(CAST(CAST(${params.add(JSON.stringify(customerIds))} AS JSON) AS VARCHAR[])))
        AND ${CUSTOMER_PROFILE} IS NOT NULL AND c.customer_id NOT IN (SELECT customer_id FROM frozen_payers WHERE workspace_id = ${w})`;
    return { sql: print(w, fresh), params: params.values };
  };
  return [
    statement((w, fresh) => `INSERT INTO frozen_touches (workspace_id, profile, pageview_id, ts, path, referrer_host, medium, campaign, channel, channel_category)
    SELECT ${w}, f.profile, pv.pageview_id, pv.ts, pv.path, pv.referrer_host, pv.medium, pv.campaign, pv.channel, pv.channel_category
    FROM (SELECT p.profile, max(m.ts) AS until FROM (${fresh}) p JOIN (${revenueMoney(w)}) m ON m.customer_id = p.customer_id GROUP BY p.profile) f
      JOIN visitors vs ON vs.workspace_id = ${w} AND coalesce(vs.person_key, -vs.visitor_key) = f.profile
      JOIN pageviews pv ON pv.workspace_id = ${w} AND pv.visitor_key = vs.visitor_key
    WHERE pv.ts <= f.until`),
    statement((w, fresh) => `INSERT INTO frozen_payers (workspace_id, customer_id, profile) SELECT ${w}, customer_id, profile FROM (${fresh})`),
  ];
}

/** `report_rows` of a per-payment model: each money row's shares per touch value, Non-attributed without a touch. */
function perPaymentRows(report: ReportPlan, split: { model: TouchModel; touch: TouchDimension }, w: string, params: Params): string[] {
  const column = `pv."${TOUCH_DIMENSIONS[split.touch]}"`;
  return [...duckdbCredits(report, split.model, column, w, (v) => params.add(v)),
    `report_rows AS (
    SELECT r.money_key, r.customer_id, r.customer_key, CASE WHEN c.money_key IS NULL THEN r.amount ELSE c.share END AS amount, r.currency, r.is_payment, r.ts, r.first_paid,
      r.profile, c.money_key IS NOT NULL AS attributed, CASE WHEN c.money_key IS NULL THEN ${params.add(NON_ATTRIBUTED)} ELSE c.v END AS grp
    FROM in_range r LEFT JOIN credits c ON c.money_key = r.money_key
  )`];
}

/** The lift report's statement (Printer.lift): under a model, the attributed rows of its revenue report. */
export function printLift(plan: LiftPlan, workspaceId: string): CompiledQuery {
  const params = new Params();
  const w = params.add(workspaceId);
  const report = liftAttribution(plan);
  const [from, to] = [params.timestamp(plan.from), params.timestamp(plan.to)];
  const sources = report
    ? { ctes: revenueRowsCtes(report, w, params, '\n      AND m.profile IN (SELECT profile FROM members)'),
      money: 'SELECT profile, currency, amount, is_payment FROM report_rows WHERE attributed' }
    : { ctes: [], money: `SELECT c.profile, m.currency, m.amount, m.is_payment
      FROM (${moneyIn(plan.currency, w, params)}) m JOIN (SELECT c.customer_id, ${CUSTOMER_PROFILE} AS profile
        FROM payment_customers c LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = c.visitor_key WHERE c.workspace_id = ${w}) c ON c.customer_id = m.customer_id
      WHERE m.ts >= ${from} AND m.ts < ${to} AND c.profile IN (SELECT profile FROM members)` };
  const sql = duckdbLiftSql(plan, { w, ...sources, bind: (v) => params.add(v) });
  return { sql, params: params.values };
}

/** The DuckDB statements of a plan, over the store's tables (store/duckdb/migrations.ts). */
export const duckdbPrinter: Printer<CompiledQuery> = {
  count: printCount,
  breakdown: printBreakdown,
  overlap: printOverlap,
  members: printMembers,
  membersByIds: printMembersByIds,
  profiles: printProfiles,
  revenue: printRevenue,
  missingRate: printMissingRate,
  freeze: printFreeze,
  firstTouches: printFirstTouches,
  lift: printLift,
};
