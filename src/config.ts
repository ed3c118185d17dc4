// Configuration from the environment (decisions §1), read once at start.

import { isIP } from 'node:net';
import { dirname, join } from 'node:path';
import { DEFAULT_MAX_BACKLOG_EVENTS } from './ingest/segment/service.js';
import { LEASE_DEFAULTS } from './store/control/leases.js';
import type { ClickHouseOptions } from './store/clickhouse/client.js';
import { CLICKHOUSE_BOUNDS, DUCKDB_BOUNDS, type DuckDBBounds, POSTGRES_BOUNDS, type PostgresBounds } from './store/bounds.js';
import { ANALYTICS_ENGINES, type AnalyticsEngine, DEFAULT_CLICKHOUSE } from './store/open.js';

/** Requests per minute per API key, in separate budgets (http/rate-limit.ts applies them). */
export interface RateLimits {
  /** POST /v1/events, /v1/persons and /v1/pageviews (INGEST_RATE_LIMIT_PER_MINUTE). */
  ingestPerMinute: number;
  /** Payment notifications, per workspace and sending address (NOTIFICATION_RATE_LIMIT_PER_MINUTE); the default unless given. */
  notificationsPerMinute?: number;
  /** Compile, and separately every other call (RATE_LIMIT_PER_MINUTE). */
  perMinute: number;
}

// Notifications: 5,000 a second, well above what one node applies on two cores (bench/RESULTS.md), so
// the budget guards against a flood without capping what the processor sends.
export const DEFAULT_RATE_LIMITS = { ingestPerMinute: 60_000, notificationsPerMinute: 300_000, perMinute: 1_200 } satisfies Required<RateLimits>;

export interface Config {
  port: number;
  host: string;
  dataPort: number | null;
  /** Base URL the payment processor reaches the service at (PUBLIC_URL, else http://HOST:PORT). */
  publicUrl: string;
  databasePath: string;
  /** DATABASE_URL: the control state in PostgreSQL (many API nodes); unset: in the DuckDB file at databasePath. */
  databaseUrl: string | undefined;
  /** The engine of the analytical data (ANALYTICS_STORE): duckdb, in the database file, or clickhouse. */
  analyticsStore: AnalyticsEngine;
  /** ClickHouse (CLICKHOUSE_URL, else the embedded chDB at CLICKHOUSE_PATH; CLICKHOUSE_DATABASE, CLICKHOUSE_CLUSTER, CLICKHOUSE_USER, CLICKHOUSE_PASSWORD). */
  clickhouse: ClickHouseOptions;
  estimateBudgetMs: number;
  /** Compiles that may wait for an estimate connection; more answer 503 (ESTIMATE_QUEUE_MAX; unset: the store's default). */
  estimateQueueMax: number | undefined;
  /** Audiences: the refresh worker's limit, the scheduler's interval, delivery tries, platform URLs. */
  refreshLimitMs: number;
  schedulerIntervalMs: number;
  /** How long a node's lease on a refresh or a destination's deliveries lasts unrenewed (LEASE_TTL_MS): a killed node's work resumes elsewhere after it. */
  leaseTtlMs: number;
  deliveryMaxTries: number;
  /** One delivery request's time limit; past it the attempt fails and is retried like a 503. */
  deliveryTimeoutMs: number;
  /** Destinations may point at loopback, private, link-local or metadata addresses (local development). */
  allowPrivateDestinations: boolean;
  /** Requests per minute per key: ingest (events, persons, page views), and compile / everything else. */
  rateLimits: RateLimits;
  /** The ad platforms' URLs and API versions that are set (decisions §9); the rest keep PLATFORM_DEFAULTS. */
  platforms: PlatformSettings;
  bootstrap: { secretKey?: string; publishableKey?: string; stripeWebhookSecret?: string };
  /** How long each store may take before it counts as down (POSTGRES_*_MS; CLICKHOUSE_*_MS are in `clickhouse.bounds`; DUCKDB_WRITE_WAIT_MS). */
  postgresBounds: PostgresBounds;
  duckdbBounds: DuckDBBounds;
  /** /health's bound on each store's trivial statement (HEALTH_TIMEOUT_MS). */
  healthTimeoutMs: number;
  /** A request's headers and body must have arrived within this, else 408 (REQUEST_BODY_TIMEOUT_MS). */
  requestBodyTimeoutMs: number;
  /** How long SIGTERM waits for requests and refreshes under way before cutting them off (SHUTDOWN_TIMEOUT_MS). */
  shutdownTimeoutMs: number;
  /** Which proxies' X-Forwarded-For names the client (TRUST_PROXY; Fastify's trustProxy): none unless set. */
  trustProxy: TrustProxy;
  /**
   * This node's ingest log (the Segment-compatible API): INGEST_LOG_DIR, else `ingest-log` beside the
   * DuckDB file (./data/ingest-log; a temporary one for `:memory:`); INGEST_BACKLOG_MAX_EVENTS.
   */
  ingestLog: { dir: string | undefined; maxBacklogEvents: number };
}

