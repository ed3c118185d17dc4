// A privacy delete killed while running (SIGKILL), then the service started again on the same
// database: the request reaches `done` and nothing of its persons is left (decisions §12: a request
// is never lost once acknowledged, never left running). The service runs as `node src/main.ts`
// (tsx) on a loopback port, on DuckDB; the fault tiers only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStores } from '../src/store/open.js';
import { eventually } from './support/faults.js';
import { callService, type RunningService, startService } from './support/service.js';
import { FULL_TIER } from './support/tier.js';

const KEY = 'sk_faults_privacy_key';
const PERSONS = 3000;
const dir = mkdtempSync(join(tmpdir(), 'faults-privacy-'));
const databasePath = join(dir, 'service.duckdb');
let service: RunningService | null = null;
afterAll(async () => {
  await service?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

// A short lease: the killed process's hold on the workspace's requests lapses quickly.
const start = async () => { service = await startService({ DATABASE_PATH: databasePath, BOOTSTRAP_SECRET_KEY: KEY, LEASE_TTL_MS: '1000' }); return service; };
const call = (port: number, method: string, path: string, body?: unknown) => callService(port, KEY, method, path, body);

describe.skipIf(!FULL_TIER)('a privacy delete killed while running', () => {
  it('is done after a restart, and nothing of its persons is left', async () => {
    let running = await start();
    for (let from = 0; from < PERSONS; from += 250) {
      const batch = Array.from({ length: 250 }, (_, i) => [
        { event_name: 'signup', user_id: `gone-${from + i}`, visitor_id: `v-gone-${from + i}`, email: `gone-${from + i}@example.com` },
        { event_name: 'login', user_id: `gone-${from + i}` },
      ]).flat();
      expect((await call(running.port, 'POST', '/v1/events', { batch })).status).toBe(200);
    }
    expect((await call(running.port, 'POST', '/v1/events', { event_name: 'signup', user_id: 'kept' })).status).toBe(200);
    const identifiers = Array.from({ length: PERSONS }, (_, i) => ({ external_id: `gone-${i}` }));
    const submitted = await call(running.port, 'POST', '/v1/privacy/requests', { type: 'delete', identifiers });
    expect(submitted.status).toBe(202);
    const id = submitted.json.id as string;

    let status = 'pending';
    while (status === 'pending') status = (await call(running.port, 'GET', `/v1/privacy/requests/${id}`)).json.status as string;
    expect(status, 'the pass finished before it could be killed: make it bigger').toBe('running');
    await running.stop('SIGKILL');

    running = await start();
    const done = await eventually(async () => (await call(running.port, 'GET', `/v1/privacy/requests/${id}`)).json.status === 'done', 600);
    expect(done, running.output()).toBe(true);
    expect((await call(running.port, 'GET', `/v1/privacy/requests/${id}`)).json).toMatchObject({ counts: { persons: PERSONS, visitors: PERSONS } });
    await running.stop('SIGTERM');

    const stores = await openStores({ analyticsStore: 'duckdb', databasePath });
    try {
      const left = async (table: string) => Number((await stores.control.all(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
      expect({ persons: await left('persons'), visitors: await left('visitors'), events: await left('events') }).toEqual({ persons: 1, visitors: 0, events: 1 });
      const named = await stores.control.all("SELECT count(*) AS n FROM persons WHERE external_id LIKE 'gone-%' OR email LIKE 'gone-%'");
      expect(Number(named[0]!.n)).toBe(0);
    } finally {
      await stores.close();
    }
  }, 300_000);
});
