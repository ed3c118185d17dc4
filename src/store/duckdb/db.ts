// The embedded DuckDB database: the only holder of connections. Writes go through one connection
// under a lock, so transactions never interleave; reads and estimates get connections of their own,
// and estimates are few and budgeted from their request's start, so they never starve ingest.

import { mkdirSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBConnection, DuckDBInstance, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';
import type { SqlParam } from '../../criteria/index.js';
import { FORMULA_START } from '../csv-cells.js';
import { countWithin } from '../query/queries.js';
import { DEFAULT_ESTIMATE_CONNECTIONS, DuckDBDriver } from './driver.js';
import { interruptAfter, INTERRUPTED } from './interrupt.js';
import { CHECKPOINT_BEFORE, MIGRATIONS } from './migrations.js';
import { DuckDBSearch } from './search.js';
import { runKept } from './statements.js';
import { readAhead, tailFile } from './tail.js';
import { TypedColumns } from './typed.js';
import { DUCKDB_BOUNDS, type DuckDBBounds } from '../bounds.js';
import { asOutage, DependencyUnavailable } from '../errors.js';
import { committedDespite, duckdbOutage, freeBytes, invalidatesDatabase, MIN_FREE_BYTES } from './outage.js';

export type Row = Record<string, unknown>;

/** The checkpoint at close failed: the WAL holds what it would have written and is replayed at the next start. */
export class CheckpointFailed extends Error {
  constructor(cause: unknown) {
    super(`DuckDB: the checkpoint at close failed (${cause instanceof Error ? cause.message.split('\n')[0] : String(cause)}); the WAL is kept and replayed at the next start`, { cause });
  }
}
export type Params = DuckDBValue[];

/** Serializes async critical sections. */
class Lock {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `fn` after the sections before it; one that has not started within `waitMs` fails with `late()` and never runs. */
  run<T>(fn: () => Promise<T>, waitMs = Infinity, late?: () => Error): Promise<T> {
    let state: 'waiting' | 'started' | 'gave up' = 'waiting';
    const turn = () => {
      if (state === 'gave up') return Promise.resolve(undefined as T);
      state = 'started';
      return fn();
    };
    const result = this.tail.then(turn, turn);
    this.tail = result.catch(() => undefined);
    if (!Number.isFinite(waitMs) || !late) return result;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (state !== 'waiting') return;
        state = 'gave up';
        reject(late());
      }, waitMs);
      result.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  }
}

/** How often a database DuckDB invalidated is tried again (reopened once the disk has room). */
const REOPEN_EVERY_MS = 1_000;

/** Idle read connections kept (query): more are closed when their read ends. */
const IDLE_READERS = 4;

/** The longest timer Node keeps (about 24.8 days): a statement with no limit of its own. */
const NO_LIMIT_MS = 2 ** 31 - 1;

export interface StoreOptions {
  /** DuckDB worker threads (default: DUCKDB_THREADS, else one per core). */
  threads?: number;
  /** Concurrent estimates; more wait for a connection (default DEFAULT_ESTIMATE_CONNECTIONS). */
  estimateConnections?: number;
  /** Estimates under way beyond the connections (waiting for one); more are refused. Default 4 × the connections. */
  estimateQueueMax?: number;
  /** How long a write may wait for the writer; DUCKDB_BOUNDS otherwise. */
  duckdb?: DuckDBBounds;
  /** The WAL size past which a commit checkpoints (DuckDB's text, `256MB` unless given: the fault tests make it small). */
  checkpointThreshold?: string;
}

/**
 * DUCKDB_THREADS: the worker threads of every database the service and the command line open;
 * unset, DuckDB's one per core. Fewer leave cores to the rest of a shared machine (the test suite
 * runs two files at once on two cores with one each).
 */
export function threadsOf(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.DUCKDB_THREADS;
  if (raw === undefined || raw === '') return undefined;
  const threads = Number(raw);
  if (!Number.isSafeInteger(threads) || threads < 1) throw new Error(`DUCKDB_THREADS must be a whole number of 1 or more, got "${raw}"`);
  return threads;
}

/** The storage format of the files the service makes (readable by DuckDB 1.5 and later). */
export const STORAGE_VERSION = 'v1.5.0';

