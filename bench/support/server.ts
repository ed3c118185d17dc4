// The service in a process of its own for the HTTP benchmarks (clients in the same thread would
// take the server's CPU), on a free loopback port; and the percentile the benchmarks report.

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';

export const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

/** Starts `entry` (src/main.ts, or a bench server) through tsx with `env` and PORT, and waits for /health. */
export async function startServer(entry: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<{ server: ChildProcess; base: string }> {
  const port = await freePort();
  const server = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', entry], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let up = false; !up;) {
    if (server.exitCode !== null) throw new Error(`server exited with ${server.exitCode}`);
    up = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (!up) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { server, base };
}

/** The `p` quantile (0..1) of `values`, NaN when there are none. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** Connections kept open across requests, as many as a bench keeps in flight. */
const keepAlive = new Agent({ keepAlive: true, maxSockets: 4096 });

/**
 * POSTs `body` with node:http on kept-alive connections; the status and the response's text. The
 * benches' clients share the server's two cores, and fetch (undici) spent several times node:http's
 * CPU per notification, so fetch measured itself (bench/RESULTS.md, "Attribution").
 */
export function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: keepAlive, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** CPU seconds (user + system, every thread) process `pid` has used, from /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
