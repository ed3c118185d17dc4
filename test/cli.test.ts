// The analyst CLI (src/cli) run as a child process against a generated fixture, checked against
// the HTTP compile on the same data (the directory read in place, imported, and a database file),
// plus its error paths, the key check of a directory read in place and the import's progress.

import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFixtures } from '../fixtures/generate.js';
import { keysCollide, parquetSource } from '../src/store/attach.js';
import { Store } from '../src/store/db.js';
import { importParquetDir } from '../src/store/import.js';
import { Workspaces } from '../src/store/workspaces.js';
import { startTestApp, type TestApp } from './support/app.js';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '..', 'bin', 'audiences.js');
const AT = '2026-11-01T00:00:00Z';

interface Result { code: number; stdout: string; stderr: string }

async function cli(...args: string[]): Promise<Result> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const ever = { kind: 'ever' };
const event = (name: string, occurrence: object, filter?: object) =>
  ({ source: 'product_event', name, ...(filter ? { filter } : {}), occurrence });
const did = (window: object = ever, count: object | null = null) => ({ op: 'did', count, window });

const CRITERIA: Record<string, object> = {
  // did_not and a pageview channel filter
  did_not: { op: 'and', children: [
    event('signup', did()),
    { source: 'pageview', filter: { channel_category: { op: '=', value: 'Organic Search' } }, occurrence: did({ kind: 'last_n_days', n: 90 }) },
    event('purchase', { op: 'did_not', count: null, window: ever }),
  ] },
  // a not node over an or
  not: { op: 'and', children: [
    event('login', did({ kind: 'last_n_days', n: 60 })),
    { op: 'not', child: { op: 'or', children: [
      { source: 'pageview', filter: { channel: { op: '=', value: 'google' } }, occurrence: did() },
      { source: 'payments', event: 'first_paid_invoice', occurrence: { window: ever } },
    ] } },
  ] },
  // a count with a window
  count: event('feature_used', did({ kind: 'last_n_days', n: 30 }, { op: '>=', value: 3 })),
  // JSON payload filters, nested path included
  payload: { op: 'or', children: [
    event('purchase', did(), { 'payload.amount': { op: '>', value: 100 } }),
    event('view_item', did({ kind: 'between', from: '2026-06-01', to: '2026-09-30' }), { 'payload.item.category': { op: '=', value: 'books' } }),
  ] },
  // payments state
  payments: { op: 'and', children: [
    { source: 'payments', entity: 'subscription', predicate: { status: { op: 'in', value: ['active', 'trialing'] } } },
    { source: 'pageview', filter: { channel: { op: 'in', value: ['direct', 'newsletter'] } }, occurrence: did() },
  ] },
};

let dir: string;
let fx: string;
let db: string;
let app: TestApp;
const files: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cli-test-'));
  fx = join(dir, 'fx');
  await generateFixtures({ people: 2000, events: 20000, pageviews: 4000, seed: 1, out: fx });
  for (const [name, root] of Object.entries(CRITERIA)) {
    files[name] = join(dir, `${name}.json`);
    writeFileSync(files[name], JSON.stringify({ version: 1, root }));
  }
  app = await startTestApp({ at: new Date(AT) });
  await importParquetDir(app.store, app.ws.workspace_id, fx);
  db = join(dir, 'analyst.duckdb');
  const loaded = await cli('load', fx, '--into', db, '--json');
  expect(loaded.code, loaded.stderr).toBe(0);
});

afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function httpCount(criteria: object): Promise<number> {
  const res = await app.compile(criteria);
  expect(res.statusCode).toBe(200);
  const body = res.json() as { valid: boolean; estimated_count: { count: number } };
  expect(body.valid, res.body).toBe(true);
  return body.estimated_count.count;
}

async function estimate(file: string, data: string, ...options: string[]): Promise<number> {
  const res = await cli('estimate', file, '--data', data, '--at', AT, '--json', ...options);
  expect(res.code, res.stderr + res.stdout).toBe(0);
  return (JSON.parse(res.stdout) as { estimated_count: { count: number } }).estimated_count.count;
}

