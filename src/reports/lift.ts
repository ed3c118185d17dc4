// The lift report (decisions §14, docs/reports.md): an audience's current snapshot, its members per
// split, their revenue in a range per currency, and each split's revenue per member against the
// holdout's with a 95 % interval (interval.ts). One statement (criteria/lift.ts), under the
// estimate's budget like the revenue report.

import { takeTurn } from '../audiences/compile.js';
import { splitPlacement, type Split, storedSplits } from '../audiences/splits.js';
import { DEFAULT_HALF_LIFE_DAYS, DEFAULT_LOOKBACK_DAYS, isTouchModel, type LiftPlan, liftRevenue, type LiftRow } from '../criteria/index.js';
import { AppError, invalidRequest } from '../errors.js';
import type { AnalyticsStore } from '../store/analytics.js';
import { getAudience } from '../store/control/audiences.js';
import type { ControlSql } from '../store/control/store.js';
import { differenceOfMeans, type Sums } from './interval.js';
import type { LiftReport, LiftRequest, LiftSplit } from './lift-schema.js';
import { checkRates, parseInstant } from './revenue.js';

/** Each split's figures from the statement's rows (a split without members has none). */
function splitFigures(split: Split, rows: LiftRow[]): Omit<LiftSplit, 'difference'> & { sums: Map<string, Sums> } {
  const counts = rows.find((r) => r.split === split.name && r.currency === null);
  const members = counts?.members ?? 0;
  const sums = new Map<string, Sums>();
  for (const r of rows) if (r.split === split.name && r.currency !== null) sums.set(r.currency, { n: members, sum: r.total, squares: r.squares });
  const revenue = Object.fromEntries([...sums].map(([c, s]) => [c, s.sum]));
  const perMember = Object.fromEntries([...sums].map(([c, s]) => [c, members === 0 ? 0 : s.sum / members]));
  return {
    name: split.name, percent: split.percent, holdout: split.destinations.length === 0,
    members, paying_members: counts?.paying ?? 0, revenue, revenue_per_member: perMember, sums,
  };
}

/** Against the holdout, per currency either side has money in (absent: 0 for each member). */
function against(split: ReturnType<typeof splitFigures>, holdout: ReturnType<typeof splitFigures> | undefined, currencies: string[]): LiftSplit['difference'] {
  if (!holdout || holdout === split) return null;
  const side = (f: typeof split, c: string): Sums => f.sums.get(c) ?? { n: f.members, sum: 0, squares: 0 };
  const out: NonNullable<LiftSplit['difference']> = {};
  for (const c of currencies) {
    const d = differenceOfMeans(side(split, c), side(holdout, c));
    if (d) out[c] = d;
  }
  return out;
}

export async function liftReport(
  analytics: AnalyticsStore, control: ControlSql, ws: string, request: LiftRequest, options: { budgetMs: number },
): Promise<LiftReport> {
  const [from, to] = [parseInstant(request.from), parseInstant(request.to)];
  if (to.getTime() <= from.getTime()) throw invalidRequest([{ field: '/to', message: 'to must be after from (from is inclusive, to exclusive)' }]);
  const attribution = request.model === undefined ? null : {
    model: request.model, lookbackDays: request.lookback_days ?? DEFAULT_LOOKBACK_DAYS, halfLifeDays: request.half_life_days ?? DEFAULT_HALF_LIFE_DAYS,
  };
  const turn = takeTurn(analytics, options.budgetMs);
  try {
    const audience = await getAudience(control, ws, request.audience_id);
    if (!audience) throw new AppError('not_found', `no audience ${request.audience_id}`);
    const splits = storedSplits(audience.splits);
    if (splits.length === 0) throw invalidRequest([{ field: '/audience_id', message: 'the audience has no splits: set its splits (PATCH /v1/audiences/{id}) and refresh it' }]);
    if (audience.snapshot_id === null) throw new AppError('conflict', 'the audience has no snapshot yet: the lift is measured after its first refresh');
    const head = {
      audience_id: audience.audience_id, snapshot_id: audience.snapshot_id, from: from.toISOString(), to: to.toISOString(),
      holdout: splits.find((s) => s.destinations.length === 0)?.name ?? null, interval: 'welch_normal_95' as const,
      model: request.model ?? null, lookback_days: attribution && isTouchModel(attribution.model) ? attribution.lookbackDays : null,
      half_life_days: attribution?.model === 'time_decay' ? attribution.halfLifeDays : null,
    };
    const plan: LiftPlan = {
      snapshotId: audience.snapshot_id, placement: splitPlacement(splits, audience.split_salt), from, to, attribution, currency: request.currency?.toLowerCase() ?? null,
    };
    // A missing rate is the revenue report's 400, over the same money rows of the range.
    const rows = plan.currency && (await checkRates(turn, liftRevenue(plan), ws)) === null ? null : await turn.lift(plan, ws);
    if (rows === null) return { ...head, hit_limit: true, currencies: [], splits: [] };
    const currencies = [...new Set(rows.flatMap((r) => (r.currency === null ? [] : [r.currency])))].sort();
    const figures = splits.map((s) => splitFigures(s, rows));
    const holdout = figures.find((f) => f.name === head.holdout);
    return {
      ...head, hit_limit: false, currencies,
      splits: figures.map(({ sums: _, ...f }, i) => ({ ...f, difference: against(figures[i]!, holdout, currencies) })),
    };
  } finally {
    turn.end();
  }
}
