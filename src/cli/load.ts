// `load <dir> [--into file.duckdb]`: check a directory of parquet exports, or import it into the
// `analyst` workspace of a database file for fast repeated estimates.

import { Workspaces } from '../store/workspaces.js';
import type { Command } from './args.js';
import { stringOption } from './args.js';
import { ANALYST_WORKSPACE, importDir, openDatabase } from './data.js';
import { CliError } from './errors.js';
import { assertImportable, checkParquetDir, type DirCheck } from './layout-check.js';
import { drawBar, endBar, fmt, print, printJson, progress, seconds } from './output.js';
import { Store } from '../store/db.js';

const HELP = `usage: audiences load <dir> [--into file.duckdb] [--json]

Checks a directory of parquet exports against the export layout (one <table>.parquet per table,
see docs/cli.md): lists the tables present with their row counts and any column problems. Exits 1
when a file lacks a layout column or no export file is present. A directory that passes can be
used as it is with --data <dir>: the commands read its files in place.

With --into, also imports the directory into the workspace "${ANALYST_WORKSPACE}" of that DuckDB
database file (created when missing); on a terminal, a line per table and a progress bar through
the events. estimate, members and explain then read it with --data file.duckdb: faster than
reading the parquet files for repeated runs on big exports.
A workspace that already holds data is not loaded twice: load into a new file.

options:
  --into <file.duckdb>  import into this database file
  --json                machine-readable output
  -h, --help            this help`;

function tableReport(check: DirCheck) {
  return check.tables.map((t) => ({
    table: t.table, file: t.file, present: t.present, rows: t.rows, missing_columns: t.missing,
    retyped_columns: t.retyped, extra_columns: t.extra,
  }));
}

function printCheck(check: DirCheck): void {
  for (const t of check.tables) {
    if (!t.present) {
      print(`${t.table.padEnd(15)} ${'absent'.padStart(12)}`);
      continue;
    }
    const notes = [
      t.missing.length > 0 ? `MISSING ${t.missing.join(', ')}` : '',
      ...t.retyped.map((r) => `${r.column} is ${r.type}, cast to ${r.expected}`),
      t.extra.length > 0 ? `ignored ${t.extra.join(', ')}` : '',
    ].filter(Boolean);
    print(`${t.table.padEnd(15)} ${fmt(t.rows ?? 0).padStart(12)} rows${notes.length > 0 ? `  ${notes.join('; ')}` : ''}`);
  }
  for (const f of check.ignored) print(`${f}: not a layout table, ignored`);
}

async function run([dir]: string[], values: Record<string, string | boolean | undefined>): Promise<number> {
  const into = stringOption(values, 'into');
  const json = values.json === true;
  // Checked first, so a wrong directory never leaves an empty database file behind.
  const scratch = await Store.open(':memory:');
  let check: DirCheck;
  try {
    check = await checkParquetDir(scratch, dir!);
  } finally {
    await scratch.close();
  }
  if (into === undefined) {
    if (json) printJson({ dir, tables: tableReport(check), ignored_files: check.ignored });
    else printCheck(check);
    assertImportable(check);
    if (!json) {
      print(`checked ${dir}: use it directly with --data ${dir} (read in place, nothing copied), ` +
        'or import it once with --into file.duckdb');
    }
    return 0;
  }
  assertImportable(check);
  const store = await openDatabase(into);
  try {
    const ws = await new Workspaces(store).ensure(ANALYST_WORKSPACE, {});
    const held = await store.query(
      'SELECT (SELECT count(*) FROM persons WHERE workspace_id = $1) + (SELECT count(*) FROM events WHERE workspace_id = $1) AS n',
      [ws.workspace_id]);
    if (Number(held[0]?.n ?? 0) > 0) {
      throw new CliError(`${into}: workspace ${ANALYST_WORKSPACE} (${ws.workspace_id}) already holds data; load into a new file`);
    }
    const loaded: { table: string; rows: number; ms: number }[] = [];
    const t0 = performance.now();
    await importDir(store, ws.workspace_id, dir!, {
      table: (table, rows, ms) => {
        loaded.push({ table, rows, ms });
        endBar();
        progress(`${table.padEnd(15)} ${fmt(rows).padStart(12)} rows ${seconds(ms).padStart(9)}`);
      },
      // Only a terminal shows the bar; elsewhere the import need not track its progress.
      ...(process.stderr.isTTY ? { events: (done: number, total: number, name: string, ms: number) => drawBar('events', done, total, ms, name) } : {}),
    });
    const total = performance.now() - t0;
    if (json) {
      printJson({ dir, into, workspace_id: ws.workspace_id, tables: loaded.map((l) => ({ table: l.table, rows: l.rows, ms: Math.round(l.ms) })), ms: Math.round(total) });
    } else {
      if (!process.stderr.isTTY) for (const l of loaded) print(`${l.table.padEnd(15)} ${fmt(l.rows).padStart(12)} rows ${seconds(l.ms).padStart(9)}`);
      print(`loaded ${dir} into ${into}, workspace ${ANALYST_WORKSPACE} (${ws.workspace_id}) in ${seconds(total)}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

export const load: Command = {
  name: 'load',
  summary: 'check a parquet export directory, or import it into a database file (--into)',
  help: HELP,
  options: { into: { type: 'string' } },
  positionals: ['dir'],
  run,
};

