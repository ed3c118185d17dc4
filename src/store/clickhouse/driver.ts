// The query layer's driver on ClickHouse: statements of the ClickHouse dialect
// (criteria/print/clickhouse.ts) with their parameters bound, never printed; estimates admitted
// through the store's own queue of run slots.

import { ClickHousePrinter, type ClickHouseQuery, type CompiledQuery, type SetPlan, type SqlParam } from '../../criteria/index.js';
import type { EstimateStats } from '../analytics.js';
import { EstimateAdmission } from '../query/admission.js';
import type { EstimatePlace, QueryDriver, Row } from '../query/driver.js';
import type { ClickHouseContext } from './context.js';
import { bounded, settings, STOPPED, writeRows } from './run.js';

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

export class ClickHouseDriver implements QueryDriver<ClickHouseQuery> {
  readonly printer: ClickHousePrinter;
  /** Run slots instead of connections: a ClickHouse query needs none of its own. */
  private readonly queue: EstimateAdmission<true>;

  constructor(private readonly ctx: ClickHouseContext, options: EstimateOptions = {}) {
    this.printer = new ClickHousePrinter(ctx.database);
    const connections = options.connections ?? DEFAULT_CLICKHOUSE_ESTIMATES;
    this.queue = new EstimateAdmission(connections, options.queueMax ?? 4 * connections);
  }

  async prepare(plan: SetPlan): Promise<SetPlan> {
    return plan;
  }

  admit(deadline: number): EstimatePlace {
    return this.queue.admit(deadline);
  }

  leave(place: EstimatePlace): void {
    this.queue.leave(place);
  }

  stats(): EstimateStats {
    return this.queue.stats();
  }

  async readBy(query: ClickHouseQuery, deadline: number): Promise<Row[] | null> {
    if ((await this.queue.acquire(deadline, () => true)) === null) return null;
    try {
      const rows = await bounded(this.ctx, { deadline }, async (run) => {
        const result = await this.ctx.client.query({
          query: `${query.sql}\nSETTINGS ${run.limit}`, query_params: query.params, query_id: run.query_id, abort_signal: run.abort_signal,
          format: 'JSONEachRow', clickhouse_settings: settings(this.ctx),
        });
        return result.json<Row>();
      });
      return rows === STOPPED ? null : rows;
    } finally {
      this.queue.release(true);
    }
  }

  /**
   * ClickHouse has no EXPLAIN ANALYZE; `EXPLAIN indexes = 1` is the profile that says where the
   * time goes: the plan's steps and, for every table read, the parts and granules its primary key
   * kept out of all (a leaf whose event name or time range does not narrow the read shows here).
   */
  async profileBy(query: ClickHouseQuery, deadline: number): Promise<string | null> {
    const lines = await this.readBy({ sql: `EXPLAIN indexes = 1 ${query.sql}`, params: query.params }, deadline);
    return lines === null ? null : lines.map((l) => l.explain).join('\n');
  }

  async rows(query: ClickHouseQuery): Promise<Row[]> {
    const result = await this.ctx.client.query({ query: query.sql, query_params: query.params, format: 'JSONEachRow', clickhouse_settings: settings(this.ctx) });
    return result.json<Row>();
  }

  copyTo(query: ClickHouseQuery, path: string, format: 'csv' | 'parquet'): Promise<number> {
    return writeRows(this.ctx, query, path, format);
  }

  /** Its `{pN:Type}` placeholders are params[N - 1]; an array parameter (count bounds per leaf) is shown as its ClickHouse literal. */
  shown(query: ClickHouseQuery): CompiledQuery {
    return { sql: query.sql, params: Object.values(query.params).map((p): SqlParam => (Array.isArray(p) ? `[${p.join(', ')}]` : p)) };
  }
}
