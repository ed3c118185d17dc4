// `validate <criteria.json> [--data …]`: the HTTP compile's validation, without estimating.

import { isTimeWindowed, type PropertyCatalog, validateCriteria } from '../criteria/index.js';
import { type Command, stringOption, type Values } from './args.js';
import { readCriteriaFile } from './criteria-file.js';
import { openData } from './data.js';
import type { Output } from './output.js';

const HELP = `usage: audiences validate <criteria.json> [--data <dir|file.duckdb> [--workspace <id>] [--import]] [--json]

Validates criteria exactly as POST /v1/audiences/compile does and prints every fault as
"code  path  message" (path is a JSON Pointer into the criteria). Exit 0 when valid, 1 when not.

A product_event filter on payload.<path> is valid only for property paths seen on that event name
in the data, a person filter on traits.<path> only for trait paths seen on its persons. With --data
the paths are checked against that data (the same answer as the HTTP compile on it); without
--data every payload and trait path is accepted.

options:
  --data <dir|file.duckdb>  data whose property and trait paths to check against
  --workspace <id>          workspace of a database file (default: the one named "analyst")
  --import                  copy a directory into memory instead of reading it in place
  --json                    print { valid, errors, is_time_windowed, payload_paths_checked }
  -h, --help                this help`;

/** Accepts every payload path of every event name, and every trait path. */
const ANY_PATH = {
  events: { get: () => ({ has: () => true }) },
  traits: { has: () => true },
} as unknown as PropertyCatalog;

async function run([file]: string[], values: Values, out: Output): Promise<number> {
  const criteria = readCriteriaFile(file!);
  const dataPath = stringOption(values, 'data');
  let catalog = ANY_PATH;
  if (dataPath !== undefined) {
    const data = await openData(values, 'validate', criteria, out);
    try {
      catalog = await data.stores.analytics.propertyCatalog(data.workspaceId);
    } finally {
      await data.close();
    }
  }
  const result = validateCriteria(criteria, catalog);
  const checked = dataPath !== undefined;
  if (values.json) {
    out.json(result.ok
      ? { valid: true, errors: [], is_time_windowed: isTimeWindowed(result.criteria.root), payload_paths_checked: checked }
      : { valid: false, errors: result.errors, is_time_windowed: null, payload_paths_checked: checked });
  } else if (result.ok) {
    out.print(`${file}: valid${checked ? '' : ' (payload and trait paths not checked: pass --data to check them)'}`);
  } else {
    out.print(`${file}: ${result.errors.length} error${result.errors.length > 1 ? 's' : ''}`);
    out.criteriaErrors(result.errors);
  }
  return result.ok ? 0 : 1;
}

export const validate: Command = {
  name: 'validate',
  summary: 'validate criteria like the HTTP compile (code, path, message); exit 1 when invalid',
  help: HELP,
  options: { data: { type: 'string' }, workspace: { type: 'string' }, import: { type: 'boolean' } },
  positionals: ['criteria.json'],
  run,
};
