// Delivery to destinations, converging: a delivery brings a destination from what it has
// acknowledged to its snapshot (AnalyticsStore.startDelivery), so changes it missed while
// failing go out with the next one. At least once: a pending delivery is written with its snapshot
// (same transaction), pages are acknowledged one by one, and a restart resumes at the next page. One
// run per destination at a time; destinations never wait for each other, only for a request slot
// (slots.ts), in this process and across the processes sharing the control store (a lease per
// destination: a node killed mid-delivery leaves it to another once the lease expires, which resumes
// at the first unacknowledged page). Every HTTP attempt is logged. stop() aborts requests and backoff
// sleeps at once. Ad platforms get only the members their consent allows (consent.ts); after its
// deliveries, each ad platform's run sends the changes of consent since (the consent pass).

import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { getAudience, pendingDeliveries, recordAttempt } from '../store/control/audiences.js';
import { type HeldLease, LEASE_DEFAULTS, type LeaseOptions, withLease } from '../store/control/leases.js';
import type { Stores } from '../store/open.js';
import type { SplitRoute } from '../criteria/index.js';
import type { DeliveryRow } from '../store/types.js';
import { byStatus, type DeliveryContext, type Driver, type DriverConfig, type HttpRequest, type HttpResponse, type Send } from './destinations/driver.js';
import { googleDriver } from './destinations/google.js';
import { DestinationClient, RequestFailed } from './destinations/http.js';
import { metaDriver } from './destinations/meta.js';
import { AccessTokens } from './destinations/oauth.js';
import { type AdPlatform, type Destination, type DestinationType, isAdPlatform } from './destinations/schema.js';
import { webhookDriver } from './destinations/webhook.js';
import { storedDestinations } from './resource.js';
import { Slots } from './slots.js';
import { type SplitRouting, splitRoute, splitRouting } from './splits.js';
import { withDepartures } from '../privacy/departures.js';
import { screenPage, sendConsentChanges } from './consent.js';

const DRIVERS: { [T in DestinationType]: Driver<Extract<Destination, { type: T }>> } = {
  webhook: webhookDriver,
  meta_custom_audience: metaDriver,
  google_customer_match: googleDriver,
};

export interface DeliveryConfig extends DriverConfig {
  clock: () => Date;
  /** Attempts per request before giving up. */
  maxTries: number;
  /** First retry delay; doubled per attempt, capped at backoffMaxMs, with jitter. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** One request's time limit, connect to the last byte of the answer (DELIVERY_TIMEOUT_MS). */
  requestTimeoutMs: number;
  /**
   * Destinations (webhook URLs and the platforms' base URLs) may be loopback, private, link-local
   * or metadata addresses: ALLOW_PRIVATE_DESTINATIONS, for local development and tests. Off unless set.
   */
  allowPrivateDestinations?: boolean;
  /** Requests open at once, all destinations together. */
  maxConcurrentRequests: number;
  /** The lease a destination's deliveries are made under (LEASE_DEFAULTS unless given). */
  lease?: LeaseOptions;
  /** Requests open at once for one workspace's destinations (a share of maxConcurrentRequests). */
  maxConcurrentRequestsPerWorkspace: number;
  /** Time limit of making a delivery's work list (its snapshot against what the destination acknowledged). */
  startLimitMs: number;
  onError?: (err: unknown) => void;
}

/** Where a delivery's attempts are logged. */
type LoggedAs = Pick<DeliveryRow, 'workspace_id' | 'delivery_id' | 'destination_id'>;

/** The page number of the consent pass's attempts, logged on the destination's latest delivery. */
export const CONSENT_PASS_PAGE = -1;

/** The service is stopping, or the lease was lost: the delivery stays pending and resumes later (here or elsewhere). */
class Stopped extends Error {}

/** The delivery of the latest snapshot (the latest queued among equals). */
const latest = (deliveries: DeliveryRow[]) => deliveries.reduce((a, b) =>
  (b.snapshot_id > a.snapshot_id || (b.snapshot_id === a.snapshot_id && b.delivery_id > a.delivery_id) ? b : a));

export class Deliverer {
  /** The run under way per destination (`audience/destination`): runs of one destination are chained. */
  private readonly runs = new Map<string, Promise<void>>();
  /** Destinations asked to deliver while their run was under way: the run looks again before it ends. */
  private readonly again = new Set<string>();
  private readonly calls = new Set<Promise<void>>();
  private readonly client: DestinationClient;
  private readonly slots: Slots;
  /** Aborted by stop(): requests in flight, backoff sleeps and waits for a slot end at once. */
  private readonly stopping = new AbortController();
  /** This process in the leases table (its pid, for whoever looks at a lease held by a dead node). */
  private readonly holder = `deliverer:${process.pid}:${randomUUID()}`;
  /** Google access tokens, shared by this process's deliveries. */
  private readonly tokens: AccessTokens;