describe('cli against the HTTP compile', () => {
  it('load --into reports every table it imported', async () => {
    const check = await cli('load', fx, '--json');
    expect(check.code).toBe(0);
    const tables = (JSON.parse(check.stdout) as { tables: { table: string; rows: number; missing_columns: string[] }[] }).tables;
    expect(tables.find((t) => t.table === 'events')).toMatchObject({ rows: 20000, missing_columns: [] });
  });

  it('estimate gives the HTTP count for each criteria: directory read in place, imported, and database file', async () => {
    const names = Object.keys(CRITERIA);
    // One process at a time on a database file: DuckDB locks it (directories have no lock).
    const fromViews = Promise.all(names.map((n) => estimate(files[n]!, fx)));
    const fromImport = Promise.all(names.slice(0, 2).map((n) => estimate(files[n]!, fx, '--import')));
    const fromDb: number[] = [];
    for (const n of names) fromDb.push(await estimate(files[n]!, db));
    const http: number[] = [];
    for (const n of names) http.push(await httpCount({ version: 1, root: CRITERIA[n] }));
    expect(fromDb).toEqual(http);
    expect(await fromViews).toEqual(http);
    expect(await fromImport).toEqual(http.slice(0, 2));
    expect(http.every((c) => c > 0)).toBe(true);
  });

  it('members files are identical from the directory read in place and from the database file', async () => {
    for (const name of ['payments', 'payload', 'not']) {
      const fromViews = join(dir, `members-${name}-views.csv`);
      const fromDb = join(dir, `members-${name}-db.csv`);
      const views = await cli('members', files[name]!, '--data', fx, '--at', AT, '--out', fromViews, '--json');
      expect(views.code, views.stderr).toBe(0);
      const file = await cli('members', files[name]!, '--data', db, '--at', AT, '--out', fromDb, '--json');
      expect(file.code, file.stderr).toBe(0);
      expect((JSON.parse(views.stdout) as { rows: number }).rows).toBe(await httpCount({ version: 1, root: CRITERIA[name] }));
      expect(readFileSync(fromViews, 'utf8')).toBe(readFileSync(fromDb, 'utf8'));
    }
  });

  it('payload paths are checked against the data, read in place or from the database file', async () => {
    const unseen = join(dir, 'unseen.json');
    writeFileSync(unseen, JSON.stringify({ version: 1, root: event('purchase', did(), { 'payload.nope': { op: 'is_set' } }) }));
    for (const data of [fx, db]) {
      const ok = await cli('validate', files.payload!, '--data', data);
      expect(ok.code, ok.stdout).toBe(0);
      // an unseen payload path is unknown against the data
      for (const command of ['validate', 'estimate']) {
        const res = await cli(command, unseen, '--data', data, '--json');
        expect(res.code).toBe(1);
        expect(JSON.parse(res.stdout)).toMatchObject({ errors: [{ code: 'unknown_field', path: '/root/filter/payload.nope' }] });
      }
    }
  });

  it('load without --into says the directory can be used in place', async () => {
    const res = await cli('load', fx);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/events\s+20,000 rows/);
    expect(res.stdout).toMatch(/use it directly with --data/);
  });

  it('validate prints the codes and paths of an invalid file and exits 1', async () => {
    const bad = join(dir, 'invalid.json');
    writeFileSync(bad, JSON.stringify({ version: 1, root: { op: 'and', children: [
      event('signup', { op: 'did', window: ever }),
      { op: 'not', child: event('login', did()) },
      { source: 'pageview', filter: { channel_category: { op: '=', value: 'Carrier Pigeon' } }, occurrence: did() },
    ] } }));
    const human = await cli('validate', bad);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/invalid_count\s+\/root\/children\/0\/occurrence/);
    expect(human.stdout).toMatch(/invalid_value\s+\/root\/children\/2\/filter\/channel_category/);
    const json = await cli('validate', bad, '--json');
    expect(json.code).toBe(1);
    const http = (await app.compile(JSON.parse(readFileSync(bad, 'utf8')))).json() as { errors: unknown[] };
    expect((JSON.parse(json.stdout) as { errors: unknown[] }).errors).toEqual(http.errors);
  });

  it('members --out parquet holds as many rows as the count', async () => {
    const out = join(dir, 'members.parquet');
    const res = await cli('members', files.not!, '--data', db, '--at', AT, '--out', out, '--json');
    expect(res.code, res.stderr).toBe(0);
    const instance = await DuckDBInstance.create(':memory:');
    const conn = await instance.connect();
    const rows = (await conn.runAndReadAll('SELECT count(*) AS n, count(person_id) + count(visitor_id) AS ids FROM read_parquet($1)', [out])).getRowObjectsJS();
    conn.closeSync();
    instance.closeSync();
    const count = await httpCount({ version: 1, root: CRITERIA.not });
    expect(Number(rows[0]!.n)).toBe(count);
    expect(Number(rows[0]!.ids)).toBe(count);
    expect((JSON.parse(res.stdout) as { rows: number }).rows).toBe(count);
  });

  it('explain --json gives per-leaf counts equal to single-leaf estimates', async () => {
    const res = await cli('explain', files.did_not!, '--data', db, '--at', AT, '--json');
    expect(res.code, res.stderr).toBe(0);
    interface Node { kind: string; count: number; negated: boolean; children?: Node[] }
    const out = JSON.parse(res.stdout) as { count: number; tree: Node; sql: string; params: unknown[] };
    expect(out.tree.kind).toBe('and');
    expect(out.count).toBe(await httpCount({ version: 1, root: CRITERIA.did_not }));
    expect(out.sql).toContain('INTERSECT');
    expect(out.params).toContain('signup');
    const leaves = (CRITERIA.did_not as { children: { occurrence: object }[] }).children;
    expect(out.tree.children).toHaveLength(leaves.length);
    const single: number[] = [];
    for (const [i, leaf] of leaves.entries()) {
      // a did_not leaf shows the profiles who did it: the same leaf as `did` at least once
      const positive = i === 2 ? { ...leaf, occurrence: did() } : leaf;
      const file = join(dir, `leaf-${i}.json`);
      writeFileSync(file, JSON.stringify({ version: 1, root: positive }));
      single.push(await estimate(file, db));
    }
    expect(out.tree.children!.map((c) => c.count)).toEqual(single);
    expect(out.tree.children!.map((c) => c.negated)).toEqual([false, false, true]);
    const human = await cli('explain', files.not!, '--data', db, '--at', AT);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/not \(subtracted\)/);
    expect(human.stdout).toMatch(/\$1 = 'ws_/);
  });

  it('explain --analyze adds DuckDB\'s profile of the query as it ran, with rows per operator', async () => {
    const res = await cli('explain', files.did_not!, '--data', db, '--at', AT, '--analyze', '--json');
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout) as { count: number; analyze: string };
    expect(out.analyze).toMatch(/Total Time/);
    expect(out.analyze).toMatch(/TABLE_SCAN|SEQ_SCAN/);
    // the count(*) gives one row; the operator feeding it carries the audience's profiles
    expect(out.count).toBeGreaterThan(0);
    expect(out.analyze).toMatch(/\b1 row\b/);
    expect(out.analyze).toMatch(new RegExp(`[^0-9,]${out.count.toLocaleString('en-US')} rows\\b`));
    const human = await cli('explain', files.did_not!, '--data', db, '--at', AT, '--analyze');
    expect(human.stdout).toMatch(/EXPLAIN ANALYZE:\n/);
  });
});

