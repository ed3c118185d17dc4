// The API server for bench/estimates-ingest.bench.ts and bench/attribution.bench.ts: as src/main.ts,
// with the store's estimate settings taken from the environment so the bench can compare them
// (BENCH_ESTIMATE_CONNECTIONS, BENCH_DUCKDB_THREADS, BENCH_ESTIMATE_QUEUE_MAX; unset = the store's
// defaults), no rate limit, and the bootstrap webhook secret on the default workspace.

import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import type { StoreOptions } from '../src/store/duckdb/db.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';

const config = loadConfig();
const setting = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
const options: StoreOptions = {
  estimateConnections: setting('BENCH_ESTIMATE_CONNECTIONS'),
  threads: setting('BENCH_DUCKDB_THREADS'),
  estimateQueueMax: setting('BENCH_ESTIMATE_QUEUE_MAX'),
};
const stores = await openStores({ ...options, analyticsStore: config.analyticsStore, databasePath: config.databasePath });
await new Workspaces(stores.control).ensure('default', {
  secret_key: config.bootstrap.secretKey, stripe_webhook_secret: config.bootstrap.stripeWebhookSecret,
});
const app = await buildApp({
  stores, estimateBudgetMs: config.estimateBudgetMs, rateLimits: { ingestPerMinute: 1e9, notificationsPerMinute: 1e9, perMinute: 1e9 },
});
await app.listen({ port: config.port, host: config.host });
process.once('SIGTERM', async () => {
  await app.close();
  await stores.close();
  process.exit(0);
});
