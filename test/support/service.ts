// The service as a child process (`node src/main.ts` through tsx) on a loopback port, for the tests
// that kill it (SIGKILL) and start it again on the same data; and its API called with a secret key.

import { type ChildProcess, spawn } from 'node:child_process';
import { eventually } from './faults.js';
import { freePort } from './ports.js';

export interface RunningService {
  port: number;
  child: ChildProcess;
  /** What it wrote to stdout and stderr so far. */
  output(): string;
  /** Sends `signal` and resolves once it exited. */
  stop(signal: 'SIGKILL' | 'SIGTERM'): Promise<void>;
}

/** Starts the service with `env` over this process's environment; resolves once /live answers. */
export async function startService(env: Record<string, string>): Promise<RunningService> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const stop = async (signal: 'SIGKILL' | 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  };
  const up = await eventually(() => fetch(`http://127.0.0.1:${port}/live`).then((r) => r.ok, () => false), 600);
  if (!up) {
    await stop('SIGKILL');
    throw new Error(`the service did not start:\n${output}`);
  }
  return { port, child, output: () => output, stop };
}

/** A call of the service's API with the secret key `key`: its status and JSON answer. */
export async function callService(port: number, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() as Record<string, unknown> };
}
