// kill -9 in the middle of a run (CI tier): the service (`node src/main.ts`, tsx, on a DuckDB
// file) is killed at random moments while clients post Segment batches; after each restart every
// acknowledged message is stored exactly once, including those acknowledged just before the kill
// and resolved only after the restart (the log's replay), and those resolved twice (dedupe).

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Store } from '../src/store/duckdb/db.js';
import { eventually } from './support/faults.js';
import { freePort } from './support/ports.js';
import { FULL_TIER } from './support/tier.js';

const KEY = 'sk_ingest_log_kill_key';
const KILLS = 3;
const dir = mkdtempSync(join(tmpdir(), 'ingest-log-kill-'));
const env = { DATABASE_PATH: join(dir, 'service.duckdb'), INGEST_LOG_DIR: join(dir, 'log'), BOOTSTRAP_SECRET_KEY: KEY, INGEST_RATE_LIMIT_PER_MINUTE: '1000000' };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  running.clear();
});

async function start(): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...process.env, ...env, PORT: String(port) }, stdio: 'ignore' });
  running.add(child);
  const base = `http://127.0.0.1:${port}`;
  if (!await eventually(() => fetch(`${base}/live`).then((r) => r.ok, () => false), 600)) throw new Error('the service did not start');
  return { child, base };
}

/** Resolves once `child` has exited, at once if it already has (its 'exit' event may be past). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

const auth = `Basic ${Buffer.from(`${KEY}:`).toString('base64')}`;
let seq = 0;

/** Posts batches of 50 track calls from 4 clients until the service dies; the message ids acknowledged. */
async function postUntilKilled(base: string, killAfterMs: number, child: ChildProcess): Promise<string[]> {
  const acked: string[] = [];
  let alive = true;
  setTimeout(() => { alive = false; child.kill('SIGKILL'); }, killAfterMs);
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (alive) {
      const ids = Array.from({ length: 50 }, () => `m-${seq++}`);
      const batch = ids.map((messageId, i) => ({ type: 'track', event: 'tick', userId: `u-${i % 7}`, anonymousId: `a-${i}`, messageId }));
      const res = await fetch(`${base}/v1/batch`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ batch }) }).catch(() => null);
      if (res?.status === 200) acked.push(...ids);
    }
  }));
  return acked;
}

describe.skipIf(!FULL_TIER)('the ingest log under kill -9', () => {
  it('stores every acknowledged message exactly once after each restart', async () => {
    const acked: string[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      const { child, base } = await start();
      acked.push(...await postUntilKilled(base, 500 + Math.floor(Math.random() * 1500), child));
      await exited(child);
    }
    const { child, base } = await start();
    expect(await eventually(async () => {
      const status = await (await fetch(`${base}/v1/ingest/status`, { headers: { authorization: `Bearer ${KEY}` } })).json() as { backlog_events: number };
      return status.backlog_events === 0;
    }, 1200)).toBe(true);
    const stopped = exited(child);
    child.kill('SIGTERM');
    await stopped;
    const store = await Store.open(env.DATABASE_PATH);
    try {
      const rows = await store.query('SELECT message_id, count(*) AS n FROM events GROUP BY message_id');
      const counts = new Map(rows.map((r) => [r.message_id as string, Number(r.n)]));
      expect(acked.length).toBeGreaterThan(0);
      expect(acked.filter((id) => counts.get(id) !== 1)).toEqual([]);
      expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    } finally {
      await store.close();
    }
  }, 300_000);
});
