// The DuckDB printer: a plan → one SQL statement plus its bound parameters. The only place that
// writes criteria SQL; user values only ever become `$n` parameters, identifiers come from the
// whitelists in schema.ts. A second dialect is a second printer over the same plan.
//
// A profile is an integer: a person's `person_key`, or minus the `visitor_key` of an anonymous
// visitor (keys are positive). The store's tables (store/migrations.ts) provide the columns used.

import { pointer } from './errors.js';
import type { LeafScan, SetPlan, TimeRange } from './plan.js';
import type { Count, Predicate, PredicateOp, Scalar } from './schema.js';
import { NEGATED_OPS, PAGEVIEW_FIELDS, PAYMENTS_FIELDS, PAYLOAD_PREFIX } from './schema.js';

export type SqlParam = string | number | boolean;

export interface CompiledQuery {
  sql: string;
  params: SqlParam[];
}

class Params {
  readonly values: SqlParam[] = [];
  private readonly index = new Map<string, string>();

  /** A placeholder for `value`; equal values share one. */
  add(value: SqlParam): string {
    const key = `${typeof value}:${String(value)}`;
    let ref = this.index.get(key);
    if (!ref) {
      this.values.push(value);
      ref = `$${this.values.length}`;
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

/** A typed column, or a JSON value addressed by a pointer into a JSON column. */
type Target = { column: string } | { json: string; pointer: string };

function jsonPointer(dotted: string): string {
  return dotted.split('.').reduce(pointer, '');
}

/**
 * SQL for a comparison of the target with one scalar, false where the types differ. For JSON,
 * parsing the properties document is the cost, so each check parses it once where it can: equality
 * compares the extracted value with the value's own JSON text; a number is read from the extracted
 * JSON text, which casts only when it is a JSON number (a JSON string keeps its quotes); string
 * comparisons check the JSON type only on rows whose text already matched.
 */
function compare(target: Target, op: PredicateOp, value: Scalar, params: Params): string {
  const p = params.add(value);
  const text = TEXT_FUNCTION[op];
  if ('column' in target) {
    return text ? `${text}(lower(${target.column}), lower(${p}))` : `${target.column} ${ORDERED[op]} ${p}`;
  }
  const path = params.add(target.pointer);
  if (typeof value === 'number') return `${jsonNumber(target, path)} ${ORDERED[op]} ${p}`;
  if (op === '=') return `${jsonValue(target, path)} = to_json(${p})`;
  const str = `json_extract_string(${target.json}, ${path})`;
  const match = text ? `${text}(lower(${str}), lower(${p}))` : `${str} ${ORDERED[op]} ${p}`;
  return then(match, `json_type(${target.json}, ${path}) = 'VARCHAR'`);
}

const jsonValue = (target: { json: string }, path: string) => `json_extract(${target.json}, ${path})`;
const jsonNumber = (target: { json: string }, path: string) => `TRY_CAST(CAST(${jsonValue(target, path)} AS VARCHAR) AS DOUBLE)`;

/** `in` over a JSON value: one parse for the numbers, one for the strings and booleans. */
function jsonIn(target: { json: string; pointer: string }, values: Scalar[], params: Params): string {
  const path = params.add(target.pointer);
  const numbers = values.filter((v) => typeof v === 'number').map((v) => params.add(v));
  const others = values.filter((v) => typeof v !== 'number').map((v) => `to_json(${params.add(v)})`);
  const parts: string[] = [];
  if (numbers.length > 0) parts.push(`${jsonNumber(target, path)} IN (${numbers.join(', ')})`);
  if (others.length > 0) parts.push(`${jsonValue(target, path)} IN (${others.join(', ')})`);
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

/** Properties-document parses a payload predicate costs: two for string ordering and text ops. */
function payloadCost(predicate: Predicate): number {
  return typeof predicate.value === 'string' && !['=', '!='].includes(predicate.op) ? 2 : 1;
}

/** Payload predicates, cheapest first, each evaluated only on the rows the previous ones kept. */
function payloadSql(predicates: Predicate[], params: Params): string {
  const sorted = [...predicates].sort((a, b) => payloadCost(a) - payloadCost(b));
  const parts = sorted.map((p) => predicateSql({ json: 'e.properties', pointer: jsonPointer(p.field.slice(PAYLOAD_PREFIX.length)) }, p, params));
  return parts.reduceRight((rest, part) => then(part, rest));
}

/** A filter over groups of predicates (any group, every predicate of it); none when a group is empty. */
function anyOfSql(groups: Predicate[][], group: (predicates: Predicate[]) => string): string[] {
  if (groups.some((g) => g.length === 0)) return [];
  const merged = mergeEqualities(groups);
  const parts = (merged ? [[merged]] : groups).map(group);
  return parts.length === 1 ? parts : [`(${parts.map((p) => `(${p})`).join(' OR ')})`];
}

/** Groups that are each one `=` or `in` on the same field are one `in` (what a person writes by hand). */
function mergeEqualities(groups: Predicate[][]): Predicate | null {
  if (groups.length < 2) return null;
  const field = groups[0]![0]!.field;
  const values: Scalar[] = [];
  for (const g of groups) {
    const p = g[0]!;
    if (g.length !== 1 || p.field !== field || (p.op !== '=' && p.op !== 'in')) return null;
    values.push(...(Array.isArray(p.value) ? p.value : [p.value as Scalar]));
  }
  return { field, op: 'in', value: values };
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

/** Rows of one leaf as `profile` values (with repeats), before counting. */
function scanRows(scan: LeafScan, ws: string, params: Params): string {
  const w = params.add(ws);
  const where: string[] = [];
  switch (scan.table) {
    case 'events': {
      where.push(`e.workspace_id = ${w}`, `e.event_name = ${params.add(scan.name)}`, ...rangeSql('e.ts', scan.range, params));
      where.push(...anyOfSql(scan.anyOf, (group) => payloadSql(group, params)));
      const conditions = where.join('\n      AND ');
      // Most events carry their person; only the others need the visitor's link. With payload
      // filters the rows are filtered once, then split: JSON extraction is most of such a leaf's
      // time (EXPLAIN ANALYZE at 100 M events), and the two branches would each scan and extract.
      if (scan.anyOf.length > 0) {
        return `WITH matched AS MATERIALIZED (SELECT e.person_key, e.visitor_key FROM events e
    WHERE ${conditions})
    SELECT m.person_key AS profile FROM matched m WHERE m.person_key IS NOT NULL
    UNION ALL
    SELECT coalesce(v.person_key, -m.visitor_key) AS profile
    FROM matched m LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = m.visitor_key
    WHERE m.person_key IS NULL`;
      }
      return `SELECT e.person_key AS profile FROM events e
    WHERE ${conditions}
      AND e.person_key IS NOT NULL
    UNION ALL
    SELECT coalesce(v.person_key, -e.visitor_key) AS profile
    FROM events e LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = e.visitor_key
    WHERE ${conditions}
      AND e.person_key IS NULL`;
    }
    case 'pageviews':
      where.push(`pv.workspace_id = ${w}`, ...rangeSql('pv.ts', scan.range, params));
      where.push(...anyOfSql(scan.anyOf, (group) =>
        group.map((p) => predicateSql(columnTarget('pv', p.field, PAGEVIEW_FIELDS), p, params)).join(' AND ')));
      return `SELECT coalesce(v.person_key, -pv.visitor_key) AS profile
    FROM pageviews pv LEFT JOIN ${linkedVisitors(w)} v ON v.visitor_key = pv.visitor_key
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

function leafSql(scan: LeafScan, ws: string, params: Params): string {
  const rows = scanRows(scan, ws, params);
  const count = 'count' in scan ? scan.count : null;
  if (!count) return `SELECT DISTINCT profile FROM (${rows}) WHERE profile IS NOT NULL`;
  return `SELECT profile FROM (${rows}) WHERE profile IS NOT NULL GROUP BY profile HAVING count(*) ${COUNT_SQL[count.op]} ${params.add(count.value)}`;
}

/** Operands of one UNION / INTERSECT chain, at most; longer chains nest (see SetPrinter.chain). */
const SET_FAN_IN = 16;

const scanKey = (scan: LeafScan) => JSON.stringify(scan);

/** How many times each distinct leaf scan appears in the plan. */
function scanUses(plan: SetPlan, uses = new Map<string, number>()): Map<string, number> {
  switch (plan.kind) {
    case 'scan':
      uses.set(scanKey(plan.scan), (uses.get(scanKey(plan.scan)) ?? 0) + 1);
      break;
    case 'intersect':
    case 'union':
      for (const input of plan.inputs) scanUses(input, uses);
      break;
    case 'except':
      for (const input of [plan.input, ...plan.minus]) scanUses(input, uses);
      break;
  }
  return uses;
}

/**
 * Prints the set expression. A leaf scan used more than once becomes one CTE, computed once; a
 * leaf used once is a subquery in place (DuckDB binds a WITH list one CTE inside the next and
 * stops at about 600 of them, max_expression_depth 1000).
 */
class SetPrinter {
  readonly ctes: string[] = [];
  private readonly leafNames = new Map<string, string>();
  private readonly uses: Map<string, number>;
  private subqueries = 0;

  constructor(plan: SetPlan, private readonly ws: string, readonly params: Params) {
    this.uses = scanUses(plan);
  }

  operand(plan: SetPlan): string {
    if (plan.kind === 'scan') return `SELECT profile FROM ${this.leaf(plan.scan)}`;
    return `SELECT profile FROM (${this.set(plan)}) AS q${this.subqueries++}`;
  }

  set(plan: SetPlan): string {
    switch (plan.kind) {
      case 'scan':
        return this.operand(plan);
      case 'intersect':
        return this.chain(plan.inputs, 'INTERSECT');
      case 'union':
        return this.chain(plan.inputs, 'UNION');
      case 'except': {
        const minus: SetPlan = plan.minus.length === 1 ? plan.minus[0]! : { kind: 'union', inputs: plan.minus };
        return `${this.operand(plan.input)}\n  EXCEPT ${this.operand(minus)}`;
      }
    }
  }

  /**
   * `a OP b OP c …`: DuckDB parses a chain of n operands n levels deep, past its
   * max_expression_depth (1000) at several hundred operands, so longer chains are split into
   * subqueries of at most SET_FAN_IN operands each, nested about log(n) deep.
   */
  private chain(inputs: SetPlan[], op: 'UNION' | 'INTERSECT'): string {
    if (inputs.length <= SET_FAN_IN) return inputs.map((p) => this.operand(p)).join(`\n  ${op} `);
    const size = Math.ceil(inputs.length / SET_FAN_IN);
    const groups: string[] = [];
    for (let i = 0; i < inputs.length; i += size) {
      const group = inputs.slice(i, i + size);
      groups.push(group.length === 1 ? this.operand(group[0]!) : `SELECT profile FROM (${this.chain(group, op)}) AS q${this.subqueries++}`);
    }
    return groups.join(`\n  ${op} `);
  }

  private leaf(scan: LeafScan): string {
    const key = scanKey(scan);
    if (this.uses.get(key) === 1) return `(\n  ${leafSql(scan, this.ws, this.params)}\n) AS q${this.subqueries++}`;
    let name = this.leafNames.get(key);
    if (!name) {
      name = `leaf_${this.leafNames.size}`;
      this.leafNames.set(key, name);
      this.ctes.push(`${name} AS (\n  ${leafSql(scan, this.ws, this.params)}\n)`);
    }
    return name;
  }

  withClause(): string {
    return this.ctes.length > 0 ? `WITH ${this.ctes.join(',\n')}\n` : '';
  }
}

/** One statement: the shared leaves' CTEs, then `select` around the set expression. */
function print(plan: SetPlan, workspaceId: string, select: (set: string, params: Params) => string): CompiledQuery {
  const printer = new SetPrinter(plan, workspaceId, new Params());
  const set = printer.set(plan);
  const outer = select(set, printer.params);
  return { sql: `${printer.withClause()}${outer}`, params: printer.params.values };
}

/** `SELECT count(*) AS count`: the audience size. */
export function printCount(plan: SetPlan, workspaceId: string): CompiledQuery {
  return print(plan, workspaceId, (set) => `SELECT count(*) AS count FROM (\n  ${set}\n) AS audience`);
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

/** `SELECT profile`: the members' profiles alone, for `INSERT … SELECT` of a snapshot inside the database. */
export function printProfiles(plan: SetPlan, workspaceId: string): CompiledQuery {
  return print(plan, workspaceId, (set) => `SELECT profile FROM (\n  ${set}\n) AS audience`);
}
