// One loopback server for the ad-platform doubles, each under its own path prefix (the base URL a
// test gives the service). Each double answers from its platform's published reference; this file
// only carries requests to them and records what arrived, as the platform would have received it.

import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  /** The path and query, without the double's prefix. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body as it arrived: a DELETE sent without Content-Length arrives empty. */
  body: string;
}

export interface Answer { status: number; body: unknown }

export type Handler = (request: Received) => Answer;

export interface PlatformServer {
  url: string;
  close(): Promise<void>;
}

export async function startPlatformServer(handlers: Record<string, Handler>): Promise<PlatformServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      const prefix = Object.keys(handlers).find((p) => url.startsWith(`${p}/`));
      const answer: Answer = prefix
        ? handlers[prefix]!({ method: req.method ?? '', path: url.slice(prefix.length), headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
        : { status: 404, body: { error: 'no such double' } };
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** The JSON of a body, or undefined when it is not JSON. */
export function parsed(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;
