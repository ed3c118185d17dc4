// The refresh scheduler: every interval, refresh each due audience at the tick's time, then start
// delivering pending deliveries. Tests call tick(now) directly with their own clock.

import { audiencesWithPendingDeliveries, clearRefreshLeases, dueAudiences, resetInterruptedRefreshes } from '../store/control/audiences.js';
import type { ControlStore } from '../store/control/store.js';
import type { Deliverer } from './delivery.js';
import type { Refresher } from './refresh.js';

export interface SchedulerOptions {
  clock: () => Date;
  intervalMs: number;
  onError?: (err: unknown) => void;
}

export class Scheduler {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;
  /** start()'s first tick, which stop() waits for too. */
  private first: Promise<void> | null = null;

  constructor(
    private readonly store: ControlStore,
    private readonly refresher: Refresher,
    private readonly deliverer: Deliverer,
    private readonly options: SchedulerOptions,
  ) {}

  /** Starts ticking; the first tick at once, after the refresh leases of an earlier run of this database are gone (one process's file). */
  start(): void {
    if (this.timer) return;
    this.first = clearRefreshLeases(this.store).then(() => this.tick(this.options.clock())).catch((err) => this.options.onError?.(err));
    this.timer = setInterval(() => {
      // A tick still running (a long refresh, a destination backing off) is not doubled.
      if (!this.current) void this.tick(this.options.clock()).catch((err) => this.options.onError?.(err));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Refreshes the audiences due at `now`, one after another, then starts their deliveries (deliverer.idle() waits for them). */
  tick(now: Date = this.options.clock()): Promise<void> {
    const run = this.current ? this.current.then(() => this.run(now)) : this.run(now);
    const tracked = run.finally(() => {
      if (this.current === tracked) this.current = null;
    });
    this.current = tracked;
    return tracked;
  }

  private async run(now: Date): Promise<void> {
    // A refresh whose holder is gone would read `refreshing` forever: due again now.
    await resetInterruptedRefreshes(this.store, now);
    // Every node ticks; the refresher's lease and its due check make each due audience refresh once.
    const refreshed = new Map<string, string>();
    for (const { workspace_id, audience_id } of await dueAudiences(this.store, now)) {
      const outcome = await this.refresher.refreshIfDue(workspace_id, audience_id, now).catch((err) => this.options.onError?.(err));
      if (outcome?.ok) refreshed.set(audience_id, workspace_id);
    }
    // Deliveries go on in the background: a receiver that hangs or backs off never delays the
    // next tick's refreshes (the deliverer keeps one run per destination, in bounded request slots).
    // A refreshed audience's ad platforms run too, with nothing pending: their consent pass.
    for (const a of await audiencesWithPendingDeliveries(this.store)) refreshed.set(a.audience_id, a.workspace_id);
    for (const [audienceId, ws] of refreshed) void this.deliverer.deliver(ws, audienceId);
  }

  /**
   * Stops the timer, aborts deliveries under way (they stay pending and resume at the next start),
   * then waits for the tick: a refresh under way commits or rolls back.
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.refresher.stop();
    await this.deliverer.stop();
    await this.first;
    await this.current?.catch(() => undefined);
  }
}
