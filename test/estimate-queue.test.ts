// Estimates under load (issue 13): the budget runs from the compile's start and covers the wait for
// an estimate connection; past the queue's bound a compile answers 503 overloaded with Retry-After
// at once; ingest, /health and audience refreshes go on meanwhile. Connections are held by
// "blockers": queries that cannot end before their own budget, far longer than the compiles', and
// asleep meanwhile (test/support/asleep.ts).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateFixtures } from '../fixtures/generate.js';
import { compileCriteria } from '../src/audiences/compile.js';
import { AppError } from '../src/errors.js';
import { ClickHouseAnalytics } from '../src/store/clickhouse/analytics.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ASLEEP_CLICKHOUSE, ASLEEP_DUCKDB } from './support/asleep.js';
import { ENGINES } from './support/engines.js';
import { HEAVY_CRITERIA } from './support/heavy-criteria.js';
import { eventsByName, importParquet } from './support/stored.js';

const ever = { kind: 'ever' };
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: ever } } };
const OVER_BUDGET = { valid: true, is_time_windowed: false, estimated_count: { count: null, is_estimate: true, hit_limit: true, approximate: null } };

/** An endless count in a place of the estimate queue, until `budgetMs` has passed. */
function endless(t: TestApp, budgetMs: number): Promise<number | null> {
  const analytics = t.stores.analytics;
  return analytics instanceof ClickHouseAnalytics ? analytics.queries.countQueryWithin(ASLEEP_CLICKHOUSE, budgetMs) : t.store.countWithin(ASLEEP_DUCKDB, [], budgetMs);
}

const statsOf = (t: TestApp) => t.stores.analytics.estimateStats();

/** Holds every estimate place until `budgetMs` has passed; resolves once they are all held. */
async function block(t: TestApp, connections: number, budgetMs: number): Promise<{ released: Promise<(number | null)[]> }> {
  const before = statsOf(t).running;
  const released = Promise.all(Array.from({ length: connections }, () => endless(t, budgetMs)));
  await vi.waitFor(() => expect(statsOf(t).running).toBe(before + connections), { timeout: 10_000 });
  return { released };
}

type Kind = 'exact' | 'over budget' | 'overloaded';

/** What a compile answered, checking that it is one of the three answers a compile may give. */
function kindOf(res: LightMyRequestResponse): Kind {
  if (res.statusCode === 503) {
    const body = res.json();
    expect(body).toEqual({ error: 'overloaded', message: expect.stringContaining('too many estimates'), retry_after_seconds: expect.any(Number) });
    expect(body.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(res.headers['retry-after']).toBe(String(body.retry_after_seconds));
    return 'overloaded';
  }
  expect(res.statusCode, res.body).toBe(200);
  // An empty workspace has received no signup: the answer also warns of it (unknown_event), which this queue test does not look at.
  const { warnings: _warnings, ...body } = res.json();
  if (body.estimated_count.count === null) {
    // The sampled count may have made it within the budget.
    const { approximate } = body.estimated_count;
    expect(body).toEqual(approximate === null ? OVER_BUDGET : { ...OVER_BUDGET, estimated_count: { ...OVER_BUDGET.estimated_count, approximate: expect.any(Object) } });
    return 'over budget';
  }
  expect(body).toEqual({ valid: true, is_time_windowed: false, estimated_count: { count: expect.any(Number), is_estimate: false, hit_limit: false } });
  return 'exact';
}

describe.each(ENGINES)('%s: the estimate queue', (engine) => {
  const CONNECTIONS = 2;
  const QUEUE_MAX = 3;
  const BUDGET_MS = 1000;
  /** Blockers outlast every compile's budget: the compiles' deadlines come first whatever the speed. */
  const BLOCK_MS = 4 * BUDGET_MS;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ engine, budgetMs: BUDGET_MS, estimateConnections: CONNECTIONS, estimateQueueMax: QUEUE_MAX });
  });
  afterAll(() => t.close());

  it('answers 503 overloaded with Retry-After at once past the bound, and over budget without running the query for those whose budget ran out waiting', async () => {
    const blockers = await block(t, CONNECTIONS, BLOCK_MS);
    const before = statsOf(t);
    let blockersDone = false;
    void blockers.released.then(() => { blockersDone = true; });
    const arrivals: Kind[] = [];
    const compiles = 20;
    const refused = compiles - QUEUE_MAX;
    const answers = await Promise.all(Array.from({ length: compiles }, async () => {
      const res = await t.compile(signedUp);
      expect(blockersDone, 'a compile waited for a connection').toBe(false);
      const kind = kindOf(res);
      arrivals.push(kind);
      return res;
    }));

    // The queue's places went to the first ones; the others were refused before any of those ran
    // out of budget.
    expect(arrivals).toEqual([...Array<Kind>(refused).fill('overloaded'), ...Array<Kind>(QUEUE_MAX).fill('over budget')]);
    const after = statsOf(t);
    expect(after).toEqual({
      running: CONNECTIONS, waiting: 0,
      started: before.started, expired: before.expired + 2 * QUEUE_MAX, refused: before.refused + refused,
    });
    // Retry when the last estimate under way has ended: the blockers, within their budget.
    for (const res of answers.filter((r) => r.statusCode === 503)) {
      expect(res.json().retry_after_seconds).toBeLessThanOrEqual(BLOCK_MS / 1000);
    }

    expect(await blockers.released).toEqual([null, null]);
    expect(kindOf(await t.compile(signedUp))).toBe('exact');
  });

  it('spends the budget of compileCriteria (the CLI estimate) waiting, and refuses it when the queue is full', async () => {
    const blockers = await block(t, CONNECTIONS, BLOCK_MS);
    const before = statsOf(t);
    const at = new Date();
    const waiting = Array.from({ length: QUEUE_MAX }, () => compileCriteria(t.stores.analytics, t.ws.workspace_id, signedUp, { at, budgetMs: 50 }));
    await expect(compileCriteria(t.stores.analytics, t.ws.workspace_id, signedUp, { at, budgetMs: 50 })).rejects.toSatisfy(
      (err) => err instanceof AppError && err.code === 'overloaded' && err.status === 503,
    );
    expect((await Promise.all(waiting)).map((result) => ({ ...result, warnings: undefined }))).toEqual(Array(QUEUE_MAX).fill(OVER_BUDGET));
    expect(statsOf(t)).toMatchObject({ started: before.started, expired: before.expired + 2 * QUEUE_MAX, refused: before.refused + 1 });
    await blockers.released;
  });

  it('refreshes an audience while every estimate connection is held and the queue is full', async () => {
    const created = await t.post('/v1/audiences', { name: 'signups', criteria_json: signedUp });
    expect(created.statusCode, created.body).toBe(201);
    const blockers = await block(t, CONNECTIONS, BLOCK_MS);
    const before = statsOf(t);
    const compiles = Array.from({ length: QUEUE_MAX + 1 }, () => t.compile(signedUp));
    await vi.waitFor(() => expect(statsOf(t)).toMatchObject({ waiting: QUEUE_MAX, refused: before.refused + 1 }));

    const refreshed = await t.app.inject({
      method: 'POST', url: `/v1/audiences/${created.json().id}/refresh`, headers: { authorization: `Bearer ${t.ws.secret_key}` },
    });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json()).toMatchObject({ status: 'ready', member_count: 0 });
    // The refresh ran beside the estimates, not behind them. DuckDB only: chDB runs one query at a time.
    if (engine === 'duckdb') expect(statsOf(t).running).toBe(CONNECTIONS);
    const kinds = (await Promise.all(compiles)).map(kindOf).sort();
    expect(kinds).toEqual([...Array<Kind>(QUEUE_MAX).fill('over budget'), 'overloaded']);
    await blockers.released;
  });
});

