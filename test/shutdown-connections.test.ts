// Closing the app ends every keep-alive connection it holds: one that never sent a request (a
// browser's preconnect) and one whose request was under way at the close, which still gets its
// answer. Node alone keeps both open for a minute or more (headersTimeout, keepAliveTimeout).

import { connect, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';

/** Far below Node's own cut-offs (60 s, 72 s): a connection left open fails the test by this guard, not by a timeout. */
const GUARD_MS = 20_000;

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stores.close();
  t = undefined;
});

async function open(origin: string): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  const { port, hostname } = new URL(origin);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  socket.on('data', (chunk: Buffer) => { text += chunk.toString(); });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => text, closed };
}

const within = <T>(work: Promise<T>, what: string) => Promise.race([
  work.then(() => 'done'),
  new Promise<string>((resolve) => setTimeout(() => resolve(`${what} still open after ${GUARD_MS} ms`), GUARD_MS).unref()),
]);

it('ends a connection that never sent a request, and one whose request was under way, and answers that request', async () => {
  t = await startTestApp();
  const origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const silent = await open(origin);
  const busy = await open(origin);
  // A request under way: its headers are in, half of its body is not.
  const body = JSON.stringify({ batch: [{ event_name: 'signup', user_id: 'u_1' }] });
  const received = new Promise((resolve) => t!.app.server.once('request', resolve));
  busy.socket.write(`POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.ws.secret_key}\r\n`
    + `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`);
  await received;
  const closed = t.app.close();
  // The server stops listening once the close has begun; the rest of the body comes after.
  await expect.poll(() => t!.app.server.listening).toBe(false);
  busy.socket.write(body.slice(10));
  expect(await within(closed, 'the app')).toBe('done');
  expect(await within(silent.closed, 'the silent connection')).toBe('done');
  expect(await within(busy.closed, 'the busy connection')).toBe('done');
  const answer = busy.received();
  expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  expect(answer.toLowerCase()).toContain('connection: close');
});
