// The control store on PostgreSQL, shared by any number of API nodes: pooled connections, each
// transaction on one of them at REPEATABLE READ. A transaction that loses a race to another
// (another node's) runs again from the start: a serialization failure (an update of a row changed
// since the transaction's snapshot), a deadlock, or a unique key of a find-or-create taken
// meanwhile (RACED_CONSTRAINTS). On the next run the transaction sees the winner's rows.

import pg from 'pg';
import { ControlCaches } from '../control/caches.js';
import { KeyBlocks } from '../control/keys.js';
import type { ControlRow, ControlSql, ControlStore, ControlTx, ControlValue, KeySequence } from '../control/store.js';
import { postgresDialect } from './dialect.js';
import { MIGRATIONS_TABLE, migratePostgres } from './migrate.js';
import { PostgresSearch } from './search.js';
import { POSTGRES_BOUNDS, type PostgresBounds } from '../bounds.js';
import { asOutage, DependencyUnavailable } from '../errors.js';
import { postgresOutage } from './outage.js';

const { Pool, types } = pg;

/**
 * Unique keys whose violation means that another transaction created the same thing first (keys
 * written with ON CONFLICT DO NOTHING never raise one: there the loser gets a serialization failure).
 */
const RACED_CONSTRAINTS = new Set([
  'persons_external_id', 'persons_email', 'visitors_visitor_id', 'payment_customers_id', 'payment_objects_id', 'payments_id', 'refunds_id',
  'api_keys_hash',
]);

/** Runs of one transaction at most, and the longest wait between two (jittered). */
const MAX_RUNS = 8;
const MAX_BACKOFF_MS = 200;

/** Whether `err` says the transaction lost a race, so running it again can succeed. */
function lostRace(err: unknown): boolean {
  if (!(err instanceof pg.DatabaseError)) return false;
  if (err.code === '40001' || err.code === '40P01') return true;
  return err.code === '23505' && err.constraint !== undefined && RACED_CONSTRAINTS.has(err.constraint);
}

/** int8 as a number (a bigint past 2^53): keys as ControlValue gives them. */
const bigint = (text: string): number | bigint => {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
};

// JSON as its text, as DuckDB hands JSON columns over; the callers parse what they need.
const PARSERS: Record<number, (text: string) => unknown> = {
  [types.builtins.INT8]: bigint,
  [types.builtins.JSON]: (text) => text,
  [types.builtins.JSONB]: (text) => text,
};
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => PARSERS[oid] ?? types.getTypeParser(oid, format)) as typeof types.getTypeParser,
};

/**
 * Instants as UTC text: `CAST($n AS TIMESTAMP)` in a statement (where nothing else types the
 * parameter) then reads the UTC time, as DuckDB does, in a session whose zone is UTC.
 */
const bind = (params: readonly ControlValue[]): unknown[] =>
  params.map((v) => (v instanceof Date ? v.toISOString() : typeof v === 'bigint' ? v.toString() : v));

class PostgresControlSql implements ControlSql {
  readonly dialect = postgresDialect;

  constructor(protected readonly db: pg.Pool | pg.PoolClient, readonly search: PostgresSearch) {}

  async all(sql: string, params: readonly ControlValue[] = []): Promise<ControlRow[]> {
    return (await this.db.query<ControlRow>(sql, bind(params)).catch(outage)).rows;
  }

  async run(sql: string, params: readonly ControlValue[] = []): Promise<number> {
    return (await this.db.query(sql, bind(params)).catch(outage)).rowCount ?? 0;
  }
}

class PostgresControlTx extends PostgresControlSql implements ControlTx {
  readonly hooks: (() => void)[] = [];

  afterCommit(hook: () => void): void {
    this.hooks.push(hook);
  }
}

const ignoreLostConnection = (): void => undefined;

const outage = (err: unknown): never => {
  throw asOutage('postgresql', err, postgresOutage);
};

/** The client's own timer past the server's statement_timeout: a live server answers first, a frozen one is given up on. */
const CLIENT_GRACE_MS = 1_000;

export interface PostgresOptions {
  /** A postgres:// connection string. */
  url: string;
  bounds?: PostgresBounds;
  /** Connections for transactions, and for statements outside one. */
  transactionConnections?: number;
  statementConnections?: number;
}

