// The merge finisher: merges left pending by a process stopped after their first step (people/merge.ts)
// are finished at start and on every tick, by whichever process takes their lease once the
// stopped holder's has expired. Shaped as the privacy worker's resumption (privacy/worker.ts).

import { randomUUID } from 'node:crypto';
import { LEASE_DEFAULTS, type LeaseOptions } from '../store/control/leases.js';
import { pendingMerges } from '../store/control/merges.js';
import type { Stores } from '../store/open.js';
import { finishMerge } from './merge.js';

/** Pending merges taken up per tick, oldest first (any left wait for the next). */
const PER_TICK = 100;

export interface MergeFinisherOptions {
  intervalMs: number;
  lease?: LeaseOptions;
  onError?: (err: unknown) => void;
}

export class MergeFinisher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly holder = `merges:${process.pid}:${randomUUID()}`;

  constructor(private readonly stores: Stores, private readonly options: MergeFinisherOptions) {}

  /** Ticks now (merges a stopped process left resume at start) and every interval. */
  start(): void {
    if (this.timer) return;
    const tick = () => void this.tick().catch((err) => this.options.onError?.(err));
    this.timer = setInterval(tick, this.options.intervalMs);
    this.timer.unref();
    tick();
  }

  /** Finishes the pending merges whose lease is free; one pass at a time (a tick during one waits for it). */
  tick(): Promise<void> {
    this.running ??= this.pass().finally(() => { this.running = null; });
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private async pass(): Promise<void> {
    const lease = this.options.lease ?? LEASE_DEFAULTS;
    for (const merge of await pendingMerges(this.stores.control, PER_TICK)) {
      // One merge failing (its engine down) leaves it pending for the next tick; the others go on.
      await finishMerge(this.stores, merge, this.holder, lease).catch((err: unknown) => this.options.onError?.(err));
    }
  }
}
