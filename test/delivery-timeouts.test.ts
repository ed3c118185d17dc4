// Receivers that accept the connection and never answer, or send headers and stall the body: each
// attempt ends at the request's time limit, is logged as failed and retried like a 503, and neither
// the receiver's own later diffs nor other destinations wait on it.

import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE_DEFAULTS } from '../src/audiences/service.js';
import type { AnalyticsEngine } from '../src/store/open.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { importRows } from './support/stored.js';

const AT = new Date('2026-06-15T12:00:00Z');
const signedUp = { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } };

type Behaviour = 'hang' | 'stall-body' | 'answer';
interface Page { snapshot_id: number; added: { external_id: string | null }[] }

/** A loopback webhook receiver whose n-th request (from 1) hangs, stalls its body or is answered. */
async function receiver(behave: (n: number) => Behaviour) {
  const state = {
    url: '',
    requests: 0,
    accepted: [] as Page[],
    /** Requests left hanging: released (answered 200) by release(). */
    hung: [] as { page: Page; res: ServerResponse }[],
    listeners: new Set<() => void>(),
    /** Resolves once `ready()` holds, checked at each request. */
    when(ready: () => boolean): Promise<void> {
      return new Promise((resolve) => {
        const check = () => {
          if (!ready()) return;
          state.listeners.delete(check);
          resolve();
        };
        state.listeners.add(check);
        check();
      });
    },
    release() {
      for (const { page, res } of state.hung.splice(0)) {
        state.accepted.push(page);
        res.writeHead(200).end('{}');
      }
    },
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => { raw += c.toString('utf8'); });
    req.on('end', () => {
      const page = JSON.parse(raw) as Page;
      const behaviour = behave(++state.requests);
      if (behaviour === 'hang') state.hung.push({ page, res });
      else if (behaviour === 'stall-body') res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' }).write('{"ok":');
      else {
        state.accepted.push(page);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
      for (const listener of [...state.listeners]) listener();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  return Object.assign(state, { close });
}

interface Attempt { ok: boolean; http_status: number | null; error: string | null }
interface Delivery { destination_id: string; snapshot_id: number; status: string; last_error: string | null; attempts: Attempt[] }

async function withApp(engine: AnalyticsEngine, requestTimeoutMs: number, body: (t: TestApp) => Promise<void>) {
  const t = await startTestApp({
    engine, at: AT,
    audiences: { delivery: { ...AUDIENCE_DEFAULTS.delivery, requestTimeoutMs, maxTries: 3, backoffBaseMs: 5, backoffMaxMs: 10 } },
  });
  try {
    await importRows(t, {
      persons: [{ person_id: 'p1', external_id: 'u_1', email: null, name: null, traits: null, created_at: AT }],
      events: [{ event_id: 'e1', event_name: 'signup', ts: AT, person_id: 'p1', visitor_id: null, properties: '{}' }],
    });
    await body(t);
  } finally {
    await t.close();
  }
}

const deliveries = async (t: TestApp, id: string) => (await t.app.inject({
  method: 'GET', url: `/v1/audiences/${id}/deliveries`, headers: { authorization: `Bearer ${t.ws.secret_key}` },
})).json().data as Delivery[];

async function createAudience(t: TestApp, urls: string[]) {
  const res = await t.post('/v1/audiences', {
    name: 'signups', criteria_json: signedUp, destinations: urls.map((url) => ({ type: 'webhook', url, secret: 'shh' })),
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; destinations: { id: string }[] };
}

/** A new member, then a refresh through the API: the next diff holds u_2 only. */
async function signUpAndRefresh(t: TestApp, id: string) {
  const events = await t.post('/v1/events', { batch: [{ event_name: 'signup', external_id: 'u_2' }] });
  expect(events.statusCode, events.body).toBe(200);
  const refreshed = await t.post(`/v1/audiences/${id}/refresh`, {});
  expect(refreshed.json()).toMatchObject({ status: 'ready', member_count: 2 });
}

const TIMED_OUT = { ok: false, http_status: null, error: expect.stringMatching(/^timeout: no complete answer within 150 ms$/) };
const ACCEPTED = { ok: true, http_status: 200, error: null };

describe.each(ENGINES)('%s: delivery request time limit', (engine) => {
  it('logs a receiver that accepts and never answers as a timed-out attempt, and retries it like a 503', () => withApp(engine, 150, async (t) => {
    const { url, accepted, close } = await receiver((n) => (n <= 2 ? 'hang' : 'answer'));
    try {
      const a = await createAudience(t, [url]);
      await t.app.audiences.scheduler.tick(AT);
      await t.app.audiences.deliverer.idle();
      const [delivery] = await deliveries(t, a.id);
      expect(delivery).toMatchObject({ status: 'delivered', last_error: null });
      expect(delivery!.attempts).toEqual([
        expect.objectContaining(TIMED_OUT), expect.objectContaining(TIMED_OUT), expect.objectContaining(ACCEPTED),
      ]);
      expect(accepted.map((p) => p.added.map((m) => m.external_id))).toEqual([['u_1']]);
    } finally {
      close();
    }
  }));

  it('times out a receiver that sends its headers and then stalls the body', () => withApp(engine, 150, async (t) => {
    const { url, accepted, close } = await receiver((n) => (n === 1 ? 'stall-body' : 'answer'));
    try {
      const a = await createAudience(t, [url]);
      await t.app.audiences.scheduler.tick(AT);
      await t.app.audiences.deliverer.idle();
      const [delivery] = await deliveries(t, a.id);
      expect(delivery).toMatchObject({ status: 'delivered' });
      expect(delivery!.attempts).toEqual([expect.objectContaining(TIMED_OUT), expect.objectContaining(ACCEPTED)]);
      expect(accepted).toHaveLength(1);
    } finally {
      close();
    }
  }));

  it('gives up a diff hung past every try; once the receiver answers, the next delivery carries the missed member too; another destination gets both diffs', () => withApp(engine, 150, async (t) => {
    let recovered = false;
    const hung = await receiver(() => (recovered ? 'answer' : 'hang'));
    const healthy = await receiver(() => 'answer');
    try {
      const a = await createAudience(t, [hung.url, healthy.url]);
      const [hungId, healthyId] = a.destinations.map((d) => d.id);
      await t.app.audiences.scheduler.tick(AT);
      await t.app.audiences.deliverer.idle();
      const first = await deliveries(t, a.id);
      expect(first.find((d) => d.destination_id === hungId)).toMatchObject({
        status: 'failed', last_error: expect.stringMatching(/timeout/), attempts: [TIMED_OUT, TIMED_OUT, TIMED_OUT].map((x) => expect.objectContaining(x)),
      });
      expect(first.find((d) => d.destination_id === healthyId)).toMatchObject({ status: 'delivered', attempts: [expect.objectContaining(ACCEPTED)] });

      recovered = true;
      await signUpAndRefresh(t, a.id);
      await t.app.audiences.deliverer.idle();
      expect(hung.accepted.map((p) => p.added.map((m) => m.external_id))).toEqual([['u_1', 'u_2']]);
      expect(healthy.accepted.map((p) => p.added.map((m) => m.external_id))).toEqual([['u_1'], ['u_2']]);
      const second = (await deliveries(t, a.id)).filter((d) => d.destination_id === hungId);
      expect(second.map((d) => d.status)).toEqual(['delivered', 'failed']);
    } finally {
      hung.close();
      healthy.close();
    }
  }));

  it("does not hold back another destination's later diffs while one receiver hangs", () => withApp(engine, 60_000, async (t) => {
    // The time limit is never reached here: the hung receiver is released by the test.
    let released = false;
    const hung = await receiver(() => (released ? 'answer' : 'hang'));
    const healthy = await receiver(() => 'answer');
    try {
      const a = await createAudience(t, [hung.url, healthy.url]);
      expect((await t.post(`/v1/audiences/${a.id}/refresh`, {})).json()).toMatchObject({ status: 'ready' });
      await hung.when(() => hung.hung.length === 1);
      await healthy.when(() => healthy.accepted.length === 1);

      // The second diff reaches the healthy destination while the first still hangs on the other.
      await signUpAndRefresh(t, a.id);
      await healthy.when(() => healthy.accepted.length === 2);
      expect(healthy.accepted.map((p) => p.added.map((m) => m.external_id))).toEqual([['u_1'], ['u_2']]);
      expect(hung.requests).toBe(1);
      expect(hung.accepted).toEqual([]);

      // Released, the hung destination gets its diffs in order.
      released = true;
      hung.release();
      await t.app.audiences.deliverer.idle();
      expect(hung.accepted.map((p) => p.added.map((m) => m.external_id))).toEqual([['u_1'], ['u_2']]);
      expect((await deliveries(t, a.id)).map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    } finally {
      hung.close();
      healthy.close();
    }
  }), 20_000);
  it('lets a scheduler tick end while a receiver hangs, so the next tick still refreshes the audiences due', () => withApp(engine, 60_000, async (t) => {
    let released = false;
    const hung = await receiver(() => (released ? 'answer' : 'hang'));
    try {
      const a = await createAudience(t, [hung.url]);
      await t.app.audiences.scheduler.tick(AT);
      await hung.when(() => hung.hung.length === 1);
      expect((await deliveries(t, a.id)).map((d) => d.status)).toEqual(['pending']);

      const later = new Date(AT.getTime() + 2 * 3600_000);
      await t.post('/v1/events', { batch: [{ event_name: 'signup', external_id: 'u_2' }] });
      await t.app.audiences.scheduler.tick(later);
      const audience = (await t.app.inject({ method: 'GET', url: `/v1/audiences/${a.id}`, headers: { authorization: `Bearer ${t.ws.secret_key}` } })).json();
      expect(audience).toMatchObject({ status: 'ready', member_count: 2 });
      expect(hung.requests).toBe(1);
      released = true;
      hung.release();
      await t.app.audiences.deliverer.idle();
      expect(hung.accepted.map((p) => p.added.map((m) => m.external_id))).toEqual([['u_1'], ['u_2']]);
    } finally {
      hung.close();
    }
  }), 20_000);
});
