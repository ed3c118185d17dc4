// PostgreSQL frozen (SIGSTOP) and killed (SIGKILL, then started again) under a running service
// (the many-node layout: control state in PostgreSQL, analytics in the embedded chDB). During each
// fault every request answers 503 with Retry-After within its bound, never 500 and never a hang,
// and /health names PostgreSQL; after it the service serves again without a restart, and every
// acknowledged event is stored exactly once. A server of its own: the suite's shared one is not frozen.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/http/app.js';
import type { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores, type Stores } from '../src/store/open.js';
import { CHDB_INSTALLED } from './support/engines.js';
import { answeredWithin, EventClient, health, recover } from './support/faults.js';
import { type RunningPostgres, startPostgres } from './support/postgres-server.js';
import { FULL_TIER } from './support/tier.js';

/** Short bounds, so the faults are found quickly: a request waits at most statement + 1 s grace. */
const BOUNDS = { connectTimeoutMs: 3_000, statementTimeoutMs: 3_000, idleTimeoutMs: 5_000, keepAliveMs: 1_000 };
/** No request may take longer than this (well past the bounds: a hang, not a slow answer). */
const HANG_MS = 15_000;

const signal = (pids: number[], sig: NodeJS.Signals) => {
  for (const pid of pids) process.kill(pid, sig);
};

describe.skipIf(!FULL_TIER || !CHDB_INSTALLED)('PostgreSQL frozen and killed', () => {
  let pg: RunningPostgres;
  let stores: Stores;
  let app: FastifyInstance;
  let client: EventClient;
  const timings: string[] = [];

  beforeAll(async () => {
    // Durable: a commit acknowledged is on disk, as in production, so a SIGKILL loses none.
    pg = await startPostgres({ durable: true });
    stores = await openStores({
      analyticsStore: 'clickhouse', databasePath: ':memory:', databaseUrl: `${pg.url}/postgres`, postgres: BOUNDS,
      clickhouse: { path: ':memory:', database: 'faults_postgres' },
    });
    app = await buildApp({ stores, estimateBudgetMs: 5_000, healthTimeoutMs: 1_000 });
    const ws = await new Workspaces(stores.control).create('faults');
    client = new EventClient(app, ws.secret_key, HANG_MS);
  }, 120_000);

  afterAll(async () => {
    console.info(`faults-postgres: ${timings.join('; ')}`);
    await app?.close();
    await stores?.close().catch(() => undefined);
    await pg?.stop().catch(() => undefined);
  });

  /** Sends until a refusal (the fault found), then a few more; the time to the first refusal. */
  async function during(name: string): Promise<number> {
    const start = performance.now();
    let detected = 0;
    for (let n = 0; n < 50 && client.refused.size < 3; n++) {
      const stored = await client.send(`${name}_${n}`, 'postgresql');
      if (!stored && detected === 0) detected = performance.now() - start;
    }
    expect(client.refused.size).toBeGreaterThan(0);
    const h = await health(app, HANG_MS);
    expect(h).toEqual({ status: 503, down: ['postgresql'] });
    return detected;
  }

    const after = (name: string) => recover(app, client, name, 5, HANG_MS);

  it('answers 503 while PostgreSQL is frozen and serves again once it thaws', async () => {
    for (let n = 0; n < 5; n++) expect(await client.send(`before_${n}`)).toBe(true);
    const pids = pg.pids();
    signal(pids, 'SIGSTOP');
    let detected: number;
    try {
      detected = await during('frozen');
    } finally {
      signal(pids, 'SIGCONT');
    }
    timings.push(`SIGSTOP: first 503 after ${detected.toFixed(0)} ms, /health 200 after SIGCONT in ${(await after('thawed')).toFixed(0)} ms`);
  }, 120_000);

  it('answers 503 while PostgreSQL is down after a SIGKILL and serves again once it restarted', async () => {
    signal(pg.pids().slice(0, 1), 'SIGKILL');
    const detected = await during('killed');
    await answeredWithin(pg.restart(), 60_000, 'PostgreSQL restart');
    timings.push(`SIGKILL: first 503 after ${detected.toFixed(0)} ms, /health 200 after the restart in ${(await after('restarted')).toFixed(0)} ms`);
  }, 120_000);

  it('stores every acknowledged event exactly once', async () => {
    const { ctx } = stores.analytics as ClickHouseAnalytics;
    const result = await ctx.client.query({ query: `SELECT message_id FROM ${ctx.database}.events`, format: 'JSONEachRow' });
    const stored = (await result.json<{ message_id: string }>()).map((r) => r.message_id);
    expect(stored.length).toBe(new Set(stored).size);
    expect(new Set(stored)).toEqual(client.acknowledged);
  });
});
