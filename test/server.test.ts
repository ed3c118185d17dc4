// The real process as `npm start` runs it: keys printed once on a fresh database, BOOTSTRAP_*
// credentials, /health, and a clean exit on SIGTERM that keeps the database usable.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../src/store/db.js';

const dir = mkdtempSync(join(tmpdir(), 'server-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Running {
  child: ChildProcess;
  output: () => string;
  url: string;
}

async function start(env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, PORT: String(port), DATABASE_PATH: join(dir, 'service.duckdb'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200 && child.exitCode === null; i++) {
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
    expect(await stop(first, 'SIGTERM')).toBe(0);

    const second = await start({});
    expect(second.output()).not.toContain('secret key:');
    expect((await compile(second.url, key!)).status).toBe(200);
    expect(await stop(second, 'SIGINT')).toBe(0);
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

  it('keeps every acknowledged event when the process is killed right after the answers', async () => {
    const database = join(dir, 'killed.duckdb');
    const running = await start({ DATABASE_PATH: database, BOOTSTRAP_SECRET_KEY: 'sk_durability_test' });
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

    const store = await Store.open(database);
    const rows = await store.query("SELECT count(*) AS n FROM events WHERE event_name = 'tick'");
    await store.close();
    expect(Number(rows[0]!.n)).toBe(acknowledged);
    expect(acknowledged).toBe(1000);
  });
});
