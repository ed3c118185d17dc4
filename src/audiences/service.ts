// The audiences feature assembled: resource, refresher, deliverer and scheduler sharing one clock.

import { LEASE_DEFAULTS, type LeaseOptions } from '../store/control/leases.js';
import type { Stores } from '../store/open.js';
import { Deliverer, type DeliveryConfig } from './delivery.js';
import { PLATFORM_DEFAULTS } from './destinations/platforms.js';
import { Refresher } from './refresh.js';
import { AudienceResource } from './resource.js';
import { Scheduler } from './scheduler.js';

export interface AudienceServiceOptions {
  /** The refresh worker's own time limit (REFRESH_LIMIT_MS), larger than the estimate budget. */
  refreshLimitMs: number;
  schedulerIntervalMs: number;
  delivery: Omit<DeliveryConfig, 'clock' | 'onError'>;
  /** The leases of refreshes and deliveries across nodes (LEASE_DEFAULTS unless given). */
  lease?: LeaseOptions;
}

export const AUDIENCE_DEFAULTS: AudienceServiceOptions = {
  refreshLimitMs: 10 * 60_000,
  schedulerIntervalMs: 30_000,
  delivery: {
    maxTries: 6,
    backoffBaseMs: 1000,
    backoffMaxMs: 60_000,
    requestTimeoutMs: 10_000,
    webhookPageSize: 1000,
    maxConcurrentRequests: 16,
    maxConcurrentRequestsPerWorkspace: 4,
    startLimitMs: 10 * 60_000,
    ...PLATFORM_DEFAULTS,
  },
};

export interface AudienceService {
  resource: AudienceResource;
  refresher: Refresher;
  deliverer: Deliverer;
  scheduler: Scheduler;
}

export function createAudienceService(
  stores: Stores, clock: () => Date, onError: (err: unknown) => void, options: Partial<AudienceServiceOptions> = {},
): AudienceService {
  const lease = options.lease ?? LEASE_DEFAULTS;
  const delivery = { ...AUDIENCE_DEFAULTS.delivery, ...options.delivery, lease, clock, onError };
  const deliverer = new Deliverer(stores, delivery);
  const refresher = new Refresher(stores, options.refreshLimitMs ?? AUDIENCE_DEFAULTS.refreshLimitMs, lease);
  return {
    resource: new AudienceResource(stores, clock, { allowPrivateDestinations: delivery.allowPrivateDestinations ?? false }),
    refresher,
    deliverer,
    scheduler: new Scheduler(stores.control, refresher, deliverer, {
      clock, intervalMs: options.schedulerIntervalMs ?? AUDIENCE_DEFAULTS.schedulerIntervalMs, onError,
    }),
  };
}
