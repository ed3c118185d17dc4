// `npm run fixtures:load` (fixtures/load.ts) refuses a workspace that already holds data, as
// `audiences load` does: loading would merge the fixtures' people (u_42, cus_1…) with the real ones.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFixtures } from '../fixtures/generate.js';
import { main as loadFixtures } from '../fixtures/load.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { duckdbOf, openStores } from '../src/store/open.js';
import { cliOf } from './support/cli.js';

/** fixtures/load.ts's main in this process (`npm run fixtures:load` runs it as a script: the README's test). */
const load = (...args: string[]) => cliOf(loadFixtures, ...args);

/** A database whose `default` workspace holds `persons` people with ids u_<n>. */
async function database(path: string, persons: number): Promise<void> {
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: path });
  try {
    const ws = await new Workspaces(stores.control).create('default');
    await importDataset(duckdbOf(stores), ws.workspace_id, {
      persons: Array.from({ length: persons }, (_, i) => ({
        person_id: `real_${i}`, external_id: `u_${i}`, email: `real${i}@example.com`, name: null, traits: null, created_at: new Date('2026-01-01T00:00:00Z'),
      })),
    });
  } finally {
    await stores.close();
  }
}

async function personCount(path: string): Promise<number> {
  const stores = await openStores({ analyticsStore: 'duckdb', databasePath: path });
  try {
    return Number((await duckdbOf(stores).query('SELECT count(*) AS n FROM persons'))[0]!.n);
  } finally {
    await stores.close();
  }
}

describe('npm run fixtures:load', () => {
  let dir: string;
  let fixtures: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fixtures-load-'));
    fixtures = join(dir, 'fixtures');
    await generateFixtures({ people: 200, events: 1_000, pageviews: 200, seed: 5, out: fixtures });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('refuses a workspace that already holds people, saying so, and changes nothing', async () => {
    const path = join(dir, 'used.duckdb');
    await database(path, 3);
    const res = await load('--dir', fixtures, '--database', path);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^fixtures:load: .*already holds data.*workspace create/);
    expect(await personCount(path)).toBe(3);
  });

  it('loads into an empty workspace', async () => {
    const path = join(dir, 'empty.duckdb');
    await database(path, 0);
    const res = await load('--dir', fixtures, '--database', path);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(await personCount(path)).toBeGreaterThan(0);
  });

  it('--new-workspace loads beside a workspace that holds data, into a new one whose printed key works, and refuses a name taken', async () => {
    const path = join(dir, 'beside.duckdb');
    await database(path, 3);
    const out = await load('--dir', fixtures, '--database', path, '--new-workspace', 'demo');
    expect(out.code, out.stderr).toBe(0);
    const key = /secret key, shown only once: (sk_\S+)/.exec(out.stdout)?.[1];
    expect(key, out.stdout).toBeDefined();
    const stores = await openStores({ analyticsStore: 'duckdb', databasePath: path });
    try {
      const owner = await new Workspaces(stores.control).authenticate(key!);
      const [demo] = (await new Workspaces(stores.control).list()).filter((w) => w.name === 'demo');
      expect(owner?.workspaceId).toBe(demo!.workspace_id);
      const rows = await duckdbOf(stores).query('SELECT workspace_id, count(*) AS n FROM persons GROUP BY workspace_id ORDER BY n');
      expect(rows.map((r) => Number(r.n))).toEqual([3, 200]);
    } finally {
      await stores.close();
    }
    const taken = await load('--dir', fixtures, '--database', path, '--new-workspace', 'demo');
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/already named "demo"/);
  });
});
