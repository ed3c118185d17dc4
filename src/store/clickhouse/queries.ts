// The criteria queries on ClickHouse: estimates within their budget through the store's own queue,
// counts and profiles for explain, and member lists. Each statement is the ClickHouse dialect's
// (criteria/print/clickhouse.ts) with its parameters bound, never printed.

import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { type ClickHouseQuery, clickhousePrinter, type CompiledQuery, type SetPlan, type SqlParam } from '../../criteria/index.js';
import type { EstimateStats, EstimateTurn, Member } from '../analytics.js';
import { EstimateAdmission } from '../estimate-admission.js';
import { breakdownOf, countOf, overlapOf, revenueRow } from '../estimate-rows.js';
import type { ClickHouseContext } from './context.js';
import { bounded, num, settings, STOPPED } from './run.js';

export interface EstimateOptions {
  /** Estimates running at once; more wait. */
  connections?: number;
  /** Estimates that may wait; more are refused with EstimatesBusy. */
  queueMax?: number;
}

/**
 * Each count is already parallel inside the server (max_threads): more at once only share its
 * cores. Four leave room in the client's socket pool (10) for ingest and refreshes.
 */
const DEFAULT_CLICKHOUSE_ESTIMATES = 4;

const CSV_SETTINGS = { format_csv_null_representation: '', output_format_csv_crlf_end_of_line: 0 } as const;

export class ClickHouseQueries {
  /** Run slots instead of connections: a ClickHouse query needs none of its own. */
  private readonly queue: EstimateAdmission<true>;

  constructor(readonly ctx: ClickHouseContext, options: EstimateOptions) {
    const connections = options.connections ?? DEFAULT_CLICKHOUSE_ESTIMATES;
    this.queue = new EstimateAdmission(connections, options.queueMax ?? 4 * connections);
  }

  estimateTurn(budgetMs: number): EstimateTurn {
    const place = this.queue.admit(performance.now() + budgetMs);
    const db = this.ctx.database;
    const read = async <T>(query: ClickHouseQuery, as: (rows: Record<string, unknown>[]) => T, by?: number): Promise<T | null> => {
      const rows = await this.readBy<Record<string, unknown>>(query, Math.min(by ?? Infinity, place.deadline));
      return rows === null ? null : as(rows);
    };
    return {
      deadline: place.deadline,
      count: (plan, ws, options) => read(clickhousePrinter.count(plan, ws, db, options?.sample), countOf, options?.by),
      breakdown: (plan, ws, breakdown, options) => read(clickhousePrinter.breakdown(plan, ws, breakdown, db), breakdownOf, options?.by),
      overlap: (plans, ws) => read(clickhousePrinter.overlap(plans, ws, db), overlapOf),
      revenue: (report, ws) => read(clickhousePrinter.revenue(report, ws, db), (rows) => rows.map(revenueRow)),
      end: () => this.queue.leave(place),
    };
  }

  countWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<number | null> {
    return this.countQueryWithin(this.printCount(plan, ws), budgetMs);
  }

  /** A `SELECT count() AS count` statement within `budgetMs`, in a place of its own; null past it. */
  async countQueryWithin(query: ClickHouseQuery, budgetMs: number): Promise<number | null> {
    const place = this.queue.admit(performance.now() + budgetMs);
    try {
      return await this.countBy(query, place.deadline);
    } finally {
      this.queue.leave(place);
    }
  }

  /** The count's statement as it runs; its `{pN:Type}` placeholders are params[N - 1]. */
  countQuery(plan: SetPlan, ws: string): CompiledQuery {
    const query = this.printCount(plan, ws);
    // An array parameter (count bounds per leaf) is shown as its ClickHouse literal.
    return { sql: query.sql, params: Object.values(query.params).map((p): SqlParam => (Array.isArray(p) ? `[${p.join(', ')}]` : p)) };
  }