/** Defaults of the bounds config.ts reads that live in no store (README, "Bounds and health"). */
export const SERVICE_BOUNDS = { healthTimeoutMs: 2_000, requestBodyTimeoutMs: 30_000, shutdownTimeoutMs: 30_000 };

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

function boolean(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').toLowerCase();
  if (raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new Error(`${name} must be true or false, got "${env[name]}"`);
}

/** A name printed into SQL as an identifier: letters, digits and underscores only. */
function identifier(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(raw)) throw new Error(`${name} must be letters, digits and underscores, got "${raw}"`);
  return raw;
}

/**
 * Fastify's trustProxy: false (the connection's address is the client's), true (the leftmost
 * X-Forwarded-For address), a hop count (that many proxies in front), or the proxies' addresses
 * and CIDR ranges (and proxy-addr's names loopback, linklocal, uniquelocal).
 */
export type TrustProxy = boolean | number | string[];

const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, a CIDR range (address/prefix) or a named range. */
function proxyAddress(entry: string): boolean {
  if (PROXY_RANGES.has(entry) || isIP(entry) !== 0) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const version = isIP(address ?? '');
  return rest.length === 0 && version !== 0 && /^\d{1,3}$/.test(prefix ?? '') && Number(prefix) <= (version === 4 ? 32 : 128);
}

function trustProxy(env: NodeJS.ProcessEnv): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return integer(env, 'TRUST_PROXY', 0);
  const entries = raw.split(',').map((e) => e.trim());
  const wrong = entries.find((e) => !proxyAddress(e));
  if (wrong !== undefined) {
    throw new Error(`TRUST_PROXY must be true, false, a hop count, or comma-separated proxy addresses and CIDR ranges, got "${wrong}"`);
  }
  return entries;
}

function postgresUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return undefined;
  if (!/^postgres(ql)?:\/\//.test(raw)) throw new Error('DATABASE_URL must be a postgres:// or postgresql:// URL');
  return raw;
}

function engine(env: NodeJS.ProcessEnv): AnalyticsEngine {
  const raw = env.ANALYTICS_STORE || 'duckdb';
  const found = ANALYTICS_ENGINES.find((e) => e === raw);
  if (!found) throw new Error(`ANALYTICS_STORE must be one of ${ANALYTICS_ENGINES.join(', ')}, got "${raw}"`);
  return found;
}

/** Each ad-platform setting and its variable; base URLs are taken without a trailing slash. */
const PLATFORM_VARIABLES = {
  metaBaseUrl: 'META_BASE_URL',
  metaApiVersion: 'META_API_VERSION',
  googleDataManagerBaseUrl: 'GOOGLE_DATA_MANAGER_BASE_URL',
  googleAdsBaseUrl: 'GOOGLE_ADS_BASE_URL',
  googleAdsApiVersion: 'GOOGLE_ADS_API_VERSION',
  googleOauthTokenUrl: 'GOOGLE_OAUTH_TOKEN_URL',
} as const;
export type PlatformSettings = Partial<Record<keyof typeof PLATFORM_VARIABLES, string>>;

