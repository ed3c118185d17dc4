// `npm start` (node dist/main.js): open the database, make sure a workspace exists, serve the API.

import { loadConfig } from './config.js';
import { AUDIENCE_DEFAULTS } from './audiences/service.js';
import { buildApp, buildDataApp } from './http/app.js';
import { consoleBundle } from './http/routes/console.js';
import { webhookUrl } from './http/routes/workspace.js';
import { leaseOf } from './store/control/leases.js';
import { Workspaces } from './store/control/workspaces.js';
import { openStores, StoreUnavailable } from './store/open.js';

// Listening from the first line: a signal during startup stops the service once it is up rather
// than killing it half-open, and repeats (a terminal's Ctrl-C reaches npm, which forwards it, and
// this process) do nothing more.
const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => resolve(signal));
});

const config = loadConfig();
const stores = await openStores({
  analyticsStore: config.analyticsStore, clickhouse: config.clickhouse, databasePath: config.databasePath, databaseUrl: config.databaseUrl,
  estimateQueueMax: config.estimateQueueMax, postgres: config.postgresBounds, duckdb: config.duckdbBounds,
}).catch((err: unknown) => {
  if (!(err instanceof StoreUnavailable)) throw err;
  console.error(err.message);
  process.exit(1);
});
const workspaces = new Workspaces(stores.control);

const { secretKey, publishableKey, stripeWebhookSecret } = config.bootstrap;
if (secretKey || publishableKey || stripeWebhookSecret) {
  const ws = await workspaces.ensure('default', {
    secret_key: secretKey, publishable_key: publishableKey, stripe_webhook_secret: stripeWebhookSecret,
  });
  console.log(`workspace "default" (${ws.workspace_id}) uses the BOOTSTRAP_* credentials`);
  console.log(`  stripe webhook URL:    ${webhookUrl(config.publicUrl, ws.workspace_id)}`);
} else {
  const ws = await workspaces.createFirst('default');
  if (ws) {
    console.log([
      `created workspace "default" (${ws.workspace_id}); these keys are shown only once:`,
      `  secret key:            ${ws.secret_key}`,
      `  publishable key:       ${ws.publishable_key}`,
      `  stripe webhook secret: ${ws.stripe_webhook_secret}`,
      `  stripe webhook URL:    ${webhookUrl(config.publicUrl, ws.workspace_id)}`,
    ].join('\n'));
  } else {
    // Every later start: the keys cannot be shown again, the webhook URLs can.
    for (const known of await workspaces.list()) {
      console.log(`workspace "${known.name}" (${known.workspace_id}) stripe webhook URL: ${webhookUrl(config.publicUrl, known.workspace_id)}`);
    }
  }
}

const app = await buildApp({
  stores, estimateBudgetMs: config.estimateBudgetMs, logger: true, publicUrl: config.publicUrl, rateLimits: config.rateLimits,
  healthTimeoutMs: config.healthTimeoutMs, requestBodyTimeoutMs: config.requestBodyTimeoutMs, ingestLog: config.ingestLog, trustProxy: config.trustProxy,
  audiences: {
    refreshLimitMs: config.refreshLimitMs,
    schedulerIntervalMs: config.schedulerIntervalMs,
    lease: leaseOf(config.leaseTtlMs),
    delivery: {
      ...AUDIENCE_DEFAULTS.delivery,
      maxTries: config.deliveryMaxTries,
      requestTimeoutMs: config.deliveryTimeoutMs,
      allowPrivateDestinations: config.allowPrivateDestinations,
      ...config.platforms,
    },
  },
});
const address = await app.listen({ port: config.port, host: config.host });
// Built now rather than on the first visit; a failure only leaves the console out, the API serves.
consoleBundle().then(() => console.log(`console: ${address}/ (the secret key is asked for in the page)`),
  (err: unknown) => app.log.error({ err }, 'the console did not build; the API is unaffected'));
app.audiences.scheduler.start();
app.privacy.start(); // requests left unfinished by a stopped process resume here
// The people lookup also on DATA_PORT, so that {data_url} can be a separate address.
const dataApp = config.dataPort === null ? null
  : await buildDataApp({
    stores, logger: true, rateLimits: config.rateLimits, requestBodyTimeoutMs: config.requestBodyTimeoutMs, trustProxy: config.trustProxy,
  });
if (dataApp) await dataApp.listen({ port: config.dataPort!, host: config.host });

const signal = await stopSignal;
app.log.info({ signal }, 'shutting down');
// Requests and refreshes under way get SHUTDOWN_TIMEOUT_MS; then their connections are cut (none
// of them was acknowledged: a write is answered only once stored) and the exit code says so.
let cutOff = false;
let timer: NodeJS.Timeout | undefined;
const expired = new Promise<void>((resolve) => {
  timer = setTimeout(() => {
    cutOff = true;
    app.log.warn({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown: the requests and refreshes still under way after the shutdown timeout are cut off');
    for (const server of [app.server, dataApp?.server]) server?.closeAllConnections();
    resolve();
  }, config.shutdownTimeoutMs);
});
try {
  await Promise.race([expired, (async () => {
    await app.audiences.scheduler.stop(); // a refresh under way commits or rolls back; deliveries pause
    await app.privacy.stop(); // a privacy pass under way finishes its step; what is left resumes at the next start
    await Promise.all([app.close(), dataApp?.close()]); // stops accepting, waits for in-flight requests
  })()]);
  clearTimeout(timer);
  await stores.close(); // finishes writes, checkpoints; a failed checkpoint is thrown (the WAL is kept)
} catch (err) {
  app.log.error({ err }, 'shutdown failed');
  process.exit(1);
}
process.exit(cutOff ? 1 : 0);
