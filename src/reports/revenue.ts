// The revenue report (issue 18 §2, docs/reports.md): payments and refunds per bucket and group,
// attributed by a model (criteria/attribution.ts) to the touches before them, or grouped by a trait of
// the paying customer's person.
// Like an estimate: its place is taken first (an overloaded service refuses it before any work),
// and the budget runs from there, the query cancelled inside the engine when it runs out.

import type { z } from 'zod';
import { takeTurn } from '../audiences/compile.js';
import {
  bucketCount, type CriteriaError, DEFAULT_HALF_LIFE_DAYS, DEFAULT_LOOKBACK_DAYS, isTouchModel, MAX_REPORT_BUCKETS, planCriteria, type Predicate, type PropertyCatalog,
  reportAudience, reportGroup, type ReportGroup, type ReportInterval, type ReportPlan, type SetPlan, validateCriteria, validateTraitFilter,
} from '../criteria/index.js';
import { AppError, invalidRequest } from '../errors.js';
import { RATE_LOOKBACK_DAYS } from '../criteria/currency.js';
import type { AnalyticsStore, EstimateTurn, RevenueRow } from '../store/analytics.js';
import { getAudience } from '../store/control/audiences.js';
import type { ControlSql } from '../store/control/store.js';
import type { revenueRequest } from './request.js';
import type { Amounts, RevenueFigures, RevenueReport, RevenueReportRow } from './response.js';

export type RevenueRequest = z.infer<typeof revenueRequest>;

export interface ReportOptions {
  /** Evaluation time of the audience's criteria (`last_n_days` windows end here). */
  at: Date;
  /** From the call on, like an estimate's. */
  budgetMs: number;
}

const HAS_OFFSET = /(Z|[+-]\d{2}:?\d{2})$/i;

/** An ISO date (its UTC midnight) or datetime (UTC unless it carries an offset), as the request schema admits them. */
export function parseInstant(text: string): Date {
  if (text.length === 10) return new Date(`${text}T00:00:00Z`);
  return new Date(HAS_OFFSET.test(text) ? text : `${text}Z`);
}

/** `to` after `from`, and at most MAX_REPORT_BUCKETS buckets between them. */
function checkRange(from: Date, to: Date, interval: ReportInterval): void {
  if (to.getTime() <= from.getTime()) throw invalidRequest([{ field: '/to', message: 'to must be after from (from is inclusive, to exclusive)' }]);
  const buckets = bucketCount(from, to, interval);
  if (buckets > MAX_REPORT_BUCKETS) {
    throw invalidRequest([{ field: '/to', message: `the range holds ${buckets} ${interval} buckets; at most ${MAX_REPORT_BUCKETS} (narrow it, or use a longer interval)` }]);
  }
}

/** Criteria faults with their paths made pointers into the request body. */
const under = (key: string, errors: CriteriaError[]): CriteriaError[] => errors.map((e) => ({ ...e, path: `/${key}${e.path}` }));

interface Checked {
  group: ReportGroup;
  filter: Predicate[];
  criteria: SetPlan | null;
}

/** group_by, filter and the audience, every fault in body order; invalid_criteria when there is one. */
async function check(control: ControlSql, ws: string, request: RevenueRequest, catalog: PropertyCatalog, at: Date): Promise<Checked> {
  const errors: CriteriaError[] = [];
  const group = reportGroup(request.group_by, catalog);
  if ('code' in group) errors.push(group);
  let filter: Predicate[] = [];
  if (request.filter !== undefined) {
    const checked = validateTraitFilter(request.filter, catalog, 'filter');
    if (checked.ok) filter = checked.predicates;
    else errors.push(...checked.errors);
  }
  let criteria: SetPlan | null = null;
  if (request.criteria_json !== undefined) {
    const checked = validateCriteria(request.criteria_json, catalog);
    if (checked.ok) criteria = planCriteria(checked.criteria, at);
    else errors.push(...under('criteria_json', checked.errors));
  } else if (request.audience_id !== undefined) {
    const audience = await getAudience(control, ws, request.audience_id);
    if (!audience) throw new AppError('not_found', `no audience ${request.audience_id}`);
    // A saved audience's criteria were valid when saved, and definitions are never withdrawn.
    const checked = validateCriteria(JSON.parse(audience.criteria), catalog);
    if (checked.ok) criteria = planCriteria(checked.criteria, at);
    else errors.push(...under('audience_id', checked.errors));
  }
  if (errors.length > 0) {
    const first = errors[0]!;
    throw new AppError('invalid_criteria', first.message, { code: first.code, path: first.path, errors });
  }
  return { group: group as ReportGroup, filter, criteria };
}