describe('cli error paths', () => {
  const expectOneLine = (res: Result, pattern: RegExp) => {
    expect(res.code).not.toBe(0);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(pattern);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  };

  it('missing files, bad JSON, unknown commands and options', async () => {
    const badJson = join(dir, 'bad.json');
    writeFileSync(badJson, '{ "version": 1, ');
    const results = await Promise.all([
      cli('estimate', join(dir, 'missing.json'), '--data', db),
      cli('validate', join(dir, 'missing.json')),
      cli('estimate', badJson, '--data', db),
      cli('explain', files.count!, '--data', join(dir, 'nowhere')),
      cli('load', join(dir, 'nowhere')),
      cli('frobnicate'),
      cli('estimate', files.count!, '--data', db, '--frob'),
      cli('members', files.count!, '--data', db),
      cli('estimate', join(dir, 'missing.json'), '--data', fx),
      cli('explain', badJson, '--data', fx),
      cli('estimate', files.count!, '--data', db, '--import'),
    ]);
    expectOneLine(results[0]!, /missing\.json: no such file/);
    expectOneLine(results[1]!, /missing\.json: no such file/);
    expectOneLine(results[2]!, /bad\.json: not valid JSON/);
    expectOneLine(results[3]!, /nowhere: no such file or directory/);
    expectOneLine(results[4]!, /nowhere: no such directory/);
    expectOneLine(results[5]!, /unknown command "frobnicate"/);
    expectOneLine(results[6]!, /Unknown option '--frob'/);
    expectOneLine(results[7]!, /--out .* is required/);
    expectOneLine(results[8]!, /missing\.json: no such file/);
    expectOneLine(results[9]!, /bad\.json: not valid JSON/);
    expectOneLine(results[10]!, /--import applies to a directory/);
    expect(results.slice(5, 8).every((r) => r.code === 2)).toBe(true);
    expect(results[10]!.code).toBe(2);
  });

  it('a parquet file with missing columns is named with the columns it lacks', async () => {
    const broken = join(dir, 'broken');
    const instance = await DuckDBInstance.create(':memory:');
    const conn = await instance.connect();
    mkdirSync(broken);
    await conn.run(`COPY (SELECT * FROM read_parquet('${join(fx, 'persons.parquet')}')) TO '${join(broken, 'persons.parquet')}' (FORMAT parquet)`);
    await conn.run(`COPY (SELECT event_id, event_name, ts FROM read_parquet('${join(fx, 'events.parquet')}')) TO '${join(broken, 'events.parquet')}' (FORMAT parquet)`);
    conn.closeSync();
    instance.closeSync();
    const results = await Promise.all([
      cli('load', broken),
      cli('load', broken, '--into', join(dir, 'broken.duckdb')),
      cli('estimate', files.count!, '--data', broken),
      cli('members', files.count!, '--data', broken, '--out', join(dir, 'never.csv')),
      cli('estimate', files.count!, '--data', broken, '--import'),
    ]);
    for (const res of results) expectOneLine(res, /events\.parquet: missing columns person_id, visitor_id, properties/);
    // the human check also lists the tables before failing
    expect(results[0]!.stdout).toMatch(/events\s+20,000 rows\s+MISSING person_id, visitor_id, properties/);
    expect(results.every((r) => r.code === 1)).toBe(true);
  });

  it('every command answers --help', async () => {
    for (const command of ['load', 'validate', 'estimate', 'members', 'explain']) {
      const res = await cli(command, '--help');
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(new RegExp(`^usage: audiences ${command}`));
    }
  });
});

