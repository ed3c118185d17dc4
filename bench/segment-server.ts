// The API server for bench/segment.bench.ts: as src/main.ts (request logs included), on the
// ingest log of INGEST_LOG_DIR, with no rate limit; with BENCH_RESOLVER=off its resolver is
// stopped once it is up, so the bench measures the acknowledging path alone, and SIGUSR2 starts it.

import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';

const config = loadConfig();
const stores = await openStores({ analyticsStore: config.analyticsStore, databasePath: config.databasePath });
await new Workspaces(stores.control).ensure('default', { secret_key: config.bootstrap.secretKey });
const app = await buildApp({
  stores, estimateBudgetMs: config.estimateBudgetMs, logger: true, ingestLog: config.ingestLog, rateLimits: { ingestPerMinute: 1e9, notificationsPerMinute: 1e9, perMinute: 1e9 },
});
if (process.env.BENCH_RESOLVER === 'off') {
  await app.segment.resolver.stop();
  // The bench's --backlog: the acknowledged backlog resolved at once, from here.
  process.once('SIGUSR2', () => app.segment.resolver.start());
}
await app.listen({ port: config.port, host: config.host });
process.once('SIGTERM', async () => {
  await app.close();
  await stores.close();
  process.exit(0);
});