function platformSettings(env: NodeJS.ProcessEnv): PlatformSettings {
  const settings: PlatformSettings = {};
  for (const [key, name] of Object.entries(PLATFORM_VARIABLES) as [keyof typeof PLATFORM_VARIABLES, string][]) {
    const raw = env[name];
    if (!raw) continue;
    if (key.endsWith('Version')) {
      if (!/^v\d+(\.\d+)?$/.test(raw)) throw new Error(`${name} must look like v25 or v27.0, got "${raw}"`);
      settings[key] = raw;
    } else {
      if (!/^https?:\/\//.test(raw)) throw new Error(`${name} must be an http(s) URL, got "${raw}"`);
      settings[key] = raw.replace(/\/+$/, '');
    }
  }
  return settings;
}

/** Each API node needs its own log directory; beside the database file by default. */
function ingestLogDir(env: NodeJS.ProcessEnv): string | undefined {
  if (env.INGEST_LOG_DIR) return env.INGEST_LOG_DIR;
  const path = env.DATABASE_PATH || './data/attribution.duckdb';
  return path === ':memory:' ? undefined : join(dirname(path), 'ingest-log');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 3000);
  const host = env.HOST || '127.0.0.1';
  return {
    port,
    host,
    publicUrl: (env.PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, ''),
    dataPort: env.DATA_PORT ? integer(env, 'DATA_PORT', 0) : null,
    databasePath: env.DATABASE_PATH || './data/attribution.duckdb',
    databaseUrl: postgresUrl(env),
    analyticsStore: engine(env),
    clickhouse: {
      url: env.CLICKHOUSE_URL || undefined,
      path: env.CLICKHOUSE_PATH || DEFAULT_CLICKHOUSE.path,
      database: identifier(env, 'CLICKHOUSE_DATABASE', DEFAULT_CLICKHOUSE.database),
      cluster: env.CLICKHOUSE_CLUSTER || undefined,
      username: env.CLICKHOUSE_USER || undefined,
      password: env.CLICKHOUSE_PASSWORD || undefined,
      bounds: {
        requestTimeoutMs: Math.max(100, integer(env, 'CLICKHOUSE_REQUEST_TIMEOUT_MS', CLICKHOUSE_BOUNDS.requestTimeoutMs)),
        killTimeoutMs: Math.max(100, integer(env, 'CLICKHOUSE_KILL_TIMEOUT_MS', CLICKHOUSE_BOUNDS.killTimeoutMs)),
      },
    },
    estimateBudgetMs: integer(env, 'ESTIMATE_BUDGET_MS', 5000),
    estimateQueueMax: env.ESTIMATE_QUEUE_MAX ? integer(env, 'ESTIMATE_QUEUE_MAX', 0) : undefined,
    refreshLimitMs: integer(env, 'REFRESH_LIMIT_MS', 600_000),
    schedulerIntervalMs: integer(env, 'SCHEDULER_INTERVAL_MS', 30_000),
    leaseTtlMs: Math.max(300, integer(env, 'LEASE_TTL_MS', LEASE_DEFAULTS.ttlMs)),
    deliveryMaxTries: Math.max(1, integer(env, 'DELIVERY_MAX_TRIES', 6)),
    deliveryTimeoutMs: Math.max(1, integer(env, 'DELIVERY_TIMEOUT_MS', 10_000)),
    allowPrivateDestinations: boolean(env, 'ALLOW_PRIVATE_DESTINATIONS'),
    rateLimits: {
      ingestPerMinute: Math.max(1, integer(env, 'INGEST_RATE_LIMIT_PER_MINUTE', DEFAULT_RATE_LIMITS.ingestPerMinute)),
      notificationsPerMinute: Math.max(1, integer(env, 'NOTIFICATION_RATE_LIMIT_PER_MINUTE', DEFAULT_RATE_LIMITS.notificationsPerMinute)),
      perMinute: Math.max(1, integer(env, 'RATE_LIMIT_PER_MINUTE', DEFAULT_RATE_LIMITS.perMinute)),
    },
    platforms: platformSettings(env),
    postgresBounds: {
      connectTimeoutMs: Math.max(100, integer(env, 'POSTGRES_CONNECT_TIMEOUT_MS', POSTGRES_BOUNDS.connectTimeoutMs)),
      statementTimeoutMs: Math.max(100, integer(env, 'POSTGRES_STATEMENT_TIMEOUT_MS', POSTGRES_BOUNDS.statementTimeoutMs)),
      idleTimeoutMs: Math.max(100, integer(env, 'POSTGRES_IDLE_TIMEOUT_MS', POSTGRES_BOUNDS.idleTimeoutMs)),
      keepAliveMs: Math.max(1_000, integer(env, 'POSTGRES_KEEPALIVE_MS', POSTGRES_BOUNDS.keepAliveMs)),
    },
    duckdbBounds: { writeWaitMs: Math.max(100, integer(env, 'DUCKDB_WRITE_WAIT_MS', DUCKDB_BOUNDS.writeWaitMs)) },
    healthTimeoutMs: Math.max(100, integer(env, 'HEALTH_TIMEOUT_MS', SERVICE_BOUNDS.healthTimeoutMs)),
    requestBodyTimeoutMs: Math.max(1_000, integer(env, 'REQUEST_BODY_TIMEOUT_MS', SERVICE_BOUNDS.requestBodyTimeoutMs)),
    shutdownTimeoutMs: Math.max(100, integer(env, 'SHUTDOWN_TIMEOUT_MS', SERVICE_BOUNDS.shutdownTimeoutMs)),
    trustProxy: trustProxy(env),
    ingestLog: { dir: ingestLogDir(env), maxBacklogEvents: Math.max(500, integer(env, 'INGEST_BACKLOG_MAX_EVENTS', DEFAULT_MAX_BACKLOG_EVENTS)) },
    bootstrap: {
      secretKey: env.BOOTSTRAP_SECRET_KEY || undefined,
      publishableKey: env.BOOTSTRAP_PUBLISHABLE_KEY || undefined,
      stripeWebhookSecret: env.BOOTSTRAP_STRIPE_WEBHOOK_SECRET || undefined,
    },
  };
}
