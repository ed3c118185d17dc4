// The analyst CLI (src/cli) run in this process through main(argv, io) against a generated fixture, checked against
// the HTTP compile on the same data (the directory read in place, imported, and a database file),
// plus its error paths, the key check of a directory read in place and the import's progress; the
// workspace and key commands against a service database, checked through the real app; every
// example of docs/cli.md run as written; the fixture generator's command line. What only a real
// process shows runs bin/audiences.js as a child: exit codes, a closed pipe, a terminal, the file lock.

import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateFixtures, main as generateMain } from '../fixtures/generate.js';
import { keysCollide, parquetSource } from '../src/store/duckdb/attach.js';
import { connectClickHouse } from '../src/store/clickhouse/client.js';
import { CLICKHOUSE_TABLES, VISITOR_LINKS } from '../src/store/clickhouse/schema.js';
import { Store, STORAGE_VERSION } from '../src/store/duckdb/db.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { MIGRATIONS } from '../src/store/duckdb/migrations.js';
import { importParquetDir } from '../src/store/duckdb/import.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { startTestApp, type TestApp } from './support/app.js';
import { cli, cliOf, cliWith } from './support/cli.js';
import { CHDB_INSTALLED } from './support/engines.js';
import { deliver, notification } from './support/stripe.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'audiences.js');
const AT = '2026-11-01T00:00:00Z';

interface Result { code: number; stdout: string; stderr: string }

