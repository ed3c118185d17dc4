// Retention: each workspace with `retention_days` loses its events and page views older than that,
// once a day (and at start), one process at a time per workspace (a lease). Criteria windows then
// read what is kept: `ever` means within the retention (docs/criteria.md).

import { randomUUID } from 'node:crypto';
import { LEASE_DEFAULTS, type LeaseOptions, withLease } from '../store/control/leases.js';
import { retentions } from '../store/control/privacy.js';
import type { Stores } from '../store/open.js';
import type { ErasedRows } from '../store/analytics.js';

export const RETENTION_EVERY_MS = 24 * 3600_000;
const DAY_MS = 86_400_000;

export class Retention {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<unknown> | null = null;
  private readonly holder = `retention:${process.pid}:${randomUUID()}`;

  constructor(
    private readonly stores: Stores,
    private readonly options: { clock: () => Date; lease?: LeaseOptions; onError?: (err: unknown) => void },
  ) {}

  start(everyMs = RETENTION_EVERY_MS): void {
    if (this.timer) return;
    const run = () => {
      if (!this.current) this.current = this.run().catch((err) => this.options.onError?.(err)).finally(() => { this.current = null; });
    };
    run();
    this.timer = setInterval(run, everyMs);
    this.timer.unref();
  }

  /** Erases what each workspace keeps no longer, as of now; the rows erased per workspace (absent: another process had it). */
  async run(): Promise<Map<string, ErasedRows>> {
    const now = this.options.clock();
    const erased = new Map<string, ErasedRows>();
    for (const { workspace_id: ws, retention_days: days } of await retentions(this.stores.control)) {
      const before = new Date(now.getTime() - days * DAY_MS);
      const done = await withLease(this.stores.control, `retention:${ws}`, this.holder, this.options.lease ?? LEASE_DEFAULTS,
        () => this.stores.analytics.eraseBefore(ws, before));
      if (done) erased.set(ws, done.value);
    }
    return erased;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.current;
  }
}
