// `report --data … --from … --to …`: the revenue report, by the same function as POST /v1/reports/revenue.

import { AppError, type FieldError } from '../errors.js';
import { revenueRequest } from '../reports/request.js';
import { majorUnits } from '../reports/money.js';
import type { Amounts } from '../reports/response.js';
import { type RevenueRequest, revenueReport } from '../reports/revenue.js';
import { atOption, type Command, integerOption, stringOption, type Values } from './args.js';
import { readCriteriaFile } from './criteria-file.js';
import { DATA_HELP, DATA_OPTIONS, openData } from './data.js';
import { DEFAULT_BUDGET_MS } from './estimate.js';
import { CliError, UsageError } from './errors.js';
import { type Output, seconds } from './output.js';

const HELP = `usage: audiences report --data <dir|file.duckdb> --from <date> --to <date> [--interval day|week|month]
       [--group-by <dimension>] [--model <model>] [--lookback-days <n>] [--half-life-days <n>] [--currency <code>] [--filter <json>]
       [--criteria <file.json>] [--at <timestamp>] [--budget <ms>] [--json]

Prints revenue (paid invoices and one-time payments minus refunds, in major units with the
currency, e.g. 157.00 USD, currencies in alphabetical order; --json keeps minor units) per bucket and group, with refunds, paying and new paying customers: the same report as
POST /v1/reports/revenue on the same data (docs/reports.md). Payments without a touch are the
group Non-attributed. Faults print and exit 1; a report past its budget is cancelled and reported
as over budget (hit_limit true in --json), exit 0.

${DATA_HELP}

options:
  --data <dir|file.duckdb>  the data (required)
  --workspace <id>          workspace of a database file (default: the one named "analyst")
  --import                  copy a directory into memory instead of reading it in place
  --from <date>             first instant, inclusive: ISO date (UTC midnight) or datetime (required)
  --to <date>               end, exclusive (required); at most 1,000 buckets
  --interval <interval>     day, week (from Monday) or month (default month)
  --group-by <dimension>    channel_category (default), channel, campaign, medium, referrer_host,
                            landing_path, or traits.<path>
  --model <model>           first_touch (default): each customer to its earliest page view; per
                            payment, over the page views of its lookback: last_touch,
                            last_non_direct, linear, position_based (40/20/40) or time_decay
  --lookback-days <n>       the days before each payment whose page views count (default 90; not
                            for first_touch)
  --half-life-days <n>      time_decay: a touch this many days older weighs half (default 7)
  --currency <code>         every amount in this currency (e.g. usd), at its day's rate of the rates
                            loaded with audiences rates load (a weekend takes the last published one)
  --filter <json>           trait predicates, e.g. '{"traits.plan":{"op":"=","value":"pro"}}'
  --criteria <file.json>    only the people of these criteria (evaluated at --at)
  --at <timestamp>          evaluation time of --criteria (default: now)
  --budget <ms>             cancel the report after this many milliseconds (default ${DEFAULT_BUDGET_MS})
  --json                    print the HTTP answer plus elapsed_ms
  -h, --help                this help`;

function parseFilter(raw: string | undefined): unknown {
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch (err) {
    throw new UsageError(`--filter is not valid JSON (${(err as Error).message})`, 'report');
  }
}

/** A number option's text as a number for the schema to check (NaN when not one). */
const numberOf = (raw: string | undefined) => (raw === undefined ? undefined : Number(raw));