/** Runs a program to its end; a non-zero exit is a result, not an error. */
async function exec(file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Result> {
  try {
    const { stdout, stderr } = await run(file, args, { timeout: 60_000, ...options });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A process that opens the DuckDB file named by its argument, says so on stdout, and holds it until its stdin ends. */
const HOLD = `require('@duckdb/node-api').DuckDBInstance.create(process.argv[1]).then(async (db) => {
  await db.connect(); process.stdout.write('open\\n'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));
});`;

/** bin/audiences.js as a child process. */
const processCli = (...args: string[]) => exec(process.execPath, [BIN, ...args]);


/** A port nothing listens on (just released). */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
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
  // Estimates side by side in one process share its DuckDB threads: the default budget is not what is checked.
  const res = await cli('estimate', file, '--data', data, '--at', AT, '--json', '--budget', '120000', ...options);
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

  it('estimate --breakdown gives the HTTP compile\'s breakdown, from the directory and the database file', async () => {
    const criteria = { version: 1, root: CRITERIA.payload };
    for (const [by, data] of [['channel_category', fx], ['traits.plan', db]] as const) {
      const res = await app.post('/v1/audiences/compile', { criteria_json: criteria, breakdown: by });
      const http = res.json().breakdown as { value: string | null; count: number }[];
      expect(http.length, res.body).toBeGreaterThan(1);
      const out = await cli('estimate', files.payload!, '--data', data, '--at', AT, '--json', '--breakdown', by);
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout).breakdown).toEqual(http);
    }
    const text = await cli('estimate', files.payload!, '--data', db, '--at', AT, '--breakdown', 'channel_category');
    expect(text.stdout).toMatch(/^\s+[\d,]+ {2}Direct$/m);
    const unknown = await cli('estimate', files.payload!, '--data', db, '--at', AT, '--breakdown', 'traits.nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('/breakdown');
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

  it('report gives the HTTP revenue report: directory read in place and database file, with criteria; a fault exits 1', async () => {
    const body = { from: '2020-01-01', to: '2028-01-01', interval: 'month', group_by: 'channel_category', model: 'time_decay', lookback_days: 60, half_life_days: 3 };
    const res = await app.post('/v1/reports/revenue', { ...body, criteria_json: { version: 1, root: CRITERIA.payments } });
    expect(res.statusCode, res.body).toBe(200);
    const http = res.json() as { rows: unknown[]; totals: { paying_customers: number } };
    expect(http.totals.paying_customers).toBeGreaterThan(0);
    const args = ['--from', body.from, '--to', body.to, '--model', body.model, '--lookback-days', '60', '--half-life-days', '3', '--criteria', files.payments!, '--at', AT, '--json'];
    for (const data of [fx, db]) {
      const out = await cli('report', '--data', data, ...args);
      expect(out.code, out.stderr).toBe(0);
      const { elapsed_ms: _, ...report } = JSON.parse(out.stdout) as Record<string, unknown>;
      expect(report).toEqual(http);
    }
    // Printed: major units with the currency, the currencies in one (sorted) order on every line.
    const printed = await cli('report', '--data', db, ...args.slice(0, -1));
    expect(printed.code, printed.stderr).toBe(0);
    const lines = printed.stdout.split('\n').filter((l) => l.includes(' revenue '));
    const rows = [...(http.rows as { revenue: Record<string, number> }[]), (http as unknown as { totals: { revenue: Record<string, number> } }).totals];
    expect(lines).toHaveLength(rows.length);
    for (const [i, line] of lines.entries()) {
      const shown = /revenue ([^;]*);/.exec(line)![1]!.split(', ').map((m) => {
        const [, amount, currency] = /^(-?[\d,]+\.\d{2}) ([A-Z]{3})$/.exec(m) ?? [];
        expect(amount, line).toBeDefined();
        return [currency!.toLowerCase(), Math.round(Number(amount!.replaceAll(',', '')) * 100)] as const;
      });
      expect(shown.map(([c]) => c)).toEqual(shown.map(([c]) => c).sort());
      expect(Object.fromEntries(shown)).toEqual(rows[i]!.revenue);
    }
    const fault = await cli('report', '--data', db, '--from', body.from, '--to', body.to, '--group-by', 'traits.nope');
    expect(fault.code).toBe(1);
    expect(fault.stdout).toMatch(/^unknown_field\s+\/group_by/);
    const usage = await cli('report', '--data', db, '--from', body.from, '--to', body.to, '--model', 'linear', '--lookback-days', 'ninety');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--lookback-days: /);
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

const expectOneLine = (res: Result, pattern: RegExp) => {
  expect(res.code).not.toBe(0);
  expect(res.stderr.trim().split('\n')).toHaveLength(1);
  expect(res.stderr.trim()).toMatch(pattern);
  expect(res.stderr).not.toMatch(/\n\s+at /);
};

describe('cli error paths', () => {
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
      cli('estimate', files.count!, '--data', db, '--frobnicate'),
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
    expectOneLine(results[6]!, /unknown option --frobnicate/);
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

  it('a wrong command line is one line naming the problem, a pointer to --help, and exit code 2', async () => {
    const cases: [string[], RegExp][] = [
      [['estimate', files.count!, '--data'], /^audiences: --data needs a value \(see: audiences estimate --help\)$/],
      [['estimate', files.count!, '--data', '--json'], /^audiences: --data needs a value \(see: audiences estimate --help\)$/],
      [['estimate', files.count!, '--data='], /^audiences: --data needs a value /],
      [['estimate', files.count!, '--data', db, '--json=yes'], /^audiences: --json takes no value \(see: audiences estimate --help\)$/],
      [['estimate', files.count!, '--data', db, '--frob'], /^audiences: unknown option --frob \(see: audiences estimate --help\)$/],
      [['members', files.count!, '-x'], /^audiences: unknown option -x \(see: audiences members --help\)$/],
      // validate and load take no evaluation time
      [['validate', files.count!, '--at', AT], /^audiences: unknown option --at \(see: audiences validate --help\)$/],
      [['load', fx, '--at', AT], /^audiences: unknown option --at \(see: audiences load --help\)$/],
      [['load', fx, 'extra'], /^audiences: unexpected argument "extra" \(see: audiences load --help\)$/],
      [['estimate'], /^audiences: missing <criteria\.json> \(see: audiences estimate --help\)$/],
      [['workspace', 'frob'], /^audiences: unknown workspace command "frob" \(see: audiences workspace --help\)$/],
      [['keys', 'rotate', '--data', db], /^audiences: missing <workspace> \(see: audiences keys rotate --help\)$/],
      [['keys', 'rotate', 'analyst', '--data', db, '--kind', 'root'], /^audiences: --kind must be one of secret, publishable, webhook, all, got "root"/],
      [['workspace', 'create', 'ws_lookalike', '--data', db], /^audiences: <name> must not start with ws_/],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(...args)));
    for (const [i, res] of results.entries()) {
      expectOneLine(res, cases[i]![1]);
      expect(res.code, cases[i]![0].join(' ')).toBe(2);
    }
  });

  it('every command answers --help', async () => {
    const commands = ['load', 'validate', 'estimate', 'members', 'explain', 'workspace create', 'workspace list', 'workspace mode', 'workspace retention', 'keys rotate', 'privacy delete', 'privacy suppress', 'privacy unsuppress'];
    const results = await Promise.all(commands.map((c) => cli(...c.split(' '), '--help')));
    for (const [i, res] of results.entries()) {
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(new RegExp(`^usage: audiences ${commands[i]}`));
    }
    const group = await cli('workspace', '--help');
    expect(group.code).toBe(0);
    expect(group.stdout).toMatch(/^usage: audiences workspace <create\|list\|mode\|retention>/);
  });

  it('the process exits with the command\'s code: 2 for a wrong command line, the message one line on stderr', async () => {
    const res = await processCli('estimate', files.count!, '--data', db, '--frob');
    expectOneLine(res, /^audiences: unknown option --frob \(see: audiences estimate --help\)$/);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
  });

  it('a reader that has gone (a closed pipe) ends the output quietly', async () => {
    // `true` exits before the command writes: every write meets a closed pipe.
    const res = await exec('sh', ['-c', `"${process.execPath}" "${BIN}" explain "${files.did_not}" --data "${db}" --at ${AT} | true`]);
    expect(res.code).toBe(0);
    expect(res.stderr).toBe('');
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
      const ws = (await new Workspaces(new DuckDBControl(store)).create('progress')).workspace_id;
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

describe('the import\'s progress bar', () => {
  it('off a terminal, load --into draws nothing on stderr and prints the table lines on stdout', async () => {
    const res = await cli('load', fx, '--into', join(dir, 'quiet.duckdb'));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe('');
    expect(res.stdout).toMatch(/^events\s+20,000 rows/m);
    expect(res.stdout).toMatch(/^loaded /m);
  });

  it('on a terminal, load --into draws a bar through the events on stderr', async () => {
    // script(1) gives the command a pseudo-terminal; stdout goes to a file, so the transcript is stderr.
    const out = join(dir, 'tty-stdout.txt');
    const command = `"${process.execPath}" "${BIN}" load "${fx}" --into "${join(dir, 'tty.duckdb')}" > "${out}"`;
    const res = await exec('script', ['-qec', command, '/dev/null']);
    expect(res.code, res.stdout).toBe(0);
    expect(res.stdout).toMatch(/events\s+\[[=-]{20}\] \d+% [\d,]+\/20,000 rows \d+s \w+/);
    expect(res.stdout).toMatch(/events\s+20,000 rows/);
    // the table lines went to the terminal, not to stdout
    expect(readFileSync(out, 'utf8')).toMatch(/^loaded .* in [\d.]+ s\n$/);
  });
});

describe('workspace and keys commands on the service database', () => {
  let service: string;
  const secretOwner = async (key: string) => {
    const store = await Store.open(service);
    try {
      return await new Workspaces(new DuckDBControl(store)).authenticate(key);
    } finally {
      await store.close();
    }
  };
  interface Created { workspace_id: string; name: string; secret_key: string; publishable_key: string; stripe_webhook_secret: string; webhook_url: string }
  let acme: Created;

  beforeAll(async () => {
    service = join(dir, 'service', 'attribution.duckdb');
    const res = await cli('workspace', 'create', 'acme', '--data', service, '--json');
    expect(res.code, res.stderr).toBe(0);
    acme = JSON.parse(res.stdout) as Created;
  });

  it('workspace create makes a workspace whose printed keys authenticate, stored hashed', async () => {
    expect(acme).toMatchObject({ name: 'acme', database_created: true, webhook_url: `http://127.0.0.1:3000/v1/webhooks/stripe/${acme.workspace_id}` });
    expect(acme.secret_key).toMatch(/^sk_/);
    expect(await secretOwner(acme.secret_key)).toEqual({ workspaceId: acme.workspace_id, kind: 'secret' });
    expect(await secretOwner(acme.publishable_key)).toEqual({ workspaceId: acme.workspace_id, kind: 'publishable' });
    const human = await cli('workspace', 'create', 'globex', '--data', service);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^created workspace "globex" \(ws_[\w-]+\) in .*attribution\.duckdb; these keys are shown only once:\n  secret key: +sk_/);
    const store = await Store.open(service);
    try {
      const stored = JSON.stringify(await store.query('SELECT * FROM api_keys'));
      expect(stored).not.toContain(acme.secret_key);
      expect(stored).not.toContain(acme.publishable_key);
    } finally {
      await store.close();
    }
    const taken = await cli('workspace', 'create', 'acme', '--data', service);
    expectOneLine(taken, /a workspace is already named "acme" \(ws_/);
    expect(taken.code).toBe(1);
  });

  it('workspace list shows ids and names, never a key', async () => {
    const json = await cli('workspace', 'list', '--data', service, '--json');
    expect(json.code, json.stderr).toBe(0);
    const listed = JSON.parse(json.stdout) as { database: string; workspaces: Record<string, string>[] };
    expect(listed.workspaces.map((w) => w.name)).toEqual(['acme', 'globex']);
    expect(Object.keys(listed.workspaces[0]!).sort()).toEqual(['created_at', 'name', 'workspace_id']);
    const human = await cli('workspace', 'list', '--data', service);
    expect(human.stdout).toMatch(new RegExp(`^workspace_id +name +created_at\\n${acme.workspace_id} +acme +\\d{4}-`));
    for (const out of [json.stdout, human.stdout]) expect(out).not.toMatch(/sk_|pk_|whsec_/);
  });

  it('keys rotate: the old secret key stops authenticating in the real app, the new one works, the rest is unchanged', async () => {
    const res = await cli('keys', 'rotate', 'acme', '--data', service, '--json');
    expect(res.code, res.stderr).toBe(0);
    const rotated = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(Object.keys(rotated).sort()).toEqual(['name', 'rotated', 'secret_key', 'workspace_id']);
    expect(rotated).toMatchObject({ workspace_id: acme.workspace_id, rotated: ['secret'] });
    const fresh = rotated.secret_key as string;
    expect(fresh).not.toBe(acme.secret_key);
    const t = await startTestApp({ path: service });
    try {
      const workspace = (key: string) => t.app.inject({ method: 'GET', url: '/v1/workspace', headers: { authorization: `Bearer ${key}` } });
      expect((await workspace(acme.secret_key)).statusCode).toBe(401);
      const ok = await workspace(fresh);
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toMatchObject({ id: acme.workspace_id, name: 'acme' });
      expect(await t.workspaces.authenticate(acme.publishable_key)).toEqual({ workspaceId: acme.workspace_id, kind: 'publishable' });
      const signed = await deliver(t, notification('customer.created', { id: 'cus_cli', object: 'customer', email: null, metadata: {} }),
        { workspaceId: acme.workspace_id, secret: acme.stripe_webhook_secret });
      expect(signed.statusCode, signed.body).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('keys rotate --kind all, by workspace id, replaces the publishable key and the webhook secret too', async () => {
    const res = await cli('keys', 'rotate', acme.workspace_id, '--kind', 'all', '--data', service, '--json');
    expect(res.code, res.stderr).toBe(0);
    const rotated = JSON.parse(res.stdout) as Created & { rotated: string[] };
    expect(rotated.rotated).toEqual(['secret', 'publishable', 'webhook']);
    expect(rotated.webhook_url).toBe(acme.webhook_url);
    const t = await startTestApp({ path: service });
    try {
      expect(await t.workspaces.authenticate(acme.publishable_key)).toBeNull();
      expect(await t.workspaces.authenticate(rotated.publishable_key)).toEqual({ workspaceId: acme.workspace_id, kind: 'publishable' });
      expect(await t.workspaces.authenticate(rotated.secret_key)).toEqual({ workspaceId: acme.workspace_id, kind: 'secret' });
      const event = () => notification('customer.created', { id: 'cus_cli2', object: 'customer', email: null, metadata: {} });
      const old = await deliver(t, event(), { workspaceId: acme.workspace_id, secret: acme.stripe_webhook_secret });
      expect(old.statusCode).toBe(400);
      const signed = await deliver(t, event(), { workspaceId: acme.workspace_id, secret: rotated.stripe_webhook_secret });
      expect(signed.statusCode, signed.body).toBe(200);
    } finally {
      await t.close();
    }
    const human = await cli('keys', 'rotate', 'globex', '--kind', 'publishable', '--data', service);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^rotated the publishable key of workspace "globex" .*the old one no longer works\. Shown only once:\n  publishable key: +pk_\S+\n$/);
  });

  it('an unknown workspace exits 1 naming it, and changes nothing', async () => {
    const before = await cli('workspace', 'list', '--data', service, '--json');
    const res = await cli('keys', 'rotate', 'initech', '--data', service);
    expectOneLine(res, /^audiences: .*attribution\.duckdb: no workspace "initech" \(see: audiences workspace list/);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect((await cli('workspace', 'list', '--data', service, '--json')).stdout).toBe(before.stdout);
    const missing = await cli('workspace', 'list', '--data', join(dir, 'nowhere.duckdb'));
    expectOneLine(missing, /nowhere\.duckdb: no such database/);
    expect(existsSync(join(dir, 'nowhere.duckdb'))).toBe(false);
  });

  it('while another process holds the database, one line says to stop the service', async () => {
    // The holder is a process of its own, as the service is: DuckDB's lock is a POSIX record lock,
    // which any handle of this worker (it runs other files' tests) closing on the same file would drop.
    const holder = spawn(process.execPath, ['-e', HOLD, service], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.once('data', () => resolve());
        holder.once('exit', (code) => reject(new Error(`the holder exited (${code}) before opening ${service}`)));
      });
      // Refused in this process: it never holds the lock, so its failed opens drop nothing of the holder's.
      const results = await Promise.all([
        cli('workspace', 'list', '--data', service),
        cli('workspace', 'create', 'hooli', '--data', service),
        cli('keys', 'rotate', 'acme', '--data', service),
      ]);
      for (const res of results) {
        expectOneLine(res, new RegExp(`open in another process \\(PID ${holder.pid}\\), and DuckDB lets only one process open a database file: stop the service`));
        expect(res.code).toBe(1);
      }
    } finally {
      holder.stdin.end();
      await exited;
    }
  });

  it('rotate in a process that has looked a key up: the cached old key stops authenticating at once', async () => {
    const store = await Store.open(':memory:');
    try {
      const workspaces = new Workspaces(new DuckDBControl(store));
      const ws = await workspaces.create('cached');
      expect(await workspaces.authenticate(ws.secret_key)).toEqual({ workspaceId: ws.workspace_id, kind: 'secret' });
      const rotated = await workspaces.rotate(ws.workspace_id, ['secret']);
      expect(await workspaces.authenticate(ws.secret_key)).toBeNull();
      expect(await workspaces.authenticate(rotated!.secret_key!)).toEqual({ workspaceId: ws.workspace_id, kind: 'secret' });
      expect(await workspaces.rotate('ws_missing', ['secret'])).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('without --data, the service\'s DATABASE_PATH is used', async () => {
    const res = await cliWith({ ...process.env, DATABASE_PATH: service }, 'workspace', 'list', '--json');
    expect(res.code, res.stderr).toBe(0);
    expect((JSON.parse(res.stdout) as { database: string }).database).toBe(service);
  });

  it('with ANALYTICS_STORE=clickhouse and a ClickHouse that cannot be reached, one line says so, exit 1', async () => {
    const closed = await closedPort();
    const env = { ...process.env, ANALYTICS_STORE: 'clickhouse', CLICKHOUSE_URL: `http://127.0.0.1:${closed}` };
    for (const command of [['workspace', 'list'], ['migrate']]) {
      const res = await cliWith(env, ...command, '--data', service);
      expect(res.code, command.join(' ')).toBe(1);
      expect(res.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^audiences: ClickHouse: .*127\\.0\\.0\\.1:${closed}`))]);
    }
  });
});

describe('migrate', () => {
  const versionOf = (res: Result) => (JSON.parse(res.stdout) as { schema_version: number }).schema_version;

  it('creates a missing service database with every migration, and changes nothing the second time', async () => {
    const path = join(dir, 'migrated', 'service.duckdb');
    const first = await cli('migrate', '--data', path, '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ database: path, database_created: true, schema_version: MIGRATIONS.length, analytics_store: 'duckdb', typed_rows_filled: 0 });
    const again = await cli('migrate', '--data', path);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(`${path}: schema version ${MIGRATIONS.length}\n`);
    const store = await Store.open(path);
    try {
      expect(await store.query('SELECT count(*) AS n FROM analytics_outbox')).toEqual([{ n: 0n }]);
    } finally {
      await store.close();
    }
  });

  it('--rewrite-storage copies a file of DuckDB 1.0\'s storage format into the service\'s, keeping its rows and sequences', async () => {
    const path = join(dir, 'old-format', 'service.duckdb');
    mkdirSync(join(dir, 'old-format'));
    const formatOf = async () => {
      const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
      try {
        const conn = await instance.connect();
        const rows = (await conn.runAndReadAll("SELECT tags['storage_version'] AS v FROM duckdb_databases() WHERE database_name = 'service'")).getRowObjectsJS();
        conn.closeSync();
        return rows[0]?.v;
      } finally {
        instance.closeSync();
      }
    };
    // A file made as DuckDB makes one by default, then migrated and written to by the service's store.
    (await DuckDBInstance.create(path, { storage_compatibility_version: 'v1.0.0' })).closeSync();
    const old = await Store.open(path);
    const drawn = await old.query("SELECT nextval('visitor_keys') AS k FROM range(3)");
    await old.close();
    expect(await cli('workspace', 'create', 'Old format', '--data', path)).toMatchObject({ code: 0 });
    expect(await formatOf()).toBe('v1.0.0+');

    const res = await cli('migrate', '--data', path, '--rewrite-storage', '--json');
    expect(res.code, res.stderr).toBe(0);
    const storage = (JSON.parse(res.stdout) as { storage: { from: string; to: string; rewritten: boolean; tables: number; rows: number } }).storage;
    expect(storage).toMatchObject({ from: 'v1.0.0', to: STORAGE_VERSION, rewritten: true });
    expect(storage.rows).toBeGreaterThan(0);
    expect(await formatOf()).toBe(`${STORAGE_VERSION}+`);
    expect(existsSync(`${path}.rewrite`)).toBe(false);

    const list = await cli('workspace', 'list', '--data', path, '--json');
    expect((JSON.parse(list.stdout) as { workspaces: { name: string }[] }).workspaces.map((w) => w.name)).toEqual(['Old format']);
    const store = await Store.open(path);
    try {
      // The sequences go on from where they were: no key is handed out twice.
      expect(await store.query("SELECT nextval('visitor_keys') AS k")).toEqual([{ k: (drawn.at(-1)!.k as bigint) + 1n }]);
      expect(await store.query('SELECT count(*) AS n FROM schema_migrations')).toEqual([{ n: BigInt(MIGRATIONS.length) }]);
    } finally {
      await store.close();
    }

    const again = await cli('migrate', '--data', path, '--rewrite-storage');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(`${path}: schema version ${MIGRATIONS.length}\nstorage format: DuckDB ${STORAGE_VERSION}, nothing to rewrite\n`);
    // PostgreSQL has no storage format of DuckDB's to rewrite.
    const pg = await cliWith({ ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, 'migrate', '--rewrite-storage');
    expect(pg.code).toBe(2);
    expect(pg.stderr).toMatch(/^audiences: --rewrite-storage rewrites a DuckDB file/);
  });

  it.skipIf(!CHDB_INSTALLED)('creates the ClickHouse schema in the embedded chDB, idempotently', async () => {
    const path = join(dir, 'migrated-ch', 'service.duckdb');
    const chPath = join(dir, 'migrated-ch', 'clickhouse');
    const env = { ...process.env, ANALYTICS_STORE: 'clickhouse', CLICKHOUSE_PATH: chPath, CLICKHOUSE_DATABASE: 'migrated' };
    for (const created of [true, false]) {
      const res = await exec(process.execPath, [BIN, 'migrate', '--data', path, '--json'], { env });
      expect(res.code, res.stderr).toBe(0);
      expect(JSON.parse(res.stdout)).toEqual({
        database: path, database_created: created, schema_version: MIGRATIONS.length, analytics_store: 'clickhouse', typed_rows_filled: 0,
        clickhouse: { database: 'migrated', path: chPath },
      });
    }
    const client = await connectClickHouse({ path: chPath, database: 'migrated' });
    try {
      const tables = await client.query({ query: 'SELECT name, engine FROM system.tables WHERE database = {db:String} ORDER BY name', query_params: { db: 'migrated' }, format: 'JSONEachRow' });
      const found = await tables.json<{ name: string; engine: string }>();
      expect(found.filter((t) => t.engine !== 'Dictionary').map((t) => t.name)).toEqual([...CLICKHOUSE_TABLES].sort());
      expect(found.filter((t) => t.engine === 'Dictionary').map((t) => t.name)).toEqual([VISITOR_LINKS]);
    } finally {
      await client.close();
    }
  });
});

describe('docs/cli.md', () => {
  it('every audiences example runs as written, from a checkout with the fixtures in data/fixtures', async () => {
    const doc = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const blocks = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const commands = blocks.flatMap((b) => b.split('\n')).filter((l) => l.startsWith('npx audiences '));
    expect(commands.length).toBeGreaterThanOrEqual(10);
    // A checkout: examples/ as shipped, data/fixtures as `npm run fixtures` writes it (smaller here).
    const checkout = join(dir, 'checkout');
    mkdirSync(join(checkout, 'examples'), { recursive: true });
    mkdirSync(join(checkout, 'data'), { recursive: true });
    copyFileSync(join(ROOT, 'examples', 'criteria.json'), join(checkout, 'examples', 'criteria.json'));
    await run('cp', ['-r', fx, join(checkout, 'data', 'fixtures')]);
    const env = { ...process.env };
    delete env.DATABASE_PATH;
    // The examples' relative paths are the checkout's: this process works there while they run.
    const previous = process.cwd();
    process.chdir(checkout);
    try {
      for (const command of commands) {
        // Plain words and a comment, nothing a shell would expand: split as sh splits them.
        const words = command.replace(/\s+#.*$/, '').trim().split(/\s+/).slice(2);
        expect(words.every((w) => /^[\w./:=-]+$/.test(w)), command).toBe(true);
        const res = await cliWith(env, ...words);
        expect(res.code, `${command}\n${res.stderr}`).toBe(0);
      }
    } finally {
      process.chdir(previous);
    }
    expect(existsSync(join(checkout, 'data', 'members.parquet'))).toBe(true);
    expect(existsSync(join(checkout, 'data', 'attribution.duckdb'))).toBe(true);
  }, 180_000);

  it('examples/criteria.json is valid against the fixtures and matches some profiles', async () => {
    const res = await cli('estimate', join(ROOT, 'examples', 'criteria.json'), '--data', db, '--at', AT, '--json');
    expect(res.code, res.stdout).toBe(0);
    const count = (JSON.parse(res.stdout) as { estimated_count: { count: number } }).estimated_count.count;
    expect(count).toBe(await httpCount(JSON.parse(readFileSync(join(ROOT, 'examples', 'criteria.json'), 'utf8'))));
    expect(count).toBeGreaterThan(0);
  });
});

describe('the fixture generator\'s command line', () => {
  // In this process (its main); the README's test runs `npm run fixtures -- --help` as the script.
  const generate = (...args: string[]) => cliOf(generateMain, ...args);

  it('--help prints the usage and exits 0', async () => {
    const res = await generate('--help');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^usage: npm run fixtures -- --people N --events N --pageviews N --seed N/);
    expect(res.stdout).toMatch(/--now ISO/);
  });

  it('bad options exit 2 with the problem and the usage line, and write nothing', async () => {
    const out = join(dir, 'never-fixtures');
    const cases: [string[], RegExp][] = [
      [['--frob'], /unknown option '--frob'/i],
      [['--people'], /--people/],
      [['--people', '10', '--events', '10', '--pageviews', '1'], /missing --seed/],
      [['--people', '0', '--events', '1', '--pageviews', '1', '--seed', '1'], /--people must be an integer >= 1, got "0"/],
      [['--people', '5', '--events', '1.5', '--pageviews', '1', '--seed', '1'], /--events must be an integer >= 0, got "1.5"/],
      [['--people', '5', '--events', '1', '--pageviews', '1', '--seed', '1', '--now', 'yesterday'], /--now must be an ISO date/],
    ];
    const results = await Promise.all(cases.map(([args]) => generate(...args, '--out', out)));
    for (const [i, res] of results.entries()) {
      expect(res.code, cases[i]![0].join(' ')).toBe(2);
      expect(res.stderr).toMatch(cases[i]![1]);
      expect(res.stderr).toMatch(/\nusage: npm run fixtures -- /);
      expect(res.stderr).not.toMatch(/\n\s+at /);
    }
    expect(existsSync(out)).toBe(false);
  });
});