const key = (bucket: string | null, group: string | null) => JSON.stringify([bucket, group]);
const total = (amounts: Amounts) => Object.values(amounts).reduce((a, b) => a + b, 0);
/** Code-point order, null last. */
const byText = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);

function emptyFigures(): RevenueFigures {
  return { revenue: {}, refunds: {}, refund_count: 0, paying_customers: 0, new_paying_customers: 0 };
}

/** Money (levels 0 and 6) into per-currency amounts; counts (levels 1 and 7) as they are. */
function addRow(figures: RevenueFigures, r: RevenueRow): void {
  if (r.currency !== null && (r.level === 0 || r.level === 6)) {
    figures.revenue[r.currency] = r.paid - r.refunded;
    figures.refunds[r.currency] = r.refunded;
  } else {
    figures.refund_count = r.refund_count;
    figures.paying_customers = r.paying;
    figures.new_paying_customers = r.new_paying;
  }
}

/** The engine's rows as the report: rows by bucket, then revenue (all currencies) descending, then group. */
function assemble(rows: RevenueRow[]): Pick<RevenueReport, 'currencies' | 'rows' | 'totals'> {
  const byGroup = new Map<string, RevenueReportRow>();
  const totals = emptyFigures();
  const currencies = new Set<string>();
  for (const r of rows) {
    if (r.currency !== null) currencies.add(r.currency);
    if (r.level === 6 || r.level === 7) {
      addRow(totals, r);
      continue;
    }
    const k = key(r.bucket, r.group);
    let row = byGroup.get(k);
    if (!row) byGroup.set(k, (row = { bucket: r.bucket!, group: r.group, ...emptyFigures() }));
    addRow(row, r);
  }
  const sorted = [...byGroup.values()].sort((a, b) =>
    byText(a.bucket, b.bucket) || total(b.revenue) - total(a.revenue) || byText(a.group, b.group));
  return { currencies: [...currencies].sort(), rows: sorted, totals };
}

/** Refuses a report whose range holds an amount without an exchange rate to its currency; null past the budget. */
export async function checkRates(turn: EstimateTurn, plan: ReportPlan, ws: string): Promise<true | null> {
  const gaps = await turn.missingRate(plan, ws);
  if (gaps === null) return null;
  const [gap] = gaps;
  if (gap) {
    throw invalidRequest([{
      field: '/currency',
      message: `no exchange rate of ${gap.currency.toUpperCase()} on ${gap.day} (nor in the ${RATE_LOOKBACK_DAYS} days before it) to convert to ${plan.currency!.toUpperCase()}: `
        + 'load the ECB\'s reference rates covering that day (npx audiences rates load <eurofxref-hist.csv>)',
    }]);
  }
  return true;
}

export async function revenueReport(
  analytics: AnalyticsStore, control: ControlSql, ws: string, request: RevenueRequest, options: ReportOptions,
): Promise<RevenueReport> {
  const [from, to] = [parseInstant(request.from), parseInstant(request.to)];
  checkRange(from, to, request.interval);
  const model = request.model ?? 'first_touch';
  const turn = takeTurn(analytics, options.budgetMs);
  try {
    const checked = await check(control, ws, request, await analytics.propertyCatalog(ws), options.at);
    const [lookbackDays, halfLifeDays] = [request.lookback_days ?? DEFAULT_LOOKBACK_DAYS, request.half_life_days ?? DEFAULT_HALF_LIFE_DAYS];
    const plan: ReportPlan = {
      from, to, interval: request.interval, model, lookbackDays, halfLifeDays, group: checked.group, audience: reportAudience(checked.criteria, checked.filter),
      currency: request.currency?.toLowerCase() ?? null,
    };
    const rows = plan.currency && (await checkRates(turn, plan, ws)) === null ? null : await turn.revenue(plan, ws);
    const head = {
      from: from.toISOString(), to: to.toISOString(), interval: request.interval, group_by: request.group_by, model,
      lookback_days: isTouchModel(model) ? lookbackDays : null, half_life_days: model === 'time_decay' ? halfLifeDays : null,
    };
    if (rows === null) return { ...head, hit_limit: true, currencies: [], rows: [], totals: null };
    return { ...head, hit_limit: false, ...assemble(rows) };
  } finally {
    turn.end();
  }
}