export class Store {
  private readonly writeLock = new Lock();
  /** Callbacks of the running `transaction`, run once it has committed (null outside one). */
  private commitHooks: (() => void)[] | null = null;
  /** The criteria queries' driver, with the estimates' connections. */
  readonly driver: DuckDBDriver;
  /** The typed payload columns' slots, as committed. */
  readonly typed: TypedColumns = new TypedColumns(this);
  /** The people search's indexes of this database's persons and customers. */
  readonly search: DuckDBSearch = new DuckDBSearch(this);
  private closed = false;
  /** The fatal error that invalidated the database; requests answer 503 until it is reopened. */
  private invalid: Error | null = null;
  private reopening: NodeJS.Timeout | null = null;
  private readonly writeWaitMs: number;
  /**
   * Connections of reads (query) between them, with the statements they prepared: a read parsed
   * once per connection, not at every call (bench/RESULTS.md, "People lookup"). Each holds no
   * transaction between reads, so every read sees what was committed before it.
   */
  private readonly readers: DuckDBConnection[] = [];

  private constructor(
    private instance: DuckDBInstance,
    private writer: DuckDBConnection,
    private readonly path: string,
    private readonly config: Record<string, string>,
    options: StoreOptions,
  ) {
    const connections = options.estimateConnections ?? DEFAULT_ESTIMATE_CONNECTIONS;
    this.driver = new DuckDBDriver(this, instance, connections, options.estimateQueueMax ?? 4 * connections);
    this.writeWaitMs = (options.duckdb ?? DUCKDB_BOUNDS).writeWaitMs;
  }

  static async open(path: string, options: StoreOptions = {}): Promise<Store> {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    // A checkpoint runs inside the commit that fills the WAL past the threshold and stalls ingest
    // for its length, often at DuckDB's 16 MB default (bench/RESULTS.md, "Ingest over HTTP"). A
    // crash replays at most this much WAL on restart.
    // A new file is written in DuckDB 1.5's storage format (its default is 1.0's, for older
    // readers): its dictionary-FSST strings are filtered faster (bench/RESULTS.md, "100 M
    // events"). A file keeps the format it was made in.
    const config: Record<string, string> = { checkpoint_threshold: options.checkpointThreshold ?? '256MB', storage_compatibility_version: STORAGE_VERSION };
    const threads = options.threads ?? threadsOf(process.env);
    if (threads) config.threads = String(threads);
    const instance = await DuckDBInstance.create(path, config);
    const store = new Store(instance, await instance.connect(), path, config, options);
    await store.migrate();
    return store;
  }

  private async migrate(): Promise<void> {
    await this.writer.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)');
    const applied = await this.writer.runAndReadAll('SELECT coalesce(max(version), 0) AS v FROM schema_migrations');
    const current = Number(applied.getRowObjects()[0]?.v ?? 0);
    // A new database takes every migration in one transaction: nothing is there to checkpoint
    // between them, and each commit costs (every test's in-memory store is a new database).
    if (current === 0) {
      await this.transaction(async (tx) => {
        for (const migration of MIGRATIONS) await tx.run(migration);
        await tx.run('INSERT INTO schema_migrations (version) SELECT range FROM range(1, $1)', [MIGRATIONS.length + 1]);
      });
    } else {
      for (let version = current + 1; version <= MIGRATIONS.length; version++) {
        if (CHECKPOINT_BEFORE.has(version)) await this.writer.run('CHECKPOINT');
        await this.transaction(async (tx) => {
          await tx.run(MIGRATIONS[version - 1]!);
          await tx.run('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
        });
      }
    }
    // DuckDB (1.5) cannot replay an `ALTER TABLE … ADD COLUMN` of a table with a function default
    // (`current_timestamp`) from the WAL: after a crash the file would not open. Migrations go
    // into the database file at once instead.
    if (current < MIGRATIONS.length) await this.writer.run('CHECKPOINT');
  }

