// `load <dir> [--into file.duckdb]`: check a directory of parquet exports, or import it into the
// `analyst` workspace of a database file for fast repeated estimates.

import cliProgress from 'cli-progress';
import { Workspaces } from '../store/control/workspaces.js';
import type { ImportProgress } from '../store/duckdb/import.js';
import { duckdbOf, openStores } from '../store/open.js';
import { type Command, stringOption } from './args.js';
import { ANALYST_WORKSPACE, holdsData, importDir, openDatabase } from './data.js';
import { CliError } from './errors.js';
import { assertImportable, checkParquetDir, type DirCheck } from './layout-check.js';
import { fmt, type Output, seconds } from './output.js';

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

const tableLine = (table: string, rows: number, ms: number) => `${table.padEnd(15)} ${fmt(rows).padStart(12)} rows ${seconds(ms).padStart(9)}`;

/**
 * The import's progress on a terminal's stderr: a line per table, and a bar through the events
 * redrawn in place (cli-progress), erased when the events are done. `stop` ends a bar still drawn.
 */
function terminalProgress(out: Output): Required<ImportProgress> & { stop(): void } {
  const bar = new cliProgress.SingleBar({
    stream: out.io.stderr,
    format: `${'events'.padEnd(15)} [{bar}] {percentage}% {value}/{total} rows {duration_formatted} {event_name}`,
    barsize: 20,
    formatValue: (v, _options, type) => (type === 'value' || type === 'total' ? fmt(Number(v)) : String(v)),
    // Wrapping stays on and the cursor shown: nothing to restore when the import is interrupted.
    linewrap: true,
    clearOnComplete: true,
  }, cliProgress.Presets.legacy);
  let drawn = false;
  const stop = () => {
    if (drawn) bar.stop();
    drawn = false;
  };
  return {
    events: (done, total, name) => {
      if (!drawn) bar.start(total, done, { event_name: name });
      else bar.update(done, { event_name: name });
      drawn = true;
    },
    table: (table, rows, ms) => {
      stop();
      out.progress(tableLine(table, rows, ms));
    },
    stop,
  };
}

function tableReport(check: DirCheck) {
  return check.tables.map((t) => ({
    table: t.table, file: t.file, present: t.present, rows: t.rows, missing_columns: t.missing,
    retyped_columns: t.retyped, extra_columns: t.extra,
  }));
}

function printCheck(out: Output, check: DirCheck): void {
  for (const t of check.tables) {
    if (!t.present) {
      out.print(`${t.table.padEnd(15)} ${'absent'.padStart(12)}`);
      continue;
    }
    const notes = [
      t.missing.length > 0 ? `MISSING ${t.missing.join(', ')}` : '',
      ...t.retyped.map((r) => `${r.column} is ${r.type}, cast to ${r.expected}`),
      t.extra.length > 0 ? `ignored ${t.extra.join(', ')}` : '',
    ].filter(Boolean);
    out.print(`${t.table.padEnd(15)} ${fmt(t.rows ?? 0).padStart(12)} rows${notes.length > 0 ? `  ${notes.join('; ')}` : ''}`);
  }
  for (const f of check.ignored) out.print(`${f}: not a layout table, ignored`);
}

async function run([dir]: string[], values: Record<string, string | boolean | undefined>, out: Output): Promise<number> {
  const into = stringOption(values, 'into');
  const json = values.json === true;
  // Checked first, so a wrong directory never leaves an empty database file behind.
  const scratch = await openStores({ analyticsStore: 'duckdb', databasePath: ':memory:' });
  let check: DirCheck;
  try {
    check = await checkParquetDir(duckdbOf(scratch), dir!);
  } finally {
    await scratch.close();
  }
  if (into === undefined) {
    if (json) out.json({ dir, tables: tableReport(check), ignored_files: check.ignored });
    else printCheck(out, check);
    assertImportable(check);
    if (!json) {
      out.print(`checked ${dir}: use it directly with --data ${dir} (read in place, nothing copied), ` +
        'or import it once with --into file.duckdb');
    }
    return 0;
  }
  assertImportable(check);
  const stores = await openDatabase(into);
  try {
    const ws = await new Workspaces(stores.control).ensure(ANALYST_WORKSPACE, {});
    if (await holdsData(stores, ws.workspace_id)) {
      throw new CliError(`${into}: workspace ${ANALYST_WORKSPACE} (${ws.workspace_id}) already holds data; load into a new file`);
    }
    const loaded: { table: string; rows: number; ms: number }[] = [];
    // Only a terminal shows progress; elsewhere the import need not track it.
    const terminal = out.terminal ? terminalProgress(out) : null;
    const t0 = performance.now();
    try {
      await importDir(stores, ws.workspace_id, dir!, {
        table: (table, rows, ms) => {
          loaded.push({ table, rows, ms });
          terminal?.table(table, rows, ms);
        },
        ...(terminal ? { events: terminal.events } : {}),
      });
    } finally {
      terminal?.stop();
    }
    const total = performance.now() - t0;
    if (json) {
      out.json({ dir, into, workspace_id: ws.workspace_id, tables: loaded.map((l) => ({ table: l.table, rows: l.rows, ms: Math.round(l.ms) })), ms: Math.round(total) });
    } else {
      if (!terminal) for (const l of loaded) out.print(tableLine(l.table, l.rows, l.ms));
      out.print(`loaded ${dir} into ${into}, workspace ${ANALYST_WORKSPACE} (${ws.workspace_id}) in ${seconds(total)}`);
    }
    return 0;
  } finally {
    await stores.close();
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