describe('reading a directory in place, and importing it', () => {
  it('the key check finds two ids that share a key, and none among the fixture ids', async () => {
    const store = await Store.open(':memory:');
    try {
      const ids = "(VALUES ('p_1'), ('p_2'), ('p_10'), (NULL)) AS t(id)";
      // length() gives p_1 and p_2 the same key: a collision, found by the same check
      expect(await keysCollide(store, ids, 'id', (id) => `length(${id})`)).toBe(true);
      expect(await keysCollide(store, ids, 'id')).toBe(false);
      expect(await keysCollide(store, parquetSource(join(fx, 'persons.parquet')), 'person_id')).toBe(false);
      expect(await keysCollide(store, parquetSource(join(fx, 'visitors.parquet')), 'visitor_id')).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('the import reports its progress through the events, in increasing rows up to the total', async () => {
    const store = await Store.open(':memory:');
    try {
      const ws = (await new Workspaces(store).create('progress')).workspace_id;
      const seen: { done: number; total: number; name: string }[] = [];
      const tables: { table: string; rows: number }[] = [];
      await importParquetDir(store, ws, fx, {
        events: (done, total, name) => seen.push({ done, total, name }),
        table: (table, rows) => tables.push({ table, rows }),
      });
      expect(seen.length).toBeGreaterThan(1);
      expect(seen.every((s) => s.total === 20000)).toBe(true);
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.done).toBeGreaterThanOrEqual(seen[i - 1]!.done);
      expect(seen.at(-1)!.done).toBe(20000);
      expect(new Set(seen.map((s) => s.name)).size).toBeGreaterThan(1);
      expect(tables.find((t) => t.table === 'events')).toEqual({ table: 'events', rows: 20000 });
      expect(tables.map((t) => t.table)).toEqual(['persons', 'visitors', 'events', 'pageviews', 'customers', 'subscriptions', 'invoices', 'payment_events']);
    } finally {
      await store.close();
    }
  });
});
