// A @clickhouse/client for the configured ClickHouse: a server or cluster at a URL, or, without
// one, the embedded chDB reached through the same client (chdb's connection), so the code path a
// cluster runs is the one the tests run. chdb is not a dependency of a default install.

import { statfs } from 'node:fs/promises';
import { type ClickHouseClient, ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { CLICKHOUSE_BOUNDS, type ClickHouseBounds } from '../bounds.js';
import { type ChdbEngineModule, holdEngine } from './embedded.js';
import { reportingOutages } from './outage.js';
import type { OutboxOptions } from './outbox.js';

export interface ClickHouseOptions {
  /** A server or a load balancer over a cluster; unset: the embedded chDB at `path`. */
  url?: string;
  /** The embedded chDB's directory (one per process); `:memory:` for a throwaway one. */
  path: string;
  database: string;
  /** The cluster of `ON CLUSTER` DDL and Distributed tables; unset: a single node. */
  cluster?: string;
  username?: string;
  password?: string;
  bounds?: ClickHouseBounds;
  /** The embedded engine's command-line settings (`CHDB_ENGINE_ARGS` unless given); ignored for a server. */
  engineArgs?: readonly string[];
  /** How long an insert retries and how often the outbox is swept (10 s and 30 s unless given: the fault tests wait less). */
  outbox?: Partial<OutboxOptions>;
}

/** ANALYTICS_STORE=clickhouse without CLICKHOUSE_URL, and chdb not installed. */
export class ChdbMissing extends Error {
  constructor() {
    super('ANALYTICS_STORE=clickhouse without CLICKHOUSE_URL runs the embedded chDB, which is not installed: run `npm run chdb:install`, or set CLICKHOUSE_URL to a ClickHouse server');
  }
}

// Specifiers in variables: chdb is optional, so the type checker must not require it.
const CHDB = 'chdb';
const CHDB_CONNECTION = 'chdb/connection';

interface ChdbModules {
  engine: ChdbEngineModule;
  connection: { createChdbConnection(options: { path: string }): NonNullable<Parameters<typeof createClient>[0]>['connection'] };
}

async function loadChdb(): Promise<ChdbModules | null> {
  try {
    return { engine: (await import(CHDB)) as ChdbEngineModule, connection: (await import(CHDB_CONNECTION)) as ChdbModules['connection'] };
  } catch {
    return null;
  }
}

/** Whether the embedded chDB can be loaded here. */
export async function chdbAvailable(): Promise<boolean> {
  return (await loadChdb()) !== null;
}

export async function connectClickHouse(options: ClickHouseOptions): Promise<ClickHouseClient> {
  if (options.url !== undefined) {
    const { requestTimeoutMs } = options.bounds ?? CLICKHOUSE_BOUNDS;
    // Failures reach the caller as errors; the client's own log would print them again on stderr.
    // The timeout is of silence (the socket's): a long query sends its progress in headers well
    // within it, so only a server that stopped answering reaches it (the client's guide,
    // docs/howto/long_running_queries.md).
    return reportingOutages(createClient({
      url: options.url, username: options.username, password: options.password, request_timeout: requestTimeoutMs, log: { level: ClickHouseLogLevel.OFF },
      clickhouse_settings: { send_progress_in_http_headers: 1, http_headers_progress_interval_ms: String(Math.max(100, Math.floor(requestTimeoutMs / 3))) },
    }));
  }
  const chdb = await loadChdb();
  if (chdb === null) throw new ChdbMissing();
  const engine = holdEngine(chdb.engine, options.path, options.engineArgs);
  const client = createClient({ connection: chdb.connection.createChdbConnection({ path: engine.path }) });
  const close = client.close.bind(client);
  client.close = async () => {
    try {
      await close();
    } finally {
      engine.release();
    }
  };
  return reportingOutages(client);
}

/** Below this much free space on a disk of ClickHouse, inserts cannot be relied on. */
const MIN_FREE_BYTES = 1024 * 1024;

/**
 * Why ClickHouse cannot serve reads and writes (/health), or null. A server: a trivial statement
 * answered within `timeoutMs`, and room on its disks. The embedded chDB runs in this process (it is
 * up when we are) and one statement at a time: only its directory's free space is checked, so that
 * a long estimate never makes the node look down.
 */
export async function clickhouseUnwritable(client: ClickHouseClient, options: ClickHouseOptions, timeoutMs: number): Promise<string | null> {
  if (options.url === undefined) {
    if (options.path === ':memory:') return null;
    const stats = await statfs(options.path);
    return stats.bavail * stats.bsize < MIN_FREE_BYTES ? 'the disk is full' : null;
  }
  const result = await client.query({
    query: 'SELECT toString(min(free_space)) AS free FROM system.disks', format: 'JSONEachRow', abort_signal: AbortSignal.timeout(timeoutMs),
  });
  const [row] = await result.json<{ free: string }>();
  return row !== undefined && Number(row.free) < MIN_FREE_BYTES ? 'the disk is full' : null;
}
