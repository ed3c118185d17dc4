// `rates load <file>`: the ECB's daily reference rates (eurofxref-hist.csv) into the workspaces'
// exchange-rate tables, which the revenue report's `currency` converts at (docs/reports.md).

import { readFileSync } from 'node:fs';
import { parseEcbRates, RatesFileError } from '../reports/rates.js';
import { ratesSummary, writeRates } from '../store/control/rates.js';
import { type Command, stringOption, type Values } from './args.js';
import { CliError } from './errors.js';
import { fmt, type Output } from './output.js';
import { findWorkspace, openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const HELP = `usage: audiences rates load <file.csv> [--workspace <workspace>] [--data <file.duckdb>] [--json]

Loads the European Central Bank's euro reference rates (the CSV of
https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip, or the daily eurofxref.csv) into the
exchange-rate table of a workspace, or of every workspace without --workspace. A day and currency
already loaded takes the file's rate. The revenue report's currency (POST /v1/reports/revenue,
report --currency) converts each amount at its day's rate; a weekend or holiday takes the last
rate published before it (docs/reports.md).

${SERVICE_DATABASE_NOTE}

options:
  <file.csv>                the ECB's CSV: Date,USD,JPY,… then a line per day, N/A where no rate
  --workspace <workspace>   only this workspace (its id or name)
  ${SERVICE_DATABASE_HELP}
  --json                    print { rates, workspaces: [{ workspace_id, first_day, last_day, currencies }] }
  -h, --help                this help`;

function readRates(path: string) {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  try {
    return parseEcbRates(text);
  } catch (err) {
    if (err instanceof RatesFileError) throw new CliError(`${path}: ${err.message}`);
    throw err;
  }
}

async function load([file]: string[], values: Values, out: Output): Promise<number> {
  const rates = readRates(file!);
  if (rates.length === 0) throw new CliError(`${file}: no rates in it`);
  const db = await openServiceDatabase(values, 'rates load', false, out.env);
  try {
    const named = stringOption(values, 'workspace');
    const workspaces = named === undefined ? await db.workspaces.list() : [await findWorkspace(db, named)];
    const loaded = [];
    for (const ws of workspaces) {
      await db.stores.analytics.unit((work) => writeRates(work, ws.workspace_id, rates));
      loaded.push({ workspace_id: ws.workspace_id, name: ws.name, ...await ratesSummary(db.stores.control, ws.workspace_id) });
    }
    if (values.json) {
      out.json({ rates: rates.length, workspaces: loaded.map((w) => ({ workspace_id: w.workspace_id, first_day: w.first, last_day: w.last, currencies: w.currencies })) });
    } else {
      for (const w of loaded) {
        out.print(`workspace "${w.name}" (${w.workspace_id}): ${fmt(rates.length)} rates loaded; it holds ${w.currencies} currencies from ${w.first} to ${w.last}`);
      }
    }
    return 0;
  } finally {
    await db.close();
  }
}

export const ratesLoad: Command = {
  name: 'rates load',
  summary: 'load the ECB\'s euro reference rates (CSV) for the revenue report\'s currency',
  help: HELP,
  options: { ...SERVICE_DATABASE_OPTIONS, workspace: { type: 'string' } },
  positionals: ['file'],
  run: load,
};