function connect(url: string, max: number, bounds: PostgresBounds): pg.Pool {
  const pool = new Pool({
    connectionString: url, max, types: TYPES, application_name: 'audiences',
    connectionTimeoutMillis: bounds.connectTimeoutMs,
    statement_timeout: bounds.statementTimeoutMs,
    query_timeout: bounds.statementTimeoutMs + CLIENT_GRACE_MS,
    // A transaction left open by a frozen client does not hold its locks for long.
    idle_in_transaction_session_timeout: bounds.statementTimeoutMs * 3,
    idleTimeoutMillis: bounds.idleTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: bounds.keepAliveMs,
    // Text without a zone (CAST(… AS TIMESTAMP)) is UTC, as the statements write it. No parallel
    // workers: control statements read few rows, and launching a worker cost a people lookup of
    // 1 ms of work 100 ms on a loaded machine (bench/RESULTS.md, "People lookup").
    options: '-c TimeZone=UTC -c max_parallel_workers_per_gather=0',
  });
  // An idle connection the server dropped: the pool replaces it; without a listener it would end the process.
  pool.on('error', (err) => console.warn(`PostgreSQL: an idle connection failed (${err.message})`));
  return pool;
}

export class PostgresControl extends PostgresControlSql implements ControlStore {
  readonly shared = true;
  private readonly keys = new KeyBlocks(this);
  readonly caches = new ControlCaches(this.shared);

  /**
   * Statements outside a transaction have a pool of their own: a transaction may run one (a block
   * of keys drawn mid-transaction), which must not wait for a connection that transactions hold.
   */
  private constructor(private readonly transactions: pg.Pool, private readonly statements: pg.Pool) {
    super(statements, new PostgresSearch());
  }

  /** Connects and brings the schema up to date (concurrent starts wait for each other's migration). */
  static async open(options: PostgresOptions): Promise<PostgresControl> {
    const bounds = options.bounds ?? POSTGRES_BOUNDS;
    const transactions = connect(options.url, options.transactionConnections ?? 10, bounds);
    const statements = connect(options.url, options.statementConnections ?? 5, bounds);
    try {
      const client = await transactions.connect();
      try {
        await migratePostgres(client);
      } finally {
        client.release();
      }
    } catch (err) {
      await Promise.all([transactions.end(), statements.end()]);
      throw err;
    }
    return new PostgresControl(transactions, statements);
  }

  async transaction<T>(fn: (tx: ControlTx) => Promise<T>): Promise<T> {
    for (let run = 1; ; run++) {
      const client = await this.transactions.connect().catch(outage);
      // The server going away between two statements (the transaction waiting on other work) is
      // an 'error' event of the checked-out connection: without a listener it would end the
      // process. The next statement fails, and the transaction with it.
      client.on('error', ignoreLostConnection);
      const tx = new PostgresControlTx(client, this.search);
      let result: T;
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ').catch(outage);
        result = await fn(tx);
        await client.query('COMMIT').catch(outage);
      } catch (err) {
        // A connection that cannot roll back is broken: the pool drops it. After an outage it is
        // dropped at once (a ROLLBACK to a frozen server would wait out another timeout); the
        // server rolls back an abandoned transaction by itself.
        const broken = err instanceof DependencyUnavailable || await client.query('ROLLBACK').then(() => false, () => true);
        client.off('error', ignoreLostConnection);
        client.release(broken);
        if (run < MAX_RUNS && lostRace(err)) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(MAX_BACKOFF_MS, 5 * 2 ** run)));
          continue;
        }
        throw err;
      }
      client.off('error', ignoreLostConnection);
      client.release();
      for (const hook of tx.hooks) hook();
      return result;
    }
  }

  nextKeys(sequence: KeySequence, n: number): Promise<number[]> {
    return this.keys.next(sequence, n);
  }

  /** Why the server cannot take writes (/health), or null: a read-only session means a standby or a server refusing writes. */
  async unwritable(): Promise<string | null> {
    const [row] = await this.all("SELECT current_setting('transaction_read_only') AS read_only");
    return row?.read_only === 'off' ? null : 'the server is read-only';
  }

  async schemaVersion(): Promise<number> {
    const [row] = await this.all(`SELECT count(*) AS n FROM ${MIGRATIONS_TABLE}`);
    return Number(row?.n ?? 0);
  }

  async close(): Promise<void> {
    await Promise.all([this.transactions.end(), this.statements.end()]);
  }
}
