// `estimate <criteria.json> --data …`: the audience size, by the same function as the HTTP compile.

import { compileCriteria } from '../audiences/compile.js';
import { BREAKDOWN_TOP } from '../criteria/index.js';
import { atOption, type Command, integerOption, type Values } from './args.js';
import { readCriteriaFile } from './criteria-file.js';
import { DATA_HELP, DATA_OPTIONS, openData } from './data.js';
import { fmt, type Output, seconds } from './output.js';

export const DEFAULT_BUDGET_MS = 5000;

const HELP = `usage: audiences estimate <criteria.json> --data <dir|file.duckdb> [--import] [--at <timestamp>] [--budget <ms>] [--breakdown <by>] [--json]

Prints the number of distinct profiles (people, plus anonymous visitors) matching the criteria:
the same count as POST /v1/audiences/compile on the same data at the same evaluation time.
Invalid criteria print their faults and exit 1. An exact count past three quarters of its budget
is cancelled and the count of a 1 % sample of the profiles, run in the rest, is printed scaled with
its 95 % interval (approximate in --json); past the whole budget: over budget (count null), exit 0.

${DATA_HELP}

options:
  --data <dir|file.duckdb>  the data (required)
  --workspace <id>          workspace of a database file (default: the one named "analyst")
  --import                  copy a directory into memory instead of reading it in place
  --at <timestamp>          evaluation time, ISO date or datetime, UTC unless an offset is given
                            (default: now); "last_n_days" windows end here
  --budget <ms>             cancel the count after this many milliseconds (default ${DEFAULT_BUDGET_MS})
  --breakdown <by>          the profiles per value of channel_category (first touch), traits.<key>,
                            subscription.status or invoice.status: the top ${BREAKDOWN_TOP} and (other)
  --json                    print the HTTP compile's answer { valid, is_time_windowed,
                            estimated_count: { count, is_estimate, hit_limit, approximate? },
                            breakdown? } plus at and elapsed_ms
  -h, --help                this help`;

async function run([file]: string[], values: Values, out: Output): Promise<number> {
  const criteria = readCriteriaFile(file!);
  const at = atOption(values, 'estimate');
  const budgetMs = integerOption(values, 'budget', DEFAULT_BUDGET_MS, 'estimate');
  const data = await openData(values, 'estimate', criteria, out);
  try {
    const t0 = performance.now();
    const breakdown = typeof values.breakdown === 'string' ? values.breakdown : undefined;
    const result = await compileCriteria(data.stores.analytics, data.workspaceId, criteria, { at, budgetMs, breakdown });
    const elapsed = performance.now() - t0;
    if (values.json) {
      out.json({ ...result, ...(result.valid ? {} : { errors: result.errors }), at: at.toISOString(), elapsed_ms: Math.round(elapsed) });
    } else if (!result.valid) {
      out.print(`${file}: ${result.errors.length} error${result.errors.length > 1 ? 's' : ''}`);
      out.criteriaErrors(result.errors);
    } else if (result.estimated_count.count === null) {
      const approximate = result.estimated_count.approximate;
      out.print(approximate
        ? `~${fmt(approximate.count)} profiles (95 %: ${fmt(approximate.low)}–${fmt(approximate.high)}; from a ${approximate.sample_fraction * 100} % sample: the exact count missed the ${budgetMs} ms budget)`
        : `over budget: the count took longer than ${budgetMs} ms and was cancelled (raise --budget)`);
    } else {
      out.print(`${fmt(result.estimated_count.count)} profiles  (at ${at.toISOString()}, ${seconds(elapsed)})`);
      for (const row of result.breakdown ?? []) out.print(`  ${fmt(row.count).padStart(12)}  ${row.value ?? '(none)'}`);
    }
    return result.valid ? 0 : 1;
  } finally {
    await data.close();
  }
}

export const estimate: Command = {
  name: 'estimate',
  summary: 'count the audience, the same count as the HTTP compile',
  help: HELP,
  options: { ...DATA_OPTIONS, budget: { type: 'string' }, breakdown: { type: 'string' } },
  positionals: ['criteria.json'],
  run,
};
