// The query layer's driver on DuckDB: statements of the DuckDB dialect (criteria/print/duckdb.ts)
// over the plan annotated with the typed payload columns that are ready, estimates run on
// connections of their own (reused: one whose query was interrupted comes back usable), admitted
// as every engine admits estimates (store/query/admission.ts).

import { availableParallelism } from 'node:os';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { type CompiledQuery, duckdbPrinter, type SetPlan, withTypedPaths } from '../../criteria/index.js';
import type { EstimateStats } from '../analytics.js';
import { EstimateAdmission } from '../query/admission.js';
import type { EstimatePlace, QueryDriver, Row } from '../query/driver.js';
import type { Store } from './db.js';
import { interruptAfter, INTERRUPTED } from './interrupt.js';

/**
 * Every call into DuckDB holds a thread of libuv's pool (UV_THREADPOOL_SIZE, 4 unless set) until it
 * returns. Estimates on all four made each ingest statement wait for one, several times longer
 * than on two (bench/RESULTS.md, "Estimates beside ingest"). So estimates leave two threads for the
 * writer and the other reads, and use no more connections than there are cores: each query is
 * already parallel inside DuckDB.
 */
export const DEFAULT_ESTIMATE_CONNECTIONS = Math.max(1, Math.min(availableParallelism(), (Number(process.env.UV_THREADPOOL_SIZE) || 4) - 2));

export class DuckDBDriver implements QueryDriver<CompiledQuery> {
  readonly printer = duckdbPrinter;
  private readonly idle: DuckDBConnection[] = [];
  /** The database opening each connection was made on: one from before a reopen is replaced when next used. */
  private readonly opening = new WeakMap<DuckDBConnection, number>();
  private openings = 0;
  private readonly admission: EstimateAdmission<DuckDBConnection>;
  private open = 0;

  /** `size` estimates run at once, each on a connection of its own; `maxWaiting` more wait for one. */
  constructor(private readonly store: Store, private instance: DuckDBInstance, size: number, maxWaiting: number) {
    this.admission = new EstimateAdmission(size, maxWaiting);
  }

  /** A physical annotation: the same rows. */
  async prepare(plan: SetPlan, ws: string): Promise<SetPlan> {
    return withTypedPaths(plan, await this.store.typed.printable(ws));
  }

  admit(deadline: number): EstimatePlace {
    return this.admission.admit(deadline);
  }

  leave(place: EstimatePlace): void {
    this.admission.leave(place);
  }

  stats(): EstimateStats {
    return this.admission.stats();
  }

  /** Prepared and run as separate steps, so a budget spent while planning never starts the execution. */
  async readBy(query: CompiledQuery, deadline: number): Promise<Row[] | null> {
    this.store.assertServing();
    const acquired = await this.acquire(deadline);
    if (!acquired) return null;
    let conn = acquired;
    try {
      conn = await this.current(conn);
      const rows = await interruptAfter(conn, deadline - performance.now(), async (expired) => {
        const prepared = await conn.prepare(query.sql);
        try {
          if (expired()) return null;
          prepared.bind(query.params);
          return (await prepared.runAndReadAll()).getRowObjectsJS() as Row[];
        } finally {
          prepared.destroySync();
        }
      });
      return rows === INTERRUPTED ? null : rows;
    } catch (err) {
      throw this.store.failed(err);
    } finally {
      this.release(conn);
    }
  }

  /** The database was opened again (store/duckdb/db.ts reopen): connections are made on `instance` from now on. */
  reopened(instance: DuckDBInstance): void {
    this.instance = instance;
    this.openings++;
  }

  /** `conn`, or one on the current opening in its place; when none can be made, `conn` is still the caller's to release. */
  private async current(conn: DuckDBConnection): Promise<DuckDBConnection> {
    if (this.opening.get(conn) === this.openings) return conn;
    const fresh = await this.instance.connect();
    this.opening.set(fresh, this.openings);
    conn.closeSync();
    return fresh;
  }

  /** DuckDB's EXPLAIN ANALYZE: the physical plan as it ran, each operator with its time and rows. */
  async profileBy(query: CompiledQuery, deadline: number): Promise<string | null> {
    const rows = await this.readBy({ sql: `EXPLAIN ANALYZE ${query.sql}`, params: query.params }, deadline);
    return rows === null ? null : rows.map((r) => String(r.explain_value)).join('\n');
  }

  rows(query: CompiledQuery): Promise<Row[]> {
    return this.store.query(query.sql, query.params);
  }

  copyTo(query: CompiledQuery, path: string, format: 'csv' | 'parquet'): Promise<number> {
    return this.store.copyTo(query.sql, query.params, path, format);
  }

  shown(query: CompiledQuery): CompiledQuery {
    return query;
  }

  /** Closes the idle estimate connections (the store is closing). */
  close(): void {
    for (const conn of this.idle.splice(0)) conn.closeSync();
  }

  /** A connection before `deadline`, or null once it has passed (the caller's query never runs). */
  private acquire(deadline: number): Promise<DuckDBConnection | null> {
    return this.admission.acquire(deadline, () => this.idle.pop() ?? (this.open < this.admission.size ? this.connect() : undefined));
  }

  private release(conn: DuckDBConnection): void {
    if (!this.admission.release(conn)) this.idle.push(conn);
  }

  private async connect(): Promise<DuckDBConnection> {
    this.open++;
    try {
      const conn = await this.instance.connect();
      this.opening.set(conn, this.openings);
      return conn;
    } catch (err) {
      this.open--;
      throw err;
    }
  }
}
