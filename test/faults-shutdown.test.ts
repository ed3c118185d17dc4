// Slow clients: a body sent a byte at a time is cut off with 408 at REQUEST_BODY_TIMEOUT_MS, and a
// SIGTERM waits SHUTDOWN_TIMEOUT_MS for requests under way, then cuts them off and exits 1 (none
// of them was acknowledged). The service runs as `node src/main.ts` (tsx), on a loopback port.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { answeredWithin, eventually } from './support/faults.js';
import { freePort } from './support/ports.js';
import { FULL_TIER } from './support/tier.js';

const KEY = 'sk_faults_shutdown_key';
const HANG_MS = 30_000;
const dir = mkdtempSync(join(tmpdir(), 'faults-shutdown-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Service { child: ChildProcess; port: number; output: () => string }
const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  running.clear();
});

async function start(env: Record<string, string>): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, PORT: String(port), DATABASE_PATH: join(dir, `${port}.duckdb`), BOOTSTRAP_SECRET_KEY: KEY, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const up = await eventually(() => fetch(`http://127.0.0.1:${port}/live`).then((r) => r.ok, () => false), 600);
  if (!up) throw new Error(`the service did not start:\n${output}`);
  return { child, port, output: () => output };
}

/** A client that sends the headers of a 1 KB body, then a byte of it every `everyMs`: what it was answered, once the connection closes. */
function slowBody(port: number, everyMs: number): { socket: Socket; answer: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (chunk) => { answer += chunk; });
  socket.write(`POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 1024\r\n\r\n{`);
  const drip = setInterval(() => socket.writable && socket.write(' '), everyMs);
  const closed = new Promise<string>((resolve) => socket.on('close', () => {
    clearInterval(drip);
    resolve(answer);
  }));
  socket.on('error', () => undefined);
  return { socket, answer: closed };
}

describe.skipIf(!FULL_TIER)('slow clients and SIGTERM', () => {
  it('cuts a body sent a byte at a time off with 408 at the body timeout', async () => {
    const service = await start({ REQUEST_BODY_TIMEOUT_MS: '1000' });
    const answer = await answeredWithin(slowBody(service.port, 200).answer, HANG_MS, 'a slow body');
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"error":"request_timeout"');
  }, 60_000);

  it('waits the shutdown timeout for slow clients on SIGTERM, then cuts them off and exits 1', async () => {
    const service = await start({ REQUEST_BODY_TIMEOUT_MS: '600000', SHUTDOWN_TIMEOUT_MS: '1000' });
    const clients = Array.from({ length: 5 }, () => slowBody(service.port, 500));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)));
    service.child.kill('SIGTERM');
    expect(await answeredWithin(exited, HANG_MS, 'the exit after SIGTERM')).toBe(1);
    expect(service.output()).toContain('cut off');
    for (const client of clients) await answeredWithin(client.answer, HANG_MS, 'a cut-off client');
  }, 60_000);
});