/** The command line as the HTTP request body, checked by the same schema. */
function requestOf(values: Values): RevenueRequest {
  const criteria = stringOption(values, 'criteria');
  const parsed = revenueRequest.safeParse({
    from: stringOption(values, 'from'),
    to: stringOption(values, 'to'),
    interval: stringOption(values, 'interval') ?? 'month',
    group_by: stringOption(values, 'group-by') ?? 'channel_category',
    model: stringOption(values, 'model'),
    lookback_days: numberOf(stringOption(values, 'lookback-days')),
    half_life_days: numberOf(stringOption(values, 'half-life-days')),
    currency: stringOption(values, 'currency'),
    filter: parseFilter(stringOption(values, 'filter')),
    criteria_json: criteria === undefined ? undefined : readCriteriaFile(criteria),
  });
  if (!parsed.success) {
    const option = (path: PropertyKey[]) => `--${String(path[0] ?? '').replaceAll('_', '-')}`;
    throw new UsageError(parsed.error.issues.map((i) => `${option(i.path)}: ${i.message}`).join('; '), 'report');
  }
  return parsed.data;
}

/** The amounts in the report's currency order (sorted), so a currency keeps its place on every line. */
const moneyIn = (currencies: string[]) => (amounts: Amounts) =>
  currencies.filter((c) => amounts[c] !== undefined).map((c) => majorUnits(amounts[c]!, c)).join(', ') || '0';

async function run(_: string[], values: Values, out: Output): Promise<number> {
  const request = requestOf(values);
  const at = atOption(values, 'report');
  const budgetMs = integerOption(values, 'budget', DEFAULT_BUDGET_MS, 'report');
  const data = await openData(values, 'report', request.criteria_json ?? null, out);
  try {
    const t0 = performance.now();
    let report;
    try {
      report = await revenueReport(data.stores.analytics, data.stores.control, data.workspaceId, request, { at, budgetMs });
    } catch (err) {
      if (!(err instanceof AppError) || (err.code !== 'invalid_criteria' && err.code !== 'invalid_request')) throw err;
      if (values.json) out.json({ error: err.code, message: err.message, ...err.details });
      else if (err.code === 'invalid_criteria') out.criteriaErrors(err.details?.errors as { code: string; path: string; message: string }[]);
      else throw new CliError((err.details?.errors as FieldError[]).map((e) => `${e.field}: ${e.message}`).join('; '));
      return 1;
    }
    const elapsed = performance.now() - t0;
    if (values.json) {
      out.json({ ...report, elapsed_ms: Math.round(elapsed) });
    } else if (report.hit_limit) {
      out.print(`over budget: the report took longer than ${budgetMs} ms and was cancelled (raise --budget)`);
    } else {
      const money = moneyIn(report.currencies);
      const lookback = report.lookback_days === null ? '' : ` (${report.lookback_days}-day lookback${report.half_life_days === null ? '' : `, ${report.half_life_days}-day half-life`})`;
      out.print(`revenue by ${report.group_by}, ${report.model}${lookback}, per ${report.interval}, ${report.from} to ${report.to} (${seconds(elapsed)})`);
      for (const r of report.rows) {
        out.print(`${r.bucket}  ${String(r.group).padEnd(20)} revenue ${money(r.revenue)}; refunds ${money(r.refunds)} (${r.refund_count}); `
          + `${r.paying_customers} paying, ${r.new_paying_customers} new`);
      }
      const t = report.totals!;
      out.print(`total       ${''.padEnd(20)} revenue ${money(t.revenue)}; refunds ${money(t.refunds)} (${t.refund_count}); `
        + `${t.paying_customers} paying, ${t.new_paying_customers} new`);
    }
    return 0;
  } finally {
    await data.close();
  }
}

export const report: Command = {
  name: 'report',
  summary: 'revenue per period and channel (or trait), the same report as the HTTP API',
  help: HELP,
  options: {
    ...DATA_OPTIONS, from: { type: 'string' }, to: { type: 'string' }, interval: { type: 'string' }, 'group-by': { type: 'string' },
    model: { type: 'string' }, 'lookback-days': { type: 'string' }, 'half-life-days': { type: 'string' }, currency: { type: 'string' }, filter: { type: 'string' }, criteria: { type: 'string' }, budget: { type: 'string' },
  },
  positionals: [],
  run,
};