  /** Runs `fn` in one transaction on the write connection; nothing is kept if it throws. */
  transaction<T>(fn: (tx: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.writeLock.run(async () => {
      this.assertServing();
      const hooks: (() => void)[] = [];
      this.commitHooks = hooks;
      const writer = this.writer;
      try {
        await writer.run('BEGIN TRANSACTION');
        const result = await fn(writer);
        // A commit whose automatic checkpoint then failed is durable: answered as stored (the
        // database is reopened behind it), so a client never retries what was kept.
        await writer.run('COMMIT').catch((err: unknown) => {
          if (!committedDespite(err)) throw err;
          this.failed(err);
        });
        this.commitHooks = null;
        for (const hook of hooks) hook();
        return result;
      } catch (err) {
        this.commitHooks = null;
        await writer.run('ROLLBACK').catch(() => undefined);
        throw this.failed(err);
      }
    }, this.writeWaitMs, () => new DependencyUnavailable('duckdb', `a write waited more than ${this.writeWaitMs} ms for the database`));
  }

  /** Throws DependencyUnavailable while the database is invalidated (until it is reopened). */
  assertServing(): void {
    if (this.invalid) throw new DependencyUnavailable('duckdb', 'the database is reopened after a failed checkpoint', { cause: this.invalid });
  }

  /** What the caller of a failed statement throws: an outage as DependencyUnavailable; a fatal error starts reopening the database. */
  failed(err: unknown): unknown {
    if (invalidatesDatabase(err) && !this.invalid && !this.closed) {
      this.invalid = err as Error;
      console.warn(`DuckDB: ${(err as Error).message.split('\n')[0]}; writes and reads answer 503 until the database is reopened`);
      // A database in memory has nothing to be reopened from.
      if (this.path !== ':memory:') this.reopenLater();
    }
    return asOutage('duckdb', err, duckdbOutage);
  }

  /** Free space and the database's state, for /health: why it cannot serve writes, or null. */
  async unwritable(): Promise<string | null> {
    if (this.invalid) return 'the database is reopened after a failed checkpoint';
    if (this.path !== ':memory:' && await freeBytes(dirname(this.path)) < MIN_FREE_BYTES) return 'the disk is full';
    await this.query('SELECT 1');
    return null;
  }

  private reopenLater(): void {
    this.reopening = setTimeout(() => void this.reopen(), REOPEN_EVERY_MS);
    this.reopening.unref();
  }

  /**
   * Opens the database again once its disk has room: DuckDB replays the WAL, which holds every
   * committed transaction, so nothing acknowledged is lost or doubled. Between writes (the writer's lock).
   */
  private async reopen(): Promise<void> {
    this.reopening = null;
    if (this.closed) return;
    if (await freeBytes(dirname(this.path)).catch(() => 0) < MIN_FREE_BYTES) return this.reopenLater();
    await this.writeLock.run(async () => {
      if (this.closed) return;
      const closing = (close: () => void) => {
        try {
          close();
        } catch {
          // Already closed by an earlier attempt.
        }
      };
      closing(() => this.writer.closeSync());
      this.closeReaders();
      closing(() => this.instance.closeSync());
      try {
        this.instance = await DuckDBInstance.create(this.path, this.config);
        this.writer = await this.instance.connect();
        this.driver.reopened(this.instance);
        this.invalid = null;
        console.warn('DuckDB: the database was reopened and its WAL replayed; serving again');
      } catch (err) {
        console.warn(`DuckDB: reopening failed (${err instanceof Error ? err.message.split('\n')[0] : String(err)}); trying again`);
        this.reopenLater();
      }
    });
  }

  /**
   * Inside `transaction`: runs `hook` once that transaction has committed, before the next one
   * starts (never after a rollback). In-memory state that mirrors committed rows updates here.
   */
  afterCommit(hook: () => void): void {
    if (!this.commitHooks) throw new Error('afterCommit is only valid inside Store.transaction');
    this.commitHooks.push(hook);
  }

  /**
   * Runs `fn` in one transaction on a connection of its own, so a long refresh never holds the
   * ingest writer. Past `limitMs` the running statement is interrupted inside DuckDB, the
   * transaction rolls back, and the error says so. Conflicting writes to the same rows fail at commit.
   */
  async transactionWithin<T>(limitMs: number, fn: (tx: DuckDBConnection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.withConnection(async (conn) => {
      await conn.run('BEGIN TRANSACTION');
      try {
        const result = await interruptAfter(conn, limitMs, () => fn(conn), signal);
        if (result === INTERRUPTED) {
          throw new Error(signal?.aborted ? 'interrupted: the service stopped during the refresh' : `interrupted after the ${limitMs} ms limit`);
        }
        // Within the limit: COMMIT runs outside the interrupt window, so finished work is kept.
        await conn.run('COMMIT');
        return result;
      } catch (err) {
        await conn.run('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  /**
   * Writes a query's rows to a file with DuckDB's COPY; returns the row count. The path is the
   * caller's own file (a temporary file, an analyst's --out), quoted as a SQL string: COPY takes
   * no parameter there.
   */
  async copyTo(sql: string, params: Params, path: string, format: 'csv' | 'parquet'): Promise<number> {
    const options = format === 'csv' ? 'FORMAT csv, HEADER true' : 'FORMAT parquet';
    const target = `'${path.replace(/'/g, "''")}'`;
    // A CSV's cells are neutralized (store/csv-cells.ts): every column, as text, under its own name.
    const cell = 'CAST(COLUMNS(*) AS VARCHAR)';
    const rows = format === 'csv' ? `SELECT CASE WHEN regexp_matches(${cell}, '${FORMULA_START}') THEN '''' || ${cell} ELSE ${cell} END FROM (${sql})` : sql;
    return this.withConnection(async (conn) => (await conn.run(`COPY (${rows}) TO ${target} (${options})`, params)).rowsChanged);
  }

  /**
   * The bytes COPY writes with `options`, read from its file while it writes it (store/duckdb/tail.ts),
   * the file deleted at the end. Resolves with the first bytes, or once COPY has ended, so a failed
   * query throws here; ending the iteration early interrupts COPY.
   */
  async copyStream(sql: string, params: Params, options: string): Promise<AsyncIterable<Uint8Array>> {
    const dir = await mkdtemp(join(tmpdir(), 'duckdb-copy-'));
    const path = join(dir, 'out');
    // Created before COPY, which writes it in place (not a temporary file renamed at the end).
    const file = await open(path, 'w+').catch(async (err: unknown) => {
      await rm(dir, { recursive: true, force: true });
      throw err;
    });
    const stop = new AbortController();
    const copy = this.withConnection((conn) => interruptAfter(conn, NO_LIMIT_MS,
      () => conn.run(`COPY (${sql}) TO '${path.replace(/'/g, "''")}' (${options}, USE_TMP_FILE false)`, params), stop.signal));
    return readAhead(tailFile(file, copy, async () => {
      stop.abort();
      await copy.catch(() => undefined);
      await file.close();
      await rm(dir, { recursive: true, force: true });
    }));
  }

  /** Runs `fn` on a fresh connection of its own, closed afterwards. */
  async withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    this.assertServing();
    const conn = await this.instance.connect().catch((err: unknown) => {
      throw this.failed(err);
    });
    try {
      return await fn(conn);
    } catch (err) {
      throw this.failed(err);
    } finally {
      conn.closeSync();
    }
  }

  /** A read on a kept connection (one at a time on each), by a statement it prepared once when it has parameters. */
  async query(sql: string, params: Params = [], types?: DuckDBType[]): Promise<Row[]> {
    this.assertServing();
    const instance = this.instance;
    const conn = this.readers.pop() ?? await instance.connect().catch((err: unknown) => {
      throw this.failed(err);
    });
    let keep = false;
    try {
      const rows = params.length > 0 ? (await runKept(conn, sql, params, types)).getRowObjectsJS() : (await conn.runAndReadAll(sql)).getRowObjectsJS();
      keep = true;
      return rows as Row[];
    } catch (err) {
      throw this.failed(err);
    } finally {
      // A connection of a database since closed (reopened) is not kept, nor one whose read failed.
      if (keep && instance === this.instance && !this.closed && this.readers.length < IDLE_READERS) this.readers.push(conn);
      else conn.closeSync();
    }
  }

  private closeReaders(): void {
    for (const conn of this.readers.splice(0)) conn.closeSync();
  }

  /**
   * Runs a `SELECT count(*) AS count` query within `budgetMs`, in an estimate's place of its own.
   * Past the budget the query is interrupted inside DuckDB and awaited until it has stopped, or
   * never starts if the budget ran out waiting for a connection; the answer is then null.
   */
  countWithin(sql: string, params: SqlParam[], budgetMs: number): Promise<number | null> {
    return countWithin(this.driver, { sql, params }, budgetMs);
  }

  /**
   * Writes the WAL and any updated rows into the database's storage now, between transactions of
   * the writer; false when another connection's transaction stopped it (it runs again later by itself).
   */
  checkpoint(): Promise<boolean> {
    return this.writeLock.run(() => this.writer.run('CHECKPOINT').then(() => true, (err: unknown) => {
      this.failed(err);
      return false;
    }));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Checkpoints the WAL into the database file and closes; in-flight writes finish first. A
   * checkpoint that fails (a full disk) is thrown after closing: the WAL is kept and replayed at
   * the next start, so nothing is lost, but the caller must say so.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reopening) clearTimeout(this.reopening);
    let failure: unknown = this.invalid;
    await this.writeLock.run(async () => {
      if (!this.invalid) await this.writer.run('CHECKPOINT').catch((err: unknown) => (failure = err));
      try {
        this.writer.closeSync();
      } catch {
        // Closed by a reopening that failed.
      }
    });
    this.driver.close();
    this.closeReaders();
    try {
      this.instance.closeSync();
    } catch {
      // As the writer.
    }
    if (failure) throw new CheckpointFailed(failure);
  }
}
