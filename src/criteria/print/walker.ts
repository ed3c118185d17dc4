// The dialect-free half of the SQL printers: the walks of a plan, and the decisions about predicates
// that every dialect takes alike. A plan prints as a set expression over its leaf scans (SetPrinter:
// DuckDB) or as a boolean formula over the leaves a profile is in (planFormula: ClickHouse, which
// reads each table once for all its leaves). A dialect (duckdb.ts, clickhouse.ts) spells a leaf
// scan, its predicates and parameters, the set operators or the leaf tests.

import type { LeafScan, SetPlan } from '../plan.js';
import type { Predicate, Scalar } from '../schema.js';

export type SqlParam = string | number | boolean;

/** How a dialect spells the set operators of its set expressions. */
export interface SetOperators {
  union: string;
  intersect: string;
  except: string;
}

/** Operands of one UNION / INTERSECT chain, at most; longer chains nest (see SetPrinter.chain). */
const SET_FAN_IN = 16;

export const scanKey = (scan: LeafScan) => JSON.stringify(scan);

/** How many times each distinct leaf scan appears in the plan. */
export function scanUses(plan: SetPlan, uses = new Map<string, number>()): Map<string, number> {
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

/** Plans with more leaf uses than this print without restrictions (see SetPrinter): one CTE per set operation would grow too. */
const RESTRICTED_MAX_LEAVES = 32;

const PAYMENTS_TABLES = new Set<LeafScan['table']>(['payment_events', 'subscriptions', 'invoices']);
const paymentsLeaf = (plan: SetPlan) => plan.kind === 'scan' && PAYMENTS_TABLES.has(plan.scan.table);

/**
 * How selective a set operand is likely to be, lower first: a payments leaf (a few rows per paying
 * customer, where page views and events have many per visitor), a scan with filters on its rows,
 * then one bounded in time, then one counted per profile (its grouping is the costly part), then the
 * rest. The first operand of an intersection is computed alone and restricts the others.
 */
function selectivityRank(plan: SetPlan): number {
  if (plan.kind !== 'scan') return 3;
  const scan = plan.scan;
  if (paymentsLeaf(plan)) return -1;
  if ('predicates' in scan) return scan.predicates.length > 0 ? 0 : 3;
  if ('anyOf' in scan && scan.anyOf.every((group) => group.length > 0)) return 0;
  if ('count' in scan && scan.count !== null) return 2;
  return 'range' in scan && (scan.range.from || scan.range.to) ? 1 : 3;
}

/** A set a leaf is evaluated within: its CTE's name, and the CTEs computed once from it. */
export interface Within {
  name: string;
  /** Whether the set is a payments leaf's: its profiles are a few paying customers'. */
  small: boolean;
  /** A MATERIALIZED CTE of `sql` (which reads the set), one per set and `kind`, listed after the set: its name. */
  derive(kind: string, sql: string): string;
}

/**
 * Prints the set expression. A leaf scan used more than once becomes one CTE, computed once; a
 * leaf used once is a subquery in place (DuckDB binds a WITH list one CTE inside the next and
 * stops at about 600 of them, max_expression_depth 1000).
 *
 * With `restrict`, an operand whose result only matters within another set is evaluated within it:
 * what an except subtracts, within its input (P − M = P − (M ∩ P)); an intersection's operands, within
 * its likeliest most selective one. The leaf then keeps only rows of profiles in that set before
 * grouping them, which is most of a leaf's time when the set is small (a not leaf of 1.7 M rows
 * against a few hundred profiles).
 */
export class SetPrinter {
  readonly ctes: string[] = [];
  private readonly derived = new Set<string>();
  private readonly small = new Set<string>();
  private readonly leafNames = new Map<string, string>();
  private readonly uses: Map<string, number>;
  private readonly restricts: boolean;
  private subqueries = 0;
  private sets = 0;

  /**
   * `leafSql` prints a leaf scan as a SELECT of distinct `profile` values, of those in the set
   * `within` (a CTE of `profile`) only when given.
   */
  constructor(
    plan: SetPlan,
    private readonly leafSql: (scan: LeafScan, within?: Within) => string,
    private readonly ops: SetOperators,
    options: { restrict?: boolean } = {},
  ) {
    this.uses = scanUses(plan);
    let leaves = 0;
    for (const n of this.uses.values()) leaves += n;
    this.restricts = (options.restrict ?? false) && leaves <= RESTRICTED_MAX_LEAVES;
  }

  operand(plan: SetPlan, within?: string): string {
    if (plan.kind === 'scan') return `SELECT profile FROM ${this.leaf(plan.scan, within)}`;
    return `SELECT profile FROM (${this.set(plan, within)}) AS q${this.subqueries++}`;
  }

  set(plan: SetPlan, within?: string): string {
    switch (plan.kind) {
      case 'scan':
        return this.operand(plan, within);
      case 'intersect': {
        if (!this.restricts) return this.chain(plan.inputs, this.ops.intersect, within);
        const [first, ...rest] = [...plan.inputs].sort((a, b) => selectivityRank(a) - selectivityRank(b));
        const driver = this.materialize(this.set(first!, within), paymentsLeaf(first!));
        return [`SELECT profile FROM ${driver}`, ...rest.map((p) => this.operand(p, driver))].join(`\n  ${this.ops.intersect} `);
      }
      case 'union':
        return this.chain(plan.inputs, this.ops.union, within);
      case 'except': {
        const minus: SetPlan = plan.minus.length === 1 ? plan.minus[0]! : { kind: 'union', inputs: plan.minus };
        if (!this.restricts) return `${this.operand(plan.input, within)}\n  ${this.ops.except} ${this.operand(minus)}`;
        const input = this.materialize(this.set(plan.input, within), paymentsLeaf(plan.input));
        return `SELECT profile FROM ${input}\n  ${this.ops.except} ${this.operand(minus, input)}`;
      }
    }
  }

  /** A CTE of the set `sql`, computed once (its name); `small` when a payments leaf's. */
  private materialize(sql: string, small: boolean): string {
    const name = `set_${this.sets++}`;
    if (small) this.small.add(name);
    this.ctes.push(`${name} AS MATERIALIZED (\n  ${sql}\n)`);
    return name;
  }

  /**
   * `a OP b OP c …`: DuckDB parses a chain of n operands n levels deep, past its
   * max_expression_depth (1000) at several hundred operands, so longer chains are split into
   * subqueries of at most SET_FAN_IN operands each, nested about log(n) deep.
   */
  private chain(inputs: SetPlan[], op: string, within?: string): string {
    if (inputs.length <= SET_FAN_IN) return inputs.map((p) => this.operand(p, within)).join(`\n  ${op} `);
    const size = Math.ceil(inputs.length / SET_FAN_IN);
    const groups: string[] = [];
    for (let i = 0; i < inputs.length; i += size) {
      const group = inputs.slice(i, i + size);
      groups.push(group.length === 1 ? this.operand(group[0]!, within) : `SELECT profile FROM (${this.chain(group, op, within)}) AS q${this.subqueries++}`);
    }
    return groups.join(`\n  ${op} `);
  }

  /** A leaf in place, or its CTE when the plan uses it more than once (never a restricted one: its rows differ per set). */
  private leaf(scan: LeafScan, within?: string): string {
    const key = scanKey(scan);
    if (within !== undefined || this.uses.get(key) === 1) {
      return `(\n  ${this.leafSql(scan, within === undefined ? undefined : this.within(within))}\n) AS q${this.subqueries++}`;
    }
    let name = this.leafNames.get(key);
    if (!name) {
      name = `leaf_${this.leafNames.size}`;
      this.leafNames.set(key, name);
      this.ctes.push(`${name} AS (\n  ${this.leafSql(scan)}\n)`);
    }
    return name;
  }

  private within(name: string): Within {
    return {
      name,
      small: this.small.has(name),
      derive: (kind, sql) => {
        const derived = `${name}_${kind}`;
        if (!this.derived.has(derived)) {
          this.derived.add(derived);
          this.ctes.push(`${derived} AS MATERIALIZED (\n  ${sql}\n)`);
        }
        return derived;
      },
    };
  }

  /** The WITH list of the CTEs `first` (which the sets' CTEs may read), then the sets'. */
  withClause(first: string[] = []): string {
    const ctes = [...first, ...this.ctes];
    return ctes.length > 0 ? `WITH ${ctes.join(',\n')}\n` : '';
  }
}

/** A filter over groups of predicates (any group, every predicate of it); none when a group is empty. */
export function anyOfSql(groups: Predicate[][], group: (predicates: Predicate[]) => string): string[] {
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

/** How a dialect tests that a profile is in any / all of some leaves (numbers from planFormula). */
export interface LeafTests {
  any(leaves: number[]): string;
  all(leaves: number[]): string;
}

/**
 * The plan as a boolean formula over its distinct leaf scans, numbered in order of first use.
 * Intersect is AND, union OR, except AND NOT; the leaves of one branch are tested together (one
 * test for an `or` of hundreds of leaves). It is false where no leaf holds (every except has a
 * positive input), so the profiles found in the leaves are all it needs to be evaluated on.
 */
export function planFormula(plan: SetPlan, tests: LeafTests): { formula: string; leaves: LeafScan[] } {
  const { formulas, leaves } = planFormulas([plan], tests);
  return { formula: formulas[0]!, leaves };
}

/** planFormula of several plans over one numbering of their distinct leaves (overlaps read each table once). */
export function planFormulas(plans: SetPlan[], tests: LeafTests): { formulas: string[]; leaves: LeafScan[] } {
  const numbers = new Map<string, number>();
  const leaves: LeafScan[] = [];
  const number = (scan: LeafScan): number => {
    const key = scanKey(scan);
    let n = numbers.get(key);
    if (n === undefined) {
      n = leaves.push(scan) - 1;
      numbers.set(key, n);
    }
    return n;
  };
  const branch = (inputs: SetPlan[], test: 'any' | 'all', op: string): string => {
    const scans = inputs.flatMap((p) => (p.kind === 'scan' ? [number(p.scan)] : []));
    const parts = [...(scans.length > 0 ? [tests[test](scans)] : []), ...inputs.filter((p) => p.kind !== 'scan').map(formula)];
    return parts.length === 1 ? parts[0]! : `(${parts.join(` ${op} `)})`;
  };
  const formula = (p: SetPlan): string => {
    switch (p.kind) {
      case 'scan':
        return tests.any([number(p.scan)]);
      case 'intersect':
        return branch(p.inputs, 'all', 'AND');
      case 'union':
        return branch(p.inputs, 'any', 'OR');
      case 'except':
        return `(${formula(p.input)} AND NOT ${branch(p.minus, 'any', 'OR')})`;
    }
  };
  return { formulas: plans.map(formula), leaves };
}
