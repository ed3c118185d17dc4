// Configuration from the environment (decisions §1), read once at start.

export interface Config {
  port: number;
  host: string;
  dataPort: number | null;
  /** Base URL the payment processor reaches the service at (PUBLIC_URL, else http://HOST:PORT). */
  publicUrl: string;
  databasePath: string;
  estimateBudgetMs: number;
  /** Audiences: the refresh worker's limit, the scheduler's interval, delivery tries, platform URLs. */
  refreshLimitMs: number;
  schedulerIntervalMs: number;
  deliveryMaxTries: number;
  metaBaseUrl?: string;
  googleAdsBaseUrl?: string;
  bootstrap: { secretKey?: string; publishableKey?: string; stripeWebhookSecret?: string };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
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
    estimateBudgetMs: integer(env, 'ESTIMATE_BUDGET_MS', 5000),
    refreshLimitMs: integer(env, 'REFRESH_LIMIT_MS', 600_000),
    schedulerIntervalMs: integer(env, 'SCHEDULER_INTERVAL_MS', 30_000),
    deliveryMaxTries: Math.max(1, integer(env, 'DELIVERY_MAX_TRIES', 6)),
    metaBaseUrl: env.META_BASE_URL || undefined,
    googleAdsBaseUrl: env.GOOGLE_ADS_BASE_URL || undefined,
    bootstrap: {
      secretKey: env.BOOTSTRAP_SECRET_KEY || undefined,
      publishableKey: env.BOOTSTRAP_PUBLISHABLE_KEY || undefined,
      stripeWebhookSecret: env.BOOTSTRAP_STRIPE_WEBHOOK_SECRET || undefined,
    },
  };
}
