// A person merge killed after its first transaction (SIGKILL), then the service started again on
// the same data: the merge is finished (decisions §12: from's events are into's, nothing lost).
// DuckDB control state with the embedded ClickHouse, whose rewrite of the events is the step a
// kill can interrupt (on DuckDB analytics the events move in the first transaction); fault tiers only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CHDB_INSTALLED } from './support/engines.js';
import { eventually } from './support/faults.js';
import { callService, type RunningService, startService } from './support/service.js';
import { FULL_TIER } from './support/tier.js';

const KEY = 'sk_faults_merge_key';
/** Events of the person merged away: enough that rewriting them outlasts the polls that catch the merge pending. */
const EVENTS = 20_000;
const dir = mkdtempSync(join(tmpdir(), 'faults-merge-'));
let service: RunningService | null = null;
afterAll(async () => {
  await service?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

// A short lease: the killed process's hold on its merge lapses quickly.
const start = async () => {
  service = await startService({
    DATABASE_PATH: join(dir, 'service.duckdb'), ANALYTICS_STORE: 'clickhouse', CLICKHOUSE_PATH: join(dir, 'clickhouse'),
    BOOTSTRAP_SECRET_KEY: KEY, LEASE_TTL_MS: '1000',
  });
  return service;
};
const call = (port: number, method: string, path: string, body?: unknown) => callService(port, KEY, method, path, body);
const didView = (count: number) => ({
  criteria_json: { version: 1, root: { source: 'product_event', name: 'view', occurrence: { op: 'did', count: { op: '>=', value: count }, window: { kind: 'ever' } } } },
});

describe.skipIf(!FULL_TIER || !CHDB_INSTALLED)('a person merge killed after its first transaction', () => {
  it('is finished after a restart: every event of from is into\'s', async () => {
    let running = await start();
    for (let sent = 0; sent < EVENTS; sent += 500) {
      const batch = Array.from({ length: 500 }, () => ({ event_name: 'view', email: 'guest@example.com' }));
      expect((await call(running.port, 'POST', '/v1/events', { batch })).status).toBe(200);
    }
    const signup = await call(running.port, 'POST', '/v1/events', { event_name: 'view', user_id: 'member' });
    const into = signup.json.person_id as string;

    const merging = call(running.port, 'POST', '/v1/persons/merge', { from: { email: 'guest@example.com' }, into: { external_id: 'member' } })
      .catch(() => null); // cut off by the kill
    let merges: { state: string }[] = [];
    while (merges.length === 0) merges = (await call(running.port, 'GET', `/v1/persons/${into}/merges`)).json.data as { state: string }[];
    expect(merges[0]!.state, 'the merge finished before it could be killed: make from\'s events more').toBe('pending');
    await running.stop('SIGKILL');
    expect(await merging).toBeNull();

    running = await start();
    const done = await eventually(async () => ((await call(running.port, 'GET', `/v1/persons/${into}/merges`)).json.data as { state: string }[])[0]!.state === 'done', 600);
    expect(done, running.output()).toBe(true);
    // One person did view, and did it every time: from's events and into's own.
    const all = await call(running.port, 'POST', '/v1/audiences/compile', didView(1));
    expect(all.json.estimated_count).toMatchObject({ count: 1 });
    const everyEvent = await call(running.port, 'POST', '/v1/audiences/compile', didView(EVENTS + 1));
    expect(everyEvent.json.estimated_count).toMatchObject({ count: 1 });
    await running.stop('SIGTERM');
  }, 600_000);
});
