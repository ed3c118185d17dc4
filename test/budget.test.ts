// The estimate budget: past it the query is interrupted inside DuckDB, the answer says hit_limit,
// the connection serves the next estimate, and other requests are answered meanwhile; whether the
// deadline falls while the statement is prepared, planned or executed. The refresh limit likewise.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFixtures } from '../fixtures/generate.js';
import { compileCriteria } from '../src/audiences/compile.js';
import { Refresher } from '../src/audiences/refresh.js';
import { type CompiledQuery, planCriteria, printCount, validateCriteria } from '../src/criteria/index.js';
import { importParquetDir } from '../src/store/duckdb/import.js';
import { propertyCatalog } from '../src/store/duckdb/properties.js';
import { startTestApp, type TestApp } from './support/app.js';
import { PARALLEL_THREADS } from './support/tier.js';
import { countedLeaf, HEAVY_CRITERIA } from './support/heavy-criteria.js';

const BUDGET_MS = 25;
const ever = { kind: 'ever' };
const light = { version: 1, root: { source: 'payments', event: 'refund_issued', occurrence: { window: ever } } };

describe('estimate budget', () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'budget-'));
    await generateFixtures({ people: 50_000, events: 1_000_000, pageviews: 200_000, seed: 3, out: dir });
    // One estimate connection: the estimate after an interrupted one must reuse that connection.
    t = await startTestApp({ budgetMs: BUDGET_MS, estimateConnections: 1, threads: PARALLEL_THREADS, at: new Date('2026-11-01T00:00:00Z') });
    await importParquetDir(t.store, t.ws.workspace_id, dir);
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('interrupts the query past the budget, answers hit_limit, serves /health meanwhile and the next estimate after', async () => {
    let done = false;
    const pending = t.compile(HEAVY_CRITERIA).finally(() => { done = true; });
    let healthyDuring = 0;
    while (!done) {
      const health = await t.app.inject({ method: 'GET', url: '/health' });
      expect(health.statusCode).toBe(200);
      if (!done) healthyDuring++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const res = await pending;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ valid: true, is_time_windowed: false, estimated_count: { count: null, is_estimate: true, hit_limit: true, approximate: null } });
    expect(healthyDuring).toBeGreaterThan(0);

    // The pool's only connection was the interrupted one: it must answer the next query.
    expect(await countOf(light, 60_000)).toEqual(expect.any(Number));
  });

  it('gives the same criteria an exact count when the budget allows it', async () => {
    expect(await countOf(HEAVY_CRITERIA, 120_000)).toBeGreaterThan(1000);
  });

  const countOf = async (criteria: unknown, budgetMs: number) => {
    const query = await compiled(t, criteria);
    return t.store.countWithin(query.sql, query.params, budgetMs);
  };
});

async function compiled(t: TestApp, criteria: unknown): Promise<CompiledQuery> {
  const validated = validateCriteria(criteria, await propertyCatalog(t.store, t.ws.workspace_id));
  if (!validated.ok) throw new Error(JSON.stringify(validated.errors));
  return printCount(planCriteria(validated.criteria, new Date()), t.ws.workspace_id);
}

const FILTERS: [string, string, string, unknown][] = [
  ['view_item', 'payload.item.category', 'contains', 'o'],
  ['view_item', 'payload.item.price', '>', 10],
  ['session_start', 'payload.platform', 'not_in', ['ios']],
  ['feature_used', 'payload.duration_ms', '>=', 100],
  ['add_to_cart', 'payload.item.category', 'starts_with', 'b'],
  ['login', 'payload.method', '!=', 'sso'],
];

/** Thirty JSON-filtered count leaves: several ms to prepare and plan, then a long run. */
const thirtyLeaves = {
  version: 1,
  root: {
    op: 'or',
    children: Array.from({ length: 30 }, (_, i) => {
      const [name, path, op, value] = FILTERS[i % FILTERS.length]!;
      return countedLeaf(name, path, op, value, { op: '>=', value: 2 + i });
    }),
  },
};

