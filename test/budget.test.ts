// The estimate budget: past it the query is interrupted inside DuckDB, the answer says hit_limit,
// the connection serves the next estimate, and other requests are answered meanwhile.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFixtures } from '../fixtures/generate.js';
import { planCriteria, printCount, validateCriteria } from '../src/criteria/index.js';
import { importParquetDir } from '../src/store/import.js';
import { propertyCatalog } from '../src/store/properties.js';
import { startTestApp, type TestApp } from './support/app.js';

const BUDGET_MS = 25;
const ever = { kind: 'ever' };
const leaf = (name: string, path: string, op: string, value: unknown, count = { op: '>=', value: 2 }) => ({
  source: 'product_event', name, filter: { [path]: { op, value } }, occurrence: { op: 'did', count, window: ever },
});

/** Several JSON-filtered, counted scans over the whole events table: far more than 25 ms of work. */
const heavy = {
  version: 1,
  root: {
    op: 'or',
    children: [
      leaf('view_item', 'payload.item.category', 'contains', 'o'),
      leaf('view_item', 'payload.item.price', '>', 10, { op: '>=', value: 3 }),
      leaf('session_start', 'payload.platform', 'not_in', ['ios']),
      leaf('feature_used', 'payload.duration_ms', '>=', 100),
      leaf('add_to_cart', 'payload.item.category', 'starts_with', 'b'),
      leaf('login', 'payload.method', '!=', 'sso'),
      { source: 'pageview', filter: { path: { op: 'contains', value: '/' } }, occurrence: { op: 'did', count: { op: '>=', value: 2 }, window: ever } },
    ],
  },
};
const light = { version: 1, root: { source: 'payments', event: 'refund_issued', occurrence: { window: ever } } };

describe('estimate budget', () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'budget-'));
    await generateFixtures({ people: 50_000, events: 1_000_000, pageviews: 200_000, seed: 3, out: dir });
    // One estimate connection: the estimate after an interrupted one must reuse that connection.
    t = await startTestApp({ budgetMs: BUDGET_MS, estimateConnections: 1, at: new Date('2026-11-01T00:00:00Z') });
    await importParquetDir(t.store, t.ws.workspace_id, dir);
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('interrupts the query past the budget, answers hit_limit, serves /health meanwhile and the next estimate after', async () => {
    let done = false;
    const pending = t.compile(heavy).finally(() => { done = true; });
    let healthyDuring = 0;
    while (!done) {
      const health = await t.app.inject({ method: 'GET', url: '/health' });
      expect(health.statusCode).toBe(200);
      if (!done) healthyDuring++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const res = await pending;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ valid: true, is_time_windowed: false, estimated_count: { count: null, is_estimate: true, hit_limit: true } });
    expect(healthyDuring).toBeGreaterThan(0);

    // The pool's only connection was the interrupted one: it must answer the next query.
    expect(await countOf(light, 60_000)).toEqual(expect.any(Number));
  });

  it('gives the same criteria an exact count when the budget allows it', async () => {
    expect(await countOf(heavy, 120_000)).toBeGreaterThan(1000);
  });

  async function countOf(criteria: unknown, budgetMs: number): Promise<number | null> {
    const validated = validateCriteria(criteria, await propertyCatalog(t.store, t.ws.workspace_id));
    if (!validated.ok) throw new Error(JSON.stringify(validated.errors));
    const query = printCount(planCriteria(validated.criteria, new Date()), t.ws.workspace_id);
    return t.store.countWithin(query.sql, query.params, budgetMs);
  }
});
