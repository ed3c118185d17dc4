// Delivery of snapshot diffs to destinations: at least once and in order. A delivery row is written
// with its snapshot (same transaction), pages are acknowledged one by one, and a destination's next
// diff waits until the previous one is delivered or given up. Every HTTP attempt is logged.

import {
  advanceDelivery, type DeliveryRow, diffPage, getAudience, pendingDeliveries, recordAttempt,
} from '../store/audiences.js';
import type { Store } from '../store/db.js';
import { googleDriver, metaDriver } from './destinations/ads.js';
import type { Driver, DriverConfig, HttpRequest, Send } from './destinations/driver.js';
import type { Destination, DestinationType } from './destinations/schema.js';
import { webhookDriver } from './destinations/webhook.js';
import { storedDestinations } from './resource.js';

const DRIVERS: { [T in DestinationType]: Driver<Extract<Destination, { type: T }>> } = {
  webhook: webhookDriver,
  meta_custom_audience: metaDriver,
  google_customer_match: googleDriver,
};

export interface DeliveryConfig extends DriverConfig {
  fetch: typeof fetch;
  clock: () => Date;
  /** Attempts per request before giving up. */
  maxTries: number;
  /** First retry delay; doubled per attempt, capped at backoffMaxMs, with jitter. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  requestTimeoutMs: number;
  onError?: (err: unknown) => void;
}

/** The service is stopping: the delivery stays pending and resumes at the next start. */
class Stopped extends Error {}

const retryable = (status: number) => status === 429 || status >= 500;

export class Deliverer {
  private readonly active = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(private readonly store: Store, private readonly config: DeliveryConfig) {}

  /** Delivers the audience's pending diffs; runs for one audience are chained, never concurrent. */
  deliver(ws: string, audienceId: string): Promise<void> {
    const previous = this.active.get(audienceId) ?? Promise.resolve();
    const next = previous.then(() => this.run(ws, audienceId)).catch((err) => this.config.onError?.(err));
    this.active.set(audienceId, next);
    void next.finally(() => {
      if (this.active.get(audienceId) === next) this.active.delete(audienceId);
    });
    return next;
  }

  /** Resolves when every delivery under way has finished or paused. */
  async idle(): Promise<void> {
    while (this.active.size > 0) await Promise.all(this.active.values());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  private async run(ws: string, audienceId: string): Promise<void> {
    const audience = await getAudience(this.store, ws, audienceId);
    if (!audience) return;
    const destinations = new Map(storedDestinations(audience).map((d) => [d.id, d]));
    const byDestination = new Map<string, DeliveryRow[]>();
    for (const delivery of await pendingDeliveries(this.store, ws, audienceId)) {
      byDestination.set(delivery.destination_id, [...(byDestination.get(delivery.destination_id) ?? []), delivery]);
    }
    await Promise.all([...byDestination].map(async ([destinationId, deliveries]) => {
      for (const delivery of deliveries) {
        if (this.stopped) return;
        const destination = destinations.get(destinationId);
        if (!destination) {
          await this.finish(delivery, 'canceled', 'the destination was removed from the audience');
          continue;
        }
        await this.deliverOne(ws, destination, delivery);
      }
    }));
  }

  private async deliverOne(ws: string, destination: Destination, delivery: DeliveryRow): Promise<void> {
    const driver = DRIVERS[destination.type] as Driver<Destination>;
    let { next_page: page, skipped } = delivery;
    try {
      for (;;) {
        const members = await diffPage(this.store, ws, delivery.audience_id, delivery.snapshot_id, page, driver.pageSize);
        if (members.length === 0) break;
        const send = this.sender(delivery, page);
        const result = await driver.deliverPage(destination, { audienceId: delivery.audience_id, snapshotId: delivery.snapshot_id, page, members }, send, this.config);
        page++;
        skipped += result.skipped;
        await advanceDelivery(this.store, ws, delivery.delivery_id, { next_page: page, skipped });
        if (members.length < driver.pageSize) break;
      }
      await this.finish(delivery, 'delivered', null);
    } catch (err) {
      if (err instanceof Stopped) return;
      await this.finish(delivery, 'failed', err instanceof Error ? err.message : String(err));
    }
  }

  private finish(delivery: DeliveryRow, status: DeliveryRow['status'], error: string | null): Promise<void> {
    return advanceDelivery(this.store, delivery.workspace_id, delivery.delivery_id, { status, last_error: error, finished_at: this.config.clock() });
  }

  /** Sends with retries on network errors, 429 and 5xx, logging each attempt. */
  private sender(delivery: DeliveryRow, page: number): Send {
    return async (build) => {
      let lastError = '';
      for (let attempt = 1; attempt <= this.config.maxTries; attempt++) {
        if (this.stopped) throw new Stopped();
        const now = this.config.clock();
        const request = build(now);
        const outcome = await this.attempt(request);
        await recordAttempt(this.store, delivery.workspace_id, {
          delivery_id: delivery.delivery_id, page, request: request.label, attempt, ok: outcome.response?.ok ?? false,
          http_status: outcome.response?.status ?? null, error: outcome.error, attempted_at: now,
        });
        const { response } = outcome;
        if (response?.ok) return response;
        lastError = outcome.error ?? `HTTP ${response!.status}`;
        if (response && !retryable(response.status)) break;
        if (attempt < this.config.maxTries) await sleep(this.backoff(attempt));
      }
      throw new Error(`gave up on ${delivery.destination_id}: ${lastError}`);
    };
  }

  private async attempt(request: HttpRequest): Promise<{ response: Response | null; error: string | null }> {
    try {
      const response = await this.config.fetch(request.url, {
        method: request.method, headers: request.headers, body: request.body,
        signal: AbortSignal.timeout(this.config.requestTimeoutMs),
      });
      if (!response.ok) await response.arrayBuffer().catch(() => undefined);
      return { response, error: response.ok ? null : `HTTP ${response.status}` };
    } catch (err) {
      return { response: null, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
    }
  }

  /** Exponential backoff with "equal jitter": half fixed, half random. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.config.backoffMaxMs, this.config.backoffBaseMs * 2 ** (attempt - 1));
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
