// The criteria queries, once for every engine: estimates (count, breakdown, overlap, revenue, lift)
// within their budget, counts and profiles for explain, and member lists. Each is its dialect's
// statement (criteria/print/) run by its engine's driver (driver.ts).

import type { CompiledQuery, ReportPlan, SetPlan } from '../../criteria/index.js';
import type { EstimateStats, EstimateTurn, FirstTouchChannels, Member } from '../analytics.js';
import { breakdownOf, countOf, liftRow, overlapOf, revenueRow } from './rows.js';
import type { QueryDriver, Row } from './driver.js';

/** `read` in an estimate's place of its own, ending `budgetMs` from now. */
async function within<T>(driver: QueryDriver<unknown>, budgetMs: number, read: (deadline: number) => Promise<T | null>): Promise<T | null> {
  const place = driver.admit(performance.now() + budgetMs);
  try {
    return await read(place.deadline);
  } finally {
    driver.leave(place);
  }
}

/** A `SELECT count … AS count` statement within `budgetMs`, in a place of its own; null past it. */
export async function countWithin<Q>(driver: QueryDriver<Q>, query: Q, budgetMs: number): Promise<number | null> {
  const rows = await within(driver, budgetMs, (deadline) => driver.readBy(query, deadline));
  return rows === null ? null : countOf(rows);
}

export class CriteriaQueries<Q> {
  constructor(private readonly driver: QueryDriver<Q>) {}

  /**
   * Takes an estimate's place; its budget of `budgetMs` starts now, so what the caller does before
   * its statements, and a wait for the engine, spend it.
   */
  estimateTurn(budgetMs: number): EstimateTurn {
    const { driver } = this;
    const { printer } = driver;
    const place = driver.admit(performance.now() + budgetMs);
    const read = async <T>(query: Q, as: (rows: Row[]) => T, by?: number): Promise<T | null> => {
      const rows = await driver.readBy(query, Math.min(by ?? Infinity, place.deadline));
      return rows === null ? null : as(rows);
    };
    return {
      deadline: place.deadline,
      count: async (plan, ws, options) => read(printer.count(await driver.prepare(plan, ws), ws, options?.sample), countOf, options?.by),
      breakdown: async (plan, ws, breakdown, options) => read(printer.breakdown(await driver.prepare(plan, ws), ws, breakdown), breakdownOf, options?.by),
      overlap: async (plans, ws) => read(printer.overlap(await Promise.all(plans.map((p) => driver.prepare(p, ws))), ws), overlapOf),
      revenue: async (report, ws) => read(printer.revenue(await this.prepareReport(report, ws), ws), (rows) => rows.map(revenueRow)),
      missingRate: async (report, ws) => read(printer.missingRate(report, ws), (rows) => rows.map((r) => ({ currency: String(r.currency), day: String(r.day) }))),
      lift: async (plan, ws) => read(printer.lift(plan, ws), (rows) => rows.flatMap((r) => liftRow(r) ?? [])),
      end: () => driver.leave(place),
    };
  }

  /** The count of `plan` within `budgetMs`, in a place of its own (explain: one count per subtree). */
  async countWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<number | null> {
    return this.countQueryWithin(await this.printCount(plan, ws), budgetMs);
  }

  /** A printed count statement within `budgetMs`, in a place of its own; null past it. */
  countQueryWithin(query: Q, budgetMs: number): Promise<number | null> {
    return countWithin(this.driver, query, budgetMs);
  }

  /** The count's statement of `plan` as it runs, with its parameters. */
  async countQuery(plan: SetPlan, ws: string): Promise<CompiledQuery> {
    return this.driver.shown(await this.printCount(plan, ws));
  }

  /** The engine's profile of the count of `plan` as it ran; null past `budgetMs`. */
  async profileWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<string | null> {
    const query = await this.printCount(plan, ws);
    return within(this.driver, budgetMs, (deadline) => this.driver.profileBy(query, deadline));
  }

  /** The members of `plan`, by person_id then visitor_id (people first), written to `path`; the row count. */
  async writeMembers(plan: SetPlan, ws: string, path: string, format: 'csv' | 'parquet'): Promise<number> {
    return this.driver.copyTo(await this.printMembers(plan, ws), path, format);
  }

  /** The same rows, in memory. */
  async listMembers(plan: SetPlan, ws: string): Promise<Member[]> {
    return await this.driver.rows(await this.printMembers(plan, ws)) as unknown as Member[];
  }

  estimateStats(): EstimateStats {
    return this.driver.stats();
  }

  /** First-touch channels per person and per anonymous visitor (AnalyticsStore.firstTouchChannels). */
  async firstTouchChannels(ws: string, of: { visitorKeys?: number[]; personKeys?: number[] }): Promise<FirstTouchChannels> {
    const profiles = [...of.personKeys ?? [], ...(of.visitorKeys ?? []).map((k) => -k)];
    const persons = new Map<number, string>();
    const visitors = new Map<number, string>();
    if (profiles.length === 0) return { persons, visitors };
    for (const r of await this.driver.rows(this.driver.printer.firstTouches(ws, profiles))) {
      const profile = Number(r.profile);
      if (profile > 0) persons.set(profile, r.value as string);
      else visitors.set(-profile, r.value as string);
    }
    return { persons, visitors };
  }

  private async printCount(plan: SetPlan, ws: string): Promise<Q> {
    return this.driver.printer.count(await this.driver.prepare(plan, ws), ws);
  }

  private async printMembers(plan: SetPlan, ws: string): Promise<Q> {
    return this.driver.printer.membersByIds(await this.driver.prepare(plan, ws), ws);
  }

  private async prepareReport(report: ReportPlan, ws: string): Promise<ReportPlan> {
    return report.audience ? { ...report, audience: await this.driver.prepare(report.audience, ws) } : report;
  }
}
