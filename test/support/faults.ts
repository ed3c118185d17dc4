// What the fault tests (test/faults-*.test.ts) share: a client that sends events as a real one
// would (keeping what was acknowledged, sending again what was refused), the shape every outage
// answer must have, and waits that fail instead of hanging.

import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

/** `answer`, or a failure once `ms` have passed: a dependency that stops answering must not hold a request. */
export async function answeredWithin<T>(answer: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([answer, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every 100 ms until it holds, `tries` times at most; whether it held. */
export async function eventually(check: () => Promise<boolean>, tries = 300): Promise<boolean> {
  for (let n = 0; n < tries; n++) {
    if (await check()) return true;
    await sleep(100);
  }
  return false;
}

/** An outage answer: 503, a code saying so, a Retry-After; never a 500. */
export function expectOutage(res: LightMyRequestResponse, dependency?: string): void {
  expect(res.statusCode, res.body).toBe(503);
  const body = res.json() as { error: string; dependency?: string };
  expect(['unavailable', 'analytics_delayed']).toContain(body.error);
  if (dependency && body.error === 'unavailable') expect(body.dependency).toBe(dependency);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
}

/** Events sent by message id; what was acknowledged and what was refused (to send again). */
export class EventClient {
  readonly acknowledged = new Set<string>();
  readonly refused = new Set<string>();

  constructor(private readonly app: FastifyInstance, private readonly key: string, private readonly boundMs: number) {}

  /** Sends one event; true when acknowledged, false when refused with an outage answer. */
  async send(id: string, dependency?: string): Promise<boolean> {
    const res = await answeredWithin(this.app.inject({
      method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${this.key}` },
      payload: { batch: [{ event_name: 'fault', user_id: `u_${id}`, message_id: id }] },
    }), this.boundMs, `POST /v1/events ${id}`);
    if (res.statusCode === 200) {
      this.acknowledged.add(id);
      this.refused.delete(id);
      return true;
    }
    expectOutage(res, dependency);
    this.refused.add(id);
    return false;
  }

  /** Sends again every refused event, as a client honouring Retry-After does. */
  async resend(): Promise<void> {
    for (const id of [...this.refused]) await this.send(id);
    expect([...this.refused]).toEqual([]);
  }
}

/** /health's status and which stores it names down. */
export async function health(app: FastifyInstance, boundMs: number): Promise<{ status: number; down: string[] }> {
  const res = await answeredWithin(app.inject({ method: 'GET', url: '/health' }), boundMs, 'GET /health');
  if (res.statusCode === 503) expect(res.headers['retry-after']).toBeDefined();
  const stores = (res.json() as { stores: Record<string, string> }).stores;
  return { status: res.statusCode, down: Object.entries(stores).filter(([, s]) => s !== 'ok').map(([name]) => name) };
}

/** Waits for /health 200, then sends what was refused and `more` new events, each acknowledged; the time to recover. */
export async function recover(app: FastifyInstance, client: EventClient, name: string, more: number, boundMs: number): Promise<number> {
  const start = performance.now();
  expect(await eventually(async () => (await health(app, boundMs)).status === 200)).toBe(true);
  const recovered = performance.now() - start;
  await client.resend();
  for (let n = 0; n < more; n++) expect(await client.send(`${name}_${n}`)).toBe(true);
  return recovered;
}
