// A loopback webhook receiver for delivery tests. It answers each request as `mode` says at that
// moment (or holds it open), keeps the pages it accepted, and rebuilds the membership it was told
// about by applying them in order, as a real receiver would.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Mode = 'answer' | 'fail' | 'hang';

export interface Member { person_id: string | null; visitor_id: string | null; external_id: string | null; email: string | null }
export interface Page { audience_id: string; snapshot_id: number; page: number; added: Member[]; removed: Member[] }

export interface Receiver {
  url: string;
  mode: Mode | ((n: number) => Mode);
  /** Requests seen, whatever their answer. */
  requests: number;
  accepted: Page[];
  /** Requests held open ('hang'), with their page. */
  held: { page: Page; req: IncomingMessage; res: ServerResponse }[];
  /** Most requests open at the same time. */
  maxOpen: number;
  /** The members the receiver has: the accepted pages applied in order (by person_id). */
  members(): string[];
  /** Resolves once `ready()` holds; checked at each request. */
  when(ready: () => boolean): Promise<void>;
  /** Answers the held requests 200, accepting their pages. */
  release(): void;
  close(): void;
}

export async function startReceiver(mode: Receiver['mode'] = 'answer'): Promise<Receiver> {
  const listeners = new Set<() => void>();
  let open = 0;
  const state: Receiver = {
    url: '',
    mode,
    requests: 0,
    accepted: [],
    held: [],
    maxOpen: 0,
    members() {
      const has = new Set<string>();
      for (const page of state.accepted) {
        for (const m of page.added) has.add(m.person_id ?? `visitor:${m.visitor_id}`);
        for (const m of page.removed) has.delete(m.person_id ?? `visitor:${m.visitor_id}`);
      }
      return [...has].sort();
    },
    when(ready) {
      return new Promise((resolve) => {
        const check = () => {
          if (!ready()) return;
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
        check();
      });
    },
    release() {
      for (const { page, res } of state.held.splice(0)) {
        state.accepted.push(page);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
  const server = createServer((req, res) => {
    open++;
    state.maxOpen = Math.max(state.maxOpen, open);
    res.on('close', () => { open--; });
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c.toString('utf8'); });
    req.on('end', () => {
      const page = JSON.parse(raw) as Page;
      const n = ++state.requests;
      const behaviour = typeof state.mode === 'function' ? state.mode(n) : state.mode;
      if (behaviour === 'hang') state.held.push({ page, req, res });
      else if (behaviour === 'fail') res.writeHead(503).end('busy');
      else {
        state.accepted.push(page);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
      for (const listener of [...listeners]) listener();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return state;
}