  constructor(private readonly stores: Stores, private readonly config: DeliveryConfig) {
    this.client = new DestinationClient({ timeoutMs: config.requestTimeoutMs, allowPrivate: config.allowPrivateDestinations ?? false });
    this.slots = new Slots(config.maxConcurrentRequests, config.maxConcurrentRequestsPerWorkspace);
    this.tokens = new AccessTokens(config.clock);
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** Delivers the audience's pending deliveries, each destination on its own. */
  deliver(ws: string, audienceId: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const call = this.deliverPending(ws, audienceId).catch((err) => this.config.onError?.(err));
    this.calls.add(call);
    void call.finally(() => this.calls.delete(call));
    return call;
  }

  /** Resolves when every delivery under way has finished or paused. */
  async idle(): Promise<void> {
    while (this.calls.size > 0) await Promise.all(this.calls);
  }

  /**
   * Aborts requests in flight and backoff sleeps, and waits for the runs to notice: their
   * deliveries stay pending, the page in flight unacknowledged, and resume at the next start.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.idle();
  }

  /** The destinations with a pending delivery, and every ad platform of the audience (for its consent pass). */
  private async deliverPending(ws: string, audienceId: string): Promise<void> {
    const destinationIds = new Set((await pendingDeliveries(this.stores.control, ws, audienceId)).map((d) => d.destination_id));
    const audience = await getAudience(this.stores.control, ws, audienceId);
    for (const d of audience ? storedDestinations(audience) : []) if (isAdPlatform(d)) destinationIds.add(d.id);
    await Promise.all([...destinationIds].map((destinationId) => this.chain(ws, audienceId, destinationId)));
  }

  /** One run per destination at a time; a call while it runs makes it look for new deliveries before it ends. */
  private chain(ws: string, audienceId: string, destinationId: string): Promise<void> {
    const key = `${audienceId}/${destinationId}`;
    const running = this.runs.get(key);
    if (running) {
      this.again.add(key);
      return running;
    }
    const run = (async () => {
      do {
        this.again.delete(key);
        // Another process delivering to this destination keeps going until it has nothing pending.
        const ran = await withLease(this.stores.control, `deliver:${key}`, this.holder, this.config.lease ?? LEASE_DEFAULTS,
          (lease) => this.run(ws, audienceId, destinationId, lease));
        if (!ran) return;
      } while (this.again.has(key) && !this.stopped);
    })().catch((err) => this.config.onError?.(err)).finally(() => this.runs.delete(key));
    this.runs.set(key, run);
    return run;
  }

  /**
   * Until the destination has no pending delivery: the one under way is resumed; otherwise the one
   * of the latest snapshot is started, superseding older ones whose changes it carries. Each ends
   * delivered, failed or canceled, or the run stops with the service. Then an ad platform's consent pass.
   */
  private async run(ws: string, audienceId: string, destinationId: string, lease: HeldLease): Promise<void> {
    while (!this.stopped && !lease.lost) {
      const audience = await getAudience(this.stores.control, ws, audienceId);
      if (!audience) return;
      const destination = storedDestinations(audience).find((d) => d.id === destinationId);
      const pending = (await pendingDeliveries(this.stores.control, ws, audienceId)).filter((d) => d.destination_id === destinationId);
      if (pending.length === 0) {
        if (destination && isAdPlatform(destination)) await this.consentPass(ws, audienceId, destination);
        return;
      }
      if (!destination) {
        for (const delivery of pending) await this.finish(delivery, 'canceled', 'the destination was removed from the audience');
        return;
      }
      const driver = DRIVERS[destination.type] as Driver<Destination>;
      const delivery = pending.find((d) => d.page_count !== null)
        ?? await this.start(latest(pending), driver.pageSize(destination, this.config), splitRoute(audience, destination.id));
      if (delivery) await this.deliverOne(destination, driver, delivery, lease, splitRouting(audience, destination.id));
    }
  }

  /** Sends the changes of consent since the destination's last delivery; a failure is logged and retried at the next run. */
  private async consentPass(ws: string, audienceId: string, destination: AdPlatform): Promise<void> {
    const key = { ws, audienceId, destinationId: destination.id };
    const context = (deliveryId: number) => this.context({ workspace_id: ws, delivery_id: deliveryId, destination_id: destination.id }, CONSENT_PASS_PAGE, 'consent: ');
    await sendConsentChanges(this.stores, key, destination, context).catch((err) => {
      if (!(err instanceof Stopped)) this.config.onError?.(err);
    });
  }

  /** Starts a delivery; one whose work list cannot be made fails (the next refresh queues another). */
  private async start(delivery: DeliveryRow, pageSize: number, route: SplitRoute | null): Promise<DeliveryRow | null> {
    try {
      return await this.stores.analytics.startDelivery(delivery, pageSize, this.config.clock(), this.config.startLimitMs, route);
    } catch (err) {
      await this.finish(delivery, 'failed', err instanceof Error ? err.message : String(err));
      return null;
    }
  }

  /**
   * Sends each page's members that `routing` routes to the destination, each with its split; a page
   * with none of them is acknowledged without a request.
   */
  private async deliverOne(destination: Destination, driver: Driver<Destination>, delivery: DeliveryRow, lease: HeldLease, routing: SplitRouting): Promise<void> {
    let { next_page: page, skipped } = delivery;
    try {
      for (; page < delivery.page_count!; page++) {
        if (lease.lost) throw new Stopped();
        const diff = await withDepartures(this.stores.control, delivery.workspace_id, routing(await this.stores.analytics.deliveryPage(delivery, page)));
        if (diff.length === 0) {
          await this.stores.analytics.acknowledgePage(delivery, page, skipped);
          continue;
        }
        const screened = isAdPlatform(destination)
          ? await screenPage(this.stores.control, { ws: delivery.workspace_id, audienceId: delivery.audience_id, destinationId: destination.id }, destination, diff)
          : null;
        const position = {
          workspaceId: delivery.workspace_id, deliveryId: delivery.delivery_id, pageSize: delivery.page_size!,
          added: delivery.added_count ?? 0, removed: delivery.removed_count ?? 0, filtered: routing.filtered,
        };
        const result = await driver.deliverPage(destination, {
          audienceId: delivery.audience_id, snapshotId: delivery.snapshot_id, page, members: screened?.members ?? diff, delivery: position,
          ...(screened ? { consent: screened.consent } : {}),
        }, this.context(delivery, page));
        await screened?.settle();
        skipped += result.skipped + (screened?.withheld ?? 0);
        await this.stores.analytics.acknowledgePage(delivery, page, skipped);
      }
      await this.finish(delivery, 'delivered', null);
    } catch (err) {
      if (err instanceof Stopped) return;
      await this.finish(delivery, 'failed', err instanceof Error ? err.message : String(err));
    }
  }

  private finish(delivery: DeliveryRow, status: Exclude<DeliveryRow['status'], 'pending'>, error: string | null): Promise<void> {
    return this.stores.analytics.finishDelivery(delivery, status, error, this.config.clock());
  }

  private context(delivery: LoggedAs, page: number, labelPrefix = ''): DeliveryContext {
    return {
      send: this.sender(delivery, page, labelPrefix),
      wait: (ms) => delay(ms, undefined, { signal: this.stopping.signal }).catch(() => {
        throw new Stopped();
      }),
      tokens: this.tokens,
      config: this.config,
    };
  }

  /**
   * Sends with retries on network errors, timeouts, 429, 5xx and what the platform's judge calls
   * throttling, logging each attempt; other 4xx and addresses the policy refuses give up at once.
   */
  private sender(delivery: LoggedAs, page: number, labelPrefix: string): Send {
    return async (build) => {
      let lastError = '';
      for (let attempt = 1; attempt <= this.config.maxTries; attempt++) {
        const now = this.config.clock();
        const built = await build(now);
        const request = labelPrefix ? { ...built, label: labelPrefix + built.label } : built;
        const outcome = await this.slots.run(delivery.workspace_id, this.stopping.signal, () => this.attempt(request)).catch((err) => {
          throw this.stopped ? new Stopped() : err;
        });
        // An attempt cut short by stop() is not the receiver's doing: not logged, and the page stays unacknowledged.
        if (this.stopped) throw new Stopped();
        const ok = outcome.response !== null && outcome.ok;
        await recordAttempt(this.stores.control, delivery.workspace_id, {
          delivery_id: delivery.delivery_id, page, request: request.label, attempt, ok,
          http_status: outcome.response?.status ?? null, error: outcome.error, attempted_at: now,
        });
        if (ok) return outcome.response!;
        lastError = outcome.error!;
        if (!outcome.retryable) break;
        if (attempt < this.config.maxTries) await delay(this.backoff(attempt), undefined, { signal: this.stopping.signal }).catch(() => {
          throw new Stopped();
        });
      }
      throw new Error(`gave up on ${delivery.destination_id}: ${lastError}`);
    };
  }

  /** One exchange, judged; an accepted answer's note (rows the platform refused) is logged as its error. */
  private async attempt(request: HttpRequest): Promise<{ response: HttpResponse | null; ok: boolean; error: string | null; retryable: boolean }> {
    try {
      const response = await this.client.send(request, this.stopping.signal);
      const verdict = (request.judge ?? byStatus)(response);
      return verdict.ok
        ? { response, ok: true, error: verdict.note ?? null, retryable: false }
        : { response, ok: false, error: verdict.error, retryable: verdict.retryable };
    } catch (err) {
      if (err instanceof RequestFailed) return { response: null, ok: false, error: err.message, retryable: err.retryable };
      // Not a failure of the exchange (a base URL that does not parse): retrying will not help.
      return { response: null, ok: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err), retryable: false };
    }
  }

  /** Exponential backoff with "equal jitter": half fixed, half random. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.config.backoffMaxMs, this.config.backoffBaseMs * 2 ** (attempt - 1));
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }
}
