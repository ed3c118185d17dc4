// The privacy feature assembled: the worker of requests and the retention job, sharing one clock;
// with them the finisher of person merges left pending (§12's other background work).

import type { LeaseOptions } from '../store/control/leases.js';
import { MergeFinisher } from '../people/finisher.js';
import type { Stores } from '../store/open.js';
import { Retention } from './retention.js';
import { type PrivacyLog, PrivacyWorker } from './worker.js';

export interface PrivacyService {
  worker: PrivacyWorker;
  retention: Retention;
  merges: MergeFinisher;
  start(): void;
  stop(): Promise<void>;
}

export const PRIVACY_INTERVAL_MS = 10_000;

/** `lease`: how long a killed process's lease holds its workspaces' requests (LEASE_TTL_MS, as refreshes). */
export function createPrivacyService(
  stores: Stores, clock: () => Date, log: PrivacyLog, intervalMs = PRIVACY_INTERVAL_MS, lease?: LeaseOptions,
): PrivacyService {
  const worker = new PrivacyWorker(stores, { clock, intervalMs, log, lease });
  const retention = new Retention(stores, { clock, onError: (err) => log.error({ err }, 'retention failed'), lease });
  const merges = new MergeFinisher(stores, { intervalMs, onError: (err) => log.error({ err }, 'finishing a pending merge failed'), lease });
  return {
    worker,
    retention,
    merges,
    start: () => {
      worker.start();
      retention.start();
      merges.start();
    },
    stop: async () => {
      await worker.stop();
      await retention.stop();
      await merges.stop();
    },
  };
}