  /**
   * ClickHouse has no EXPLAIN ANALYZE; `EXPLAIN indexes = 1` is the profile that says where the
   * time goes: the plan's steps and, for every table read, the parts and granules its primary key
   * kept out of all (a leaf whose event name or time range does not narrow the read shows here).
   * Within the budget like a count; null past it.
   */
  async profileWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<string | null> {
    const query = this.printCount(plan, ws);
    const place = this.queue.admit(performance.now() + budgetMs);
    try {
      const lines = await this.readBy<{ explain: string }>({ sql: `EXPLAIN indexes = 1 ${query.sql}`, params: query.params }, place.deadline);
      return lines === null ? null : lines.map((l) => l.explain).join('\n');
    } finally {
      this.queue.leave(place);
    }
  }

  async writeMembers(plan: SetPlan, ws: string, path: string, format: 'csv' | 'parquet'): Promise<number> {
    const query = membersByIds(plan, ws, this.ctx.database);
    return writeRows(this.ctx, query, path, format);
  }

  async listMembers(plan: SetPlan, ws: string): Promise<Member[]> {
    const query = membersByIds(plan, ws, this.ctx.database);
    const result = await this.ctx.client.query({ query: query.sql, query_params: query.params, format: 'JSONEachRow', clickhouse_settings: settings(this.ctx) });
    return result.json<Member>();
  }

  /** The estimates' state and counters (tests and operators read them). */
  estimateStats(): EstimateStats {
    return this.queue.stats();
  }

  private printCount(plan: SetPlan, ws: string): ClickHouseQuery {
    return clickhousePrinter.count(plan, ws, this.ctx.database);
  }

  private async countBy(query: ClickHouseQuery, deadline: number): Promise<number | null> {
    const rows = await this.readBy<Record<string, unknown>>(query, deadline);
    return rows === null ? null : countOf(rows);
  }

  /** The rows of a statement run in its turn before `deadline`; null once it has passed, waiting or running. */
  private async readBy<T>(query: ClickHouseQuery, deadline: number): Promise<T[] | null> {
    if ((await this.queue.acquire(deadline, () => true)) === null) return null;
    try {
      const rows = await bounded(this.ctx, { deadline }, async (run) => {
        const result = await this.ctx.client.query({
          query: `${query.sql}\nSETTINGS ${run.limit}`, query_params: query.params, query_id: run.query_id, abort_signal: run.abort_signal,
          format: 'JSONEachRow', clickhouse_settings: settings(this.ctx),
        });
        return result.json<T>();
      });
      return rows === STOPPED ? null : rows;
    } finally {
      this.queue.release(true);
    }
  }
}

/** The members by public ids, by person_id then visitor_id (people first), as DuckDB lists them. */
function membersByIds(plan: SetPlan, ws: string, database: string): ClickHouseQuery {
  const query = clickhousePrinter.members(plan, ws, database);
  return {
    sql: `SELECT person_id, visitor_id, external_id, email FROM (${query.sql}) AS members ORDER BY person_id ASC NULLS LAST, visitor_id ASC`,
    params: query.params,
  };
}

/**
 * Writes a statement's rows to `path` as ClickHouse formats them, streamed from the server; the
 * row count from the statement's summary (a server gives the final one with wait_end_of_query).
 * CSV: a header, NULL as an empty field, every string quoted (DuckDB quotes only where needed:
 * the same rows to a CSV reader).
 */
export async function writeRows(ctx: ClickHouseContext, query: { sql: string; params: Record<string, unknown> }, path: string, format: 'csv' | 'parquet'): Promise<number> {
  const result = await ctx.client.exec({
    query: `${query.sql}\nFORMAT ${format === 'csv' ? 'CSVWithNames' : 'Parquet'}`,
    query_params: query.params,
    clickhouse_settings: { ...settings(ctx), ...(format === 'csv' ? CSV_SETTINGS : {}), wait_end_of_query: 1 },
  });
  await pipeline(result.stream, createWriteStream(path));
  if (result.summary?.result_rows === undefined) throw new Error('ClickHouse did not report the number of rows written');
  return num(result.summary.result_rows);
}
