// ClickHouse frozen (SIGSTOP) and killed (SIGKILL, then started again) under a running service:
// the HTTP front over chDB (test/support/chdb-server.ts) stands for the server. During each fault
// ingest answers 503 (analytics_delayed: stored in the control store, inserted later) within its
// limit, compiles answer within their budget, /health names ClickHouse; after it the service serves
// again without a restart and every acknowledged event is in ClickHouse exactly once.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/http/app.js';
import type { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { openStores, type Stores } from '../src/store/open.js';
import { type ChdbServer, startChdbServer } from './support/chdb-server.js';
import { CHDB_INSTALLED } from './support/engines.js';
import { answeredWithin, EventClient, eventually, health, recover } from './support/faults.js';
import { FULL_TIER } from './support/tier.js';

const BOUNDS = { requestTimeoutMs: 2_000, killTimeoutMs: 1_000 };
/**
 * Ingest retries an insert for `insertRetryMs` before answering analytics_delayed, and the sweeper
 * inserts what is left every `sweepEveryMs` (10 s and 30 s in the service: shorter here, the same
 * code waiting less).
 */
const OUTBOX = { insertRetryMs: 3_000, sweepEveryMs: 2_000 };
/** Past this an answer hangs. */
const HANG_MS = 30_000;
const CRITERIA = { version: 1, root: { source: 'product_event', name: 'fault', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

describe.skipIf(!FULL_TIER || !CHDB_INSTALLED)('ClickHouse frozen and killed', () => {
  let dir: string;
  let server: ChdbServer;
  let stores: Stores;
  let app: FastifyInstance;
  let client: EventClient;
  let key: string;
  const timings: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'faults-clickhouse-'));
    server = await startChdbServer(join(dir, 'chdb'));
    stores = await openStores({
      analyticsStore: 'clickhouse', databasePath: ':memory:', clickhouse: { url: server.url, path: ':memory:', database: 'faults_clickhouse', bounds: BOUNDS, outbox: OUTBOX },
    });
    app = await buildApp({ stores, estimateBudgetMs: 2_000, healthTimeoutMs: 1_000 });
    key = (await new Workspaces(stores.control).create('faults')).secret_key;
    client = new EventClient(app, key, HANG_MS);
  }, 120_000);

  afterAll(async () => {
    console.info(`faults-clickhouse: ${timings.join('; ')}`);
    await app?.close();
    await stores?.close().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  async function during(name: string): Promise<number> {
    const start = performance.now();
    let detected = 0;
    for (let n = 0; n < 10 && client.refused.size < 2; n++) {
      if (!(await client.send(`${name}_${n}`)) && detected === 0) detected = performance.now() - start;
    }
    expect(client.refused.size).toBeGreaterThan(0);
    const compile = await answeredWithin(app.inject({
      method: 'POST', url: '/v1/audiences/compile', headers: { authorization: `Bearer ${key}` }, payload: { criteria_json: CRITERIA },
    }), HANG_MS, 'compile');
    expect([200, 503], compile.body).toContain(compile.statusCode);
    expect(await health(app, HANG_MS)).toEqual({ status: 503, down: ['clickhouse'] });
    return detected;
  }

  const after = (name: string) => recover(app, client, name, 3, HANG_MS);

  it('answers 503 while ClickHouse is frozen and serves again once it thaws', async () => {
    for (let n = 0; n < 3; n++) expect(await client.send(`before_${n}`)).toBe(true);
    process.kill(server.pid, 'SIGSTOP');
    let detected: number;
    try {
      detected = await during('frozen');
    } finally {
      process.kill(server.pid, 'SIGCONT');
    }
    timings.push(`SIGSTOP: first 503 after ${detected.toFixed(0)} ms, /health 200 after SIGCONT in ${(await after('thawed')).toFixed(0)} ms`);
  }, 180_000);

  it('answers 503 while ClickHouse is down after a SIGKILL and serves again once it restarted', async () => {
    const port = Number(new URL(server.url).port);
    process.kill(server.pid, 'SIGKILL');
    const detected = await during('killed');
    server = await startChdbServer(join(dir, 'chdb'), port);
    timings.push(`SIGKILL: first 503 after ${detected.toFixed(0)} ms, /health 200 after the restart in ${(await after('restarted')).toFixed(0)} ms`);
  }, 180_000);

  it('stores every acknowledged event in ClickHouse exactly once', async () => {
    const { ctx } = stores.analytics as ClickHouseAnalytics;
    const stored = async () => {
      const result = await ctx.client.query({ query: `SELECT message_id FROM ${ctx.database}.events`, format: 'JSONEachRow' });
      return (await result.json<{ message_id: string }>()).map((r) => r.message_id);
    };
    // Refused inserts are kept in the outbox and swept in (every OUTBOX.sweepEveryMs).
    expect(await eventually(async () => new Set(await stored()).size >= client.acknowledged.size, 600)).toBe(true);
    const ids = await stored();
    expect(ids.length).toBe(new Set(ids).size);
    expect(new Set(ids)).toEqual(client.acknowledged);
  }, 120_000);
});
