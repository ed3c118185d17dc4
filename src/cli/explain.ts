// `explain <criteria.json> --data …`: the criteria tree with each branch's and leaf's distinct
// profile count (each subtree planned and counted on its own), then the SQL and its parameters.

import { type AudienceCriteria, type CriteriaNode, planCriteria, pointer, type SqlParam } from '../criteria/index.js';
import type { AnalyticsStore } from '../store/analytics.js';
import { atOption, type Command, integerOption, type Values } from './args.js';
import { readCriteriaFile } from './criteria-file.js';
import { DATA_HELP, DATA_OPTIONS, openData } from './data.js';
import { describeLeaf } from './describe.js';
import { DEFAULT_BUDGET_MS } from './estimate.js';
import { fmt, type Output } from './output.js';
import { validatedCriteria } from './validated.js';

const HELP = `usage: audiences explain <criteria.json> --data <dir|file.duckdb> [--import] [--at <timestamp>] [--budget <ms>] [--analyze] [--json]

Shows why an audience has its size: the criteria as a tree of and / or / not nodes and leaves
(each leaf in one line), each with its own count of distinct profiles, then the SQL of the whole
audience with its parameters. A subtree's count is the estimate of that subtree alone. A negation
(a not node, or a did_not leaf) shows the size of the set its parent "and" subtracts: for a
did_not leaf, the profiles that did it. With --analyze, also DuckDB's EXPLAIN ANALYZE of the whole
query: the physical plan as it ran, with each operator's time and rows (where the time goes).

${DATA_HELP}

options:
  --data <dir|file.duckdb>  the data (required)
  --workspace <id>          workspace of a database file (default: the one named "analyst")
  --import                  copy a directory into memory instead of reading it in place
  --at <timestamp>          evaluation time (default: now)
  --budget <ms>             budget of each count (default ${DEFAULT_BUDGET_MS}); over it, count is null
  --analyze                 add DuckDB's EXPLAIN ANALYZE profile of the whole query (json: "analyze")
  --json                    print { at, count, tree, sql, params }; tree nodes are
                            { kind: and|or|not|leaf, path, count, negated, description?, children? }
  -h, --help                this help`;

export interface ExplainNode {
  kind: 'and' | 'or' | 'not' | 'leaf';
  /** JSON Pointer of the node in the criteria. */
  path: string;
  /** Distinct profiles of this subtree alone; null past the budget. */
  count: number | null;
  /** The set is subtracted by its parent `and`. */
  negated: boolean;
  description?: string;
  children?: ExplainNode[];
}

async function explainNode(
  analytics: AnalyticsStore, ws: string, node: CriteriaNode, path: string, at: Date, budgetMs: number,
): Promise<ExplainNode> {
  const subtree: AudienceCriteria = { version: 1, root: node };
  const count = await analytics.countWithin(planCriteria(subtree, at), ws, budgetMs);
  if (!('op' in node)) {
    const negated = 'occurrence' in node && node.occurrence.op === 'did_not';
    return { kind: 'leaf', path, count, negated, description: describeLeaf(node) };
  }
  if (node.op === 'not') {
    return { kind: 'not', path, count, negated: true, children: [await explainNode(analytics, ws, node.child, pointer(path, 'child'), at, budgetMs)] };
  }
  const children: ExplainNode[] = [];
  for (const [i, child] of node.children.entries()) {
    children.push(await explainNode(analytics, ws, child, pointer(pointer(path, 'children'), i), at, budgetMs));
  }
  return { kind: node.op, path, count, negated: false, children };
}

const countText = (n: ExplainNode) => (n.count === null ? 'over budget' : fmt(n.count));

function treeLines(node: ExplainNode, prefix: string, branch: string, lines: string[]): void {
  const label = node.kind === 'leaf' ? node.description! : node.kind === 'not' ? 'not (subtracted)' : node.kind;
  const negation = node.kind === 'leaf' && node.negated ? '  (subtracted: profiles who did it)' : '';
  lines.push(`${prefix}${branch}${label}  [${countText(node)}]${negation}`);
  const children = node.children ?? [];
  const inner = prefix + (branch === '' ? '' : branch === '└─ ' ? '   ' : '│  ');
  children.forEach((c, i) => treeLines(c, inner, i === children.length - 1 ? '└─ ' : '├─ ', lines));
}

function paramText(p: SqlParam): string {
  return typeof p === 'string' ? `'${p}'` : String(p);
}

async function run([file]: string[], values: Values, out: Output): Promise<number> {
  const criteria = readCriteriaFile(file!);
  const at = atOption(values, 'explain');
  const budgetMs = integerOption(values, 'budget', DEFAULT_BUDGET_MS, 'explain');
  const data = await openData(values, 'explain', criteria, out);
  try {
    const valid = await validatedCriteria(out, data, criteria, file!, values.json === true);
    if (!valid) return 1;
    const { analytics } = data.stores;
    const tree = await explainNode(analytics, data.workspaceId, valid.root, '/root', at, budgetMs);
    const plan = planCriteria(valid, at);
    const query = await analytics.countQuery(plan, data.workspaceId);
    const analyze = values.analyze === true
      ? await analytics.profileWithin(plan, data.workspaceId, budgetMs) ?? `over budget (${budgetMs} ms)`
      : undefined;
    if (values.json) {
      out.json({ valid: true, at: at.toISOString(), count: tree.count, tree, sql: query.sql, params: query.params, analyze });
      return 0;
    }
    const lines: string[] = [];
    treeLines(tree, '', '', lines);
    out.print(`audience at ${at.toISOString()}: ${countText(tree)} profiles`);
    out.print();
    for (const line of lines) out.print(line);
    out.print();
    out.print('SQL:');
    out.print(query.sql);
    out.print();
    out.print('parameters:');
    query.params.forEach((p, i) => out.print(`  $${i + 1} = ${paramText(p)}`));
    if (analyze !== undefined) {
      out.print();
      out.print('EXPLAIN ANALYZE:');
      out.print(analyze);
    }
    return 0;
  } finally {
    await data.close();
  }
}

export const explain: Command = {
  name: 'explain',
  summary: 'the criteria tree with per-branch and per-leaf counts, and the SQL',
  help: HELP,
  options: { ...DATA_OPTIONS, budget: { type: 'string' }, analyze: { type: 'boolean' } },
  positionals: ['criteria.json'],
  run,
};
