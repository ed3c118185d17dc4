// The API server of bench/export.bench.ts: as src/main.ts on the bench dataset's files (the
// configuration from the environment), with BENCH_SECRET_KEY as the secret key of the dataset's
// workspace (the import writes analytical rows only, no workspace), no rate limit. Only the APIs
// every version has since the exports: the bench runs it from an older checkout too.

import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores } from '../src/store/open.js';

const WS = 'ws_bench';
const config = loadConfig();
const stores = await openStores({ analyticsStore: config.analyticsStore, databasePath: config.databasePath, clickhouse: config.clickhouse });
await stores.control.run("INSERT INTO workspaces (workspace_id, name, stripe_webhook_secret) VALUES ($1, 'bench', 'whsec_bench') ON CONFLICT DO NOTHING", [WS]);
await new Workspaces(stores.control).ensure('bench', { secret_key: process.env.BENCH_SECRET_KEY });
const app = await buildApp({ stores, estimateBudgetMs: 60_000, rateLimits: { ingestPerMinute: 1e9, perMinute: 1e9 } });
await app.listen({ port: config.port, host: '127.0.0.1' });
process.once('SIGTERM', async () => {
  await app.close();
  await stores.close();
  process.exit(0);
});