describe('budget wherever the deadline falls', () => {
  let t: TestApp;
  let dir: string;
  let tree: CompiledQuery;
  /** The tree's plan and leaves, then a cross product of events with itself that would run for years. */
  let endless: CompiledQuery;
  const lightCount = () => t.store.countWithin('SELECT count(*) AS count FROM events', [], 60_000);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'budget-phases-'));
    await generateFixtures({ people: 5_000, events: 50_000, pageviews: 10_000, seed: 3, out: dir });
    // ESTIMATE_BUDGET_MS=1, and one estimate connection: each query after an interrupted one reuses it.
    t = await startTestApp({ budgetMs: 1, estimateConnections: 1, at: new Date('2026-11-01T00:00:00Z') });
    await importParquetDir(t.store, t.ws.workspace_id, dir);
    tree = await compiled(t, thirtyLeaves);
    endless = {
      sql: `SELECT count(*) AS count FROM (${tree.sql}) AS tree, events a, events b, events c
        WHERE hash(a.event_id, b.event_id, c.event_id) % 1000 = tree.count % 1000`,
      params: tree.params,
    };
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a compile over a 1 ms budget with hit_limit through the app, and the connection answers next', async () => {
    const res = await t.compile(thirtyLeaves);
    expect(res.statusCode).toBe(200);
    expect(res.json().estimated_count).toEqual({ count: null, is_estimate: true, hit_limit: true, approximate: null });
    expect(await lightCount()).toBe(50_000);
  });

  it('answers hit_limit for every budget below the uninterrupted time of the query', async () => {
    // The fastest of three uninterrupted runs: budgets are kept well under it.
    let uninterruptedMs = Infinity;
    let exact: number | null = null;
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      exact = await t.store.countWithin(tree.sql, tree.params, 600_000);
      uninterruptedMs = Math.min(uninterruptedMs, performance.now() - started);
    }
    expect(exact).toBeGreaterThan(0);
    const budgets = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89].filter((ms) => ms < uninterruptedMs / 4);
    expect(budgets.length).toBeGreaterThan(3);
    for (const budgetMs of budgets) {
      const result = await compileCriteria(t.stores.analytics, t.ws.workspace_id, thirtyLeaves, { at: new Date(), budgetMs });
      expect(result, `budget ${budgetMs} ms`).toMatchObject({ valid: true, estimated_count: { count: null, is_estimate: true, hit_limit: true, approximate: null } });
      expect(await lightCount()).toBe(50_000);
    }
    expect(await t.store.countWithin(tree.sql, tree.params, 600_000)).toBe(exact);
  });

  // A lost interrupt would leave the call running for years: returning at all proves the stop.
  it('stops a query that would never end, in planning, in its first leaves and in its cross product', async () => {
    for (const budgetMs of [1, 2, 4, 30, 300]) {
      expect(await t.store.countWithin(endless.sql, endless.params, budgetMs), `budget ${budgetMs} ms`).toBeNull();
      expect(await lightCount()).toBe(50_000);
    }
  });

  describe('refresh limit (transactionWithin)', () => {
    beforeAll(() => t.store.query('CREATE TABLE refresh_probe (n INTEGER)'));
    const probe = async () => Number((await t.store.query('SELECT count(*) AS n FROM refresh_probe'))[0]!.n);

    it('interrupts a statement past the limit and keeps nothing of the transaction', async () => {
      for (const limitMs of [1, 30]) {
        await expect(t.store.transactionWithin(limitMs, async (tx) => {
          await tx.run('INSERT INTO refresh_probe VALUES (1)');
          await tx.run(endless.sql, endless.params);
        })).rejects.toThrow(`interrupted after the ${limitMs} ms limit`);
      }
      expect(await probe()).toBe(0);
    });

    it('rolls back work that finished after the limit', async () => {
      await expect(t.store.transactionWithin(20, async (tx) => {
        await tx.run('INSERT INTO refresh_probe VALUES (1)');
        await new Promise((resolve) => setTimeout(resolve, 60));
        return 'late';
      })).rejects.toThrow('interrupted after the 20 ms limit');
      expect(await probe()).toBe(0);
    });

    it('interrupts a statement when the service stops (its signal aborts), long before the limit, and keeps nothing', async () => {
      const stopping = new AbortController();
      const work = t.store.transactionWithin(3_600_000, async (tx) => {
        await tx.run('INSERT INTO refresh_probe VALUES (1)');
        setTimeout(() => stopping.abort(), 30);
        await tx.run(endless.sql, endless.params);
      }, stopping.signal);
      await expect(work).rejects.toThrow('interrupted: the service stopped during the refresh');
      expect(await probe()).toBe(0);
    });

    it('lets a stopped refresher interrupt the refresh at once: the audience is failed, says why, and stays due', async () => {
      const created = await t.post('/v1/audiences', { name: 'stopped', criteria_json: thirtyLeaves });
      expect(created.statusCode, created.body).toBe(201);
      const refresher = new Refresher(t.stores, 3_600_000);
      refresher.stop();
      const at = new Date('2026-11-01T00:00:00Z');
      expect(await refresher.refresh(t.ws.workspace_id, created.json().id, at)).toEqual({ ok: false, error: 'interrupted: the service stopped during the refresh' });
      const audience = (await t.app.inject({ method: 'GET', url: `/v1/audiences/${created.json().id}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } })).json();
      expect(audience).toMatchObject({ status: 'failed', last_error: expect.stringContaining('service stopped'), next_refresh_at: at.toISOString(), member_count: null });
    });

    it('commits work that finished within the limit', async () => {
      expect(await t.store.transactionWithin(60_000, async (tx) => {
        await tx.run('INSERT INTO refresh_probe VALUES (1)');
        return 'done';
      })).toBe('done');
      expect(await probe()).toBe(1);
    });
  });
});
