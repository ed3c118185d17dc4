// The real process as production runs it (the build, node dist/main.js, and `npm start` around
// it): keys printed once on a fresh database, BOOTSTRAP_* credentials, /health, and a clean exit
// on SIGTERM that keeps the database usable.

import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectClickHouse } from '../src/store/clickhouse/client.js';
import { Store } from '../src/store/duckdb/db.js';
import type { AnalyticsEngine } from '../src/store/open.js';
import { ENGINES } from './support/engines.js';
import { freePort } from './support/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'server-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The newest modification time of a file under `path` (or of `path`). */
function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

// Built when src/ changed since this file's last build (a fresh clone, CI: once per run); `npm start`
// builds again, and finds it up to date.
const STAMP = join('dist', '.built');
beforeAll(() => {
  const sources = Math.max(newest('src'), ...['package.json', 'tsconfig.json', join('scripts', 'build.mjs')].map(newest));
  if (existsSync(STAMP) && statSync(STAMP).mtimeMs >= sources) return;
  const started = new Date();
  execFileSync('npm', ['run', 'build'], { stdio: 'pipe' });
  // Stamped with the build's start: a source saved while it ran is newer, and builds again next time.
  writeFileSync(STAMP, '');
  utimesSync(STAMP, started, started);
});

// Whatever a failing test left running (a server orphaned by its npm, say) goes with it.
const processes = new Set<number>();
afterEach(() => {
  for (const pid of processes) if (alive(pid)) process.kill(pid, 'SIGKILL');
  processes.clear();
});

/** The events named tick stored by a service that was killed: in its database file, or in its embedded chDB. */
async function ticks(engine: AnalyticsEngine, database: string, clickhouse: { path: string; database: string }): Promise<number> {
  if (engine === 'duckdb') {
    const store = await Store.open(database);
    const rows = await store.query("SELECT count(*) AS n FROM events WHERE event_name = 'tick'");
    await store.close();
    return Number(rows[0]!.n);
  }
  const client = await connectClickHouse(clickhouse);
  try {
    const result = await client.query({ query: `SELECT count() AS n FROM ${clickhouse.database}.events WHERE event_name = 'tick'`, format: 'JSONEachRow' });
    return Number((await result.json<{ n: string }>())[0]!.n);
  } finally {
    await client.close();
  }
}


interface Running {
  child: ChildProcess;
  output: () => string;
  url: string;
}

async function start(env: Record<string, string>, [command, ...args] = [process.execPath, 'dist/main.js']): Promise<Running> {
  const port = await freePort();
  const child = spawn(command!, args, {
    env: { ...process.env, PORT: String(port), DATABASE_PATH: join(dir, 'service.duckdb'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  processes.add(child.pid!);
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300 && child.exitCode === null; i++) {
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) return { child, output: () => output, url };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`the server did not start:\n${output}`);
}

function stop(running: Running, signal: NodeJS.Signals): Promise<number | null> {
  return new Promise((resolve) => {
    running.child.once('exit', (code) => resolve(code));
    running.child.kill(signal);
  });
}

/** Whether anything accepts a new TCP connection on `port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
      .once('connect', () => { socket.destroy(); resolve(true); })
      .once('error', () => resolve(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const ingest = (url: string, key: string, batch: unknown[]) => fetch(`${url}/v1/events`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ batch }),
});

/**
 * A POST /v1/events the server is already handling: it read the headers and answered
 * `100 Continue`; the body goes only when `send` is called.
 */
function heldIngest(url: string, key: string, batch: unknown[]): Promise<{ send: () => Promise<{ status: number; body: string }> }> {
  const body = JSON.stringify({ batch });
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
    });
    const answer = new Promise<{ status: number; body: string }>((done, fail) => {
      req.once('response', (res) => {
        let text = '';
        res.on('data', (chunk) => { text += chunk; }).once('end', () => done({ status: res.statusCode!, body: text }));
      });
      req.once('error', fail);
    });
    answer.catch(() => undefined); // a failure before `send` is reported by `send`
    req.once('continue', () => resolve({ send: () => { req.end(body); return answer; } }));
    req.once('error', reject);
    req.flushHeaders();
  });
}

const compile = (url: string, key: string) => fetch(`${url}/v1/audiences/compile`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ criteria_json: { version: 1, root: { source: 'payments', event: 'refund_issued', occurrence: { window: { kind: 'ever' } } } } }),
});

