// `members <criteria.json> --data … --out file.parquet|csv|arrow`: the audience's members.

import { writeFileSync } from 'node:fs';
import { extname } from 'node:path';
import { planCriteria, type SetPlan } from '../criteria/index.js';
import { member } from '../audiences/schema.js';
import type { AnalyticsStore } from '../store/analytics.js';
import { atOption, type Command, stringOption, type Values } from './args.js';
import { readCriteriaFile } from './criteria-file.js';
import { DATA_HELP, DATA_OPTIONS, openData } from './data.js';
import { CliError, oneLine, UsageError } from './errors.js';
import { fmt, type Output, seconds } from './output.js';
import { validatedCriteria } from './validated.js';

/** The member columns written: the members' public ids (the API's member), without the internal profile key. */
export const MEMBER_COLUMNS = member.keyof().options;
const FORMATS = { '.parquet': 'parquet', '.csv': 'csv', '.arrow': 'arrow' } as const;

const HELP = `usage: audiences members <criteria.json> --data <dir|file.duckdb> --out <file.parquet|file.csv|file.arrow> [--import] [--at <timestamp>] [--json]

Writes the audience's members, one row per profile, with the
columns ${MEMBER_COLUMNS.join(', ')}: a person has person_id (and
external_id, email when known); an anonymous visitor has only visitor_id. Rows are ordered by
person_id, then visitor_id (people first). The format follows the
extension of --out: parquet and csv through DuckDB's COPY, arrow as an Arrow IPC file.
Invalid criteria print their faults and exit 1. No budget applies.

${DATA_HELP}

options:
  --data <dir|file.duckdb>  the data (required)
  --out <file>              the output file, overwritten (required)
  --workspace <id>          workspace of a database file (default: the one named "analyst")
  --import                  copy a directory into memory instead of reading it in place
  --at <timestamp>          evaluation time (default: now)
  --json                    print { out, format, rows, elapsed_ms }
  -h, --help                this help`;


async function writeArrow(analytics: AnalyticsStore, plan: SetPlan, ws: string, out: string): Promise<number> {
  let arrow: typeof import('apache-arrow');
  try {
    arrow = await import('apache-arrow');
  } catch {
    throw new CliError('--out .arrow needs the apache-arrow package (npm install apache-arrow); use .parquet or .csv');
  }
  const rows = await analytics.listMembers(plan, ws);
  const columns = Object.fromEntries(MEMBER_COLUMNS.map((c) => [c, arrow.vectorFromArray(rows.map((r) => r[c] ?? null), new arrow.Utf8())]));
  writeFileSync(out, arrow.tableToIPC(new arrow.Table(columns), 'file'));
  return rows.length;
}

async function run([file]: string[], values: Values, output: Output): Promise<number> {
  const criteria = readCriteriaFile(file!);
  const out = stringOption(values, 'out');
  if (out === undefined) throw new UsageError('--out <file.parquet|file.csv|file.arrow> is required', 'members');
  const ext = extname(out).toLowerCase();
  const format = Object.hasOwn(FORMATS, ext) ? FORMATS[ext as keyof typeof FORMATS] : undefined;
  if (!format) throw new UsageError(`--out must end in .parquet, .csv or .arrow, got "${out}"`, 'members');
  const at = atOption(values, 'members');
  const data = await openData(values, 'members', criteria, output);
  try {
    const valid = await validatedCriteria(output, data, criteria, file!, values.json === true);
    if (!valid) return 1;
    const plan = planCriteria(valid, at);
    const t0 = performance.now();
    let rows: number;
    try {
      rows = format === 'arrow'
        ? await writeArrow(data.stores.analytics, plan, data.workspaceId, out)
        : await data.stores.analytics.writeMembers(plan, data.workspaceId, out, format);
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`${out}: cannot write (${oneLine(err)})`);
    }
    const elapsed = performance.now() - t0;
    if (values.json) output.json({ out, format, rows, at: at.toISOString(), elapsed_ms: Math.round(elapsed) });
    else output.print(`wrote ${fmt(rows)} members to ${out} (${format}, ${seconds(elapsed)})`);
    return 0;
  } finally {
    await data.close();
  }
}

export const members: Command = {
  name: 'members',
  summary: 'write the members to a parquet, csv or arrow file',
  help: HELP,
  options: { ...DATA_OPTIONS, out: { type: 'string' } },
  positionals: ['criteria.json'],
  run,
};