describe.each(ENGINES)('%s: many heavy compiles at once', (engine) => {
  const CONNECTIONS = 2;
  const QUEUE_MAX = 8;
  const COMPILES = 200;
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'estimate-queue-'));
    await generateFixtures({ people: 5_000, events: 50_000, pageviews: 10_000, seed: 5, out: dir });
    t = await startTestApp({ engine, budgetMs: 300, estimateConnections: CONNECTIONS, estimateQueueMax: QUEUE_MAX, at: new Date('2026-11-01T00:00:00Z') });
    await importParquet(t, dir);
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers every one with a count, the over-budget body or 503, within the bound, while /health and ingest are served', async () => {
    const before = statsOf(t);
    let pending = COMPILES;
    const compiles = Array.from({ length: COMPILES }, (_, i) => t.compile(i % 4 ? HEAVY_CRITERIA : signedUp).finally(() => { pending--; }));
    const batch = Array.from({ length: 100 }, (_, i) => ({ event_name: 'queue_probe', user_id: `probe_${i}`, message_id: `queue_probe_${i}` }));
    const ingested = t.post('/v1/events', { batch });

    let healthChecks = 0;
    while (pending > 0) {
      const health = await t.app.inject({ method: 'GET', url: '/health' });
      expect(health.statusCode).toBe(200);
      healthChecks++;
      const stats = statsOf(t);
      expect(stats.running).toBeLessThanOrEqual(CONNECTIONS);
      expect(stats.running + stats.waiting).toBeLessThanOrEqual(CONNECTIONS + QUEUE_MAX);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(healthChecks).toBeGreaterThan(0);

    const kinds = (await Promise.all(compiles)).map(kindOf);
    const tally = (kind: Kind) => kinds.filter((k) => k === kind).length;
    const after = statsOf(t);
    // Each compile was refused, ran out of budget waiting, or ran its query (to a count or interrupted);
    // past its exact count, its sampled count likewise.
    expect(after.refused - before.refused).toBe(tally('overloaded'));
    expect(after.started - before.started + after.expired - before.expired).toBe(tally('exact') + 2 * tally('over budget'));
    expect(after.started - before.started).toBeGreaterThanOrEqual(tally('exact'));
    expect(after).toMatchObject({ running: 0, waiting: 0 });

    expect((await ingested).statusCode).toBe(200);
    expect((await eventsByName(t)).get('queue_probe')).toBe(batch.length);
  });
});