describe('the service process', () => {
  it('prints a new workspace\'s keys once, serves with them, and exits 0 on SIGTERM', async () => {
    const first = await start({});
    const key = /secret key:\s+(sk_\S+)/.exec(first.output())?.[1];
    expect(key).toBeDefined();
    expect((await compile(first.url, key!)).status).toBe(200);
    expect((await fetch(`${first.url}/tracker.js`)).status).toBe(200); // the build carries the tracker's source
    expect(await stop(first, 'SIGTERM')).toBe(0);

    const second = await start({});
    expect(second.output()).not.toContain('secret key:');
    // The webhook URL, unlike the keys, is printed at every start.
    const workspace = /created workspace "default" \((ws_\S+)\)/.exec(first.output())?.[1];
    expect(/stripe webhook URL:\s+(\S+)/.exec(second.output())?.[1]).toBe(`${second.url}/v1/webhooks/stripe/${workspace}`);
    expect((await compile(second.url, key!)).status).toBe(200);
    expect(await stop(second, 'SIGINT')).toBe(0);
  });

  it('refuses at start, in one line and exit 1, a ClickHouse that cannot be reached', async () => {
    // A port just closed: nothing listens there.
    const closed = await freePort();
    const refused = spawnSync(process.execPath, ['dist/main.js'], {
      env: { ...process.env, PORT: '0', DATABASE_PATH: join(dir, 'clickhouse.duckdb'), ANALYTICS_STORE: 'clickhouse', CLICKHOUSE_URL: `http://127.0.0.1:${closed}` },
      encoding: 'utf8', timeout: 60_000,
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^ClickHouse: .*127\\.0\\.0\\.1:${closed}`))]);
  });

  it('makes the default workspace hold exactly the BOOTSTRAP_* keys', async () => {
    const running = await start({ BOOTSTRAP_SECRET_KEY: 'sk_bootstrap_test_key', BOOTSTRAP_PUBLISHABLE_KEY: 'pk_bootstrap_test_key' });
    expect((await compile(running.url, 'sk_bootstrap_test_key')).status).toBe(200);
    expect((await compile(running.url, 'pk_bootstrap_test_key')).status).toBe(403);
    expect(await stop(running, 'SIGTERM')).toBe(0);
  });

  it('serves the people lookup on DATA_PORT too, and only that there', async () => {
    const dataPort = await freePort();
    const running = await start({ DATA_PORT: String(dataPort), BOOTSTRAP_SECRET_KEY: 'sk_data_port_test' });
    const headers = { authorization: 'Bearer sk_data_port_test' };
    const dataUrl = `http://127.0.0.1:${dataPort}`;
    const lookup = await fetch(`${dataUrl}/people?q=nobody`, { headers });
    expect(lookup.status).toBe(200);
    expect(await lookup.json()).toEqual({ data: [], next_cursor: null });
    expect((await fetch(`${running.url}/people?q=nobody`, { headers })).status).toBe(200);
    expect((await fetch(`${dataUrl}/health`)).status).toBe(404);
    expect((await fetch(`${dataUrl}/people?q=x`)).status).toBe(401);
    expect(await stop(running, 'SIGTERM')).toBe(0);
  });

  it('stops `npm start` on a SIGTERM to npm: no new connections, the request in flight answered, the tree exits 0, nothing lost', async () => {
    const database = join(dir, 'npm-start.duckdb');
    const key = 'sk_npm_start_test';
    const running = await start({ DATABASE_PATH: database, BOOTSTRAP_SECRET_KEY: key }, ['npm', 'start']);
    const port = Number(new URL(running.url).port);
    // The server is a process of its own under npm: the signal has to get from one to the other.
    const server = Number(/"pid":(\d+)/.exec(running.output())?.[1]);
    processes.add(server);
    expect(alive(server)).toBe(true);
    expect(server).not.toBe(running.child.pid);

    expect((await ingest(running.url, key, [{ event_name: 'before_stop', external_id: 'u1' }])).status).toBe(200);
    const held = await heldIngest(running.url, key, [{ event_name: 'in_flight', external_id: 'u2' }]);
    const exited = stop(running, 'SIGTERM');
    await expect.poll(() => accepts(port), { timeout: 20_000 }).toBe(false);

    const answer = await held.send();
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ accepted: 1 });
    expect(await exited).toBe(0);
    expect(alive(server)).toBe(false);
    expect(running.output()).toContain('"signal":"SIGTERM","msg":"shutting down"');

    expect(existsSync(`${database}.wal`)).toBe(false); // checkpointed on the way out
    const store = await Store.open(database);
    const rows = await store.query('SELECT event_name FROM events ORDER BY event_name');
    await store.close();
    expect(rows).toEqual([{ event_name: 'before_stop' }, { event_name: 'in_flight' }]);
  });

  it('honours a SIGTERM that arrives during startup once the service is up, and exits 0', async () => {
    const database = join(dir, 'early.duckdb');
    const child = spawn(process.execPath, ['dist/main.js'], {
      env: { ...process.env, PORT: String(await freePort()), DATABASE_PATH: database },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    processes.add(child.pid!);
    let output = '';
    // The keys are printed after the database opens, before the app is built and listens.
    await new Promise<void>((resolve) => child.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('secret key:')) resolve();
    }));
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(existsSync(`${database}.wal`)).toBe(false);
  });

  it.each(ENGINES)('keeps every acknowledged event when the process is killed right after the answers (%s)', async (engine) => {
    const database = join(dir, `killed-${engine}.duckdb`);
    const clickhouse = { path: join(dir, 'killed-clickhouse'), database: 'killed' };
    const running = await start({
      DATABASE_PATH: database, BOOTSTRAP_SECRET_KEY: 'sk_durability_test', ANALYTICS_STORE: engine,
      ...(engine === 'clickhouse' ? { CLICKHOUSE_PATH: clickhouse.path, CLICKHOUSE_DATABASE: clickhouse.database } : {}),
    });
    let acknowledged = 0;
    for (let b = 0; b < 20; b++) {
      const batch = Array.from({ length: 50 }, (_, i) => ({ event_name: 'tick', external_id: `u${i % 7}`, properties: { b, i } }));
      const res = await fetch(`${running.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk_durability_test', 'content-type': 'application/json' },
        body: JSON.stringify({ batch }),
      });
      expect(res.status).toBe(200);
      acknowledged += ((await res.json()) as { accepted: number }).accepted;
    }
    expect(await stop(running, 'SIGKILL')).toBeNull();

    expect(await ticks(engine, database, clickhouse)).toBe(acknowledged);
    expect(acknowledged).toBe(1000);
  });
});
