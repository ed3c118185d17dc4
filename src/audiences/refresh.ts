// One refresh of an audience: the criteria evaluated at the refresh time, a new snapshot and its
// diff written at once (AnalyticsStore.refresh). One refresh at a time per audience, across every
// process sharing the control store (a lease per audience).

import { planCriteria, validateCriteria } from '../criteria/index.js';
import { AppError } from '../errors.js';
import type { SnapshotResult } from '../store/types.js';
import { randomUUID } from 'node:crypto';
import { getAudience, isDue, refreshLeaseName, updateAudience } from '../store/control/audiences.js';
import { LEASE_DEFAULTS, type LeaseOptions, withLease } from '../store/control/leases.js';
import type { Stores } from '../store/open.js';
import { storedDestinations } from './resource.js';

export type RefreshOutcome = { ok: true; snapshot: SnapshotResult } | { ok: false; error: string };

export class Refresher {
  /** This process's refreshes; the lease keeps other processes' out. */
  private readonly running = new Set<string>();
  /** Aborted by stop(): a refresh under way is interrupted and rolled back, and stays due. */
  private readonly stopping = new AbortController();
  private readonly holder = `refresher:${process.pid}:${randomUUID()}`;

  constructor(private readonly stores: Stores, private readonly limitMs: number, private readonly lease: LeaseOptions = LEASE_DEFAULTS) {}

  /** The service is stopping: interrupt the refreshes under way rather than wait up to the limit. */
  stop(): void {
    this.stopping.abort();
  }

  /** Refreshes at `at`; a failure marks the audience failed and leaves it due, so the next tick retries. */
  async refresh(ws: string, audienceId: string, at: Date): Promise<RefreshOutcome> {
    const done = await this.leased(audienceId, () => this.run(ws, audienceId, at));
    if (!done) throw new AppError('conflict', 'a refresh of this audience is already running');
    return done.value;
  }

  /**
   * The scheduler's refresh: only when no process refreshes the audience and it is still due (a
   * node that read the due list before another refreshed it does not refresh it again); null otherwise.
   */
  async refreshIfDue(ws: string, audienceId: string, at: Date): Promise<RefreshOutcome | null> {
    const done = await this.leased(audienceId, async () => (await isDue(this.stores.control, ws, audienceId, at) ? this.run(ws, audienceId, at) : null));
    return done?.value ?? null;
  }

  private async leased<T>(audienceId: string, work: () => Promise<T>): Promise<{ value: T } | null> {
    if (this.running.has(audienceId)) return null;
    this.running.add(audienceId);
    try {
      return await withLease(this.stores.control, refreshLeaseName(audienceId), this.holder, this.lease, work);
    } finally {
      this.running.delete(audienceId);
    }
  }

  private async run(ws: string, audienceId: string, at: Date): Promise<RefreshOutcome> {
    const { control, analytics } = this.stores;
    const row = await getAudience(control, ws, audienceId);
    if (!row) throw new AppError('not_found', `no audience ${audienceId}`);
    await updateAudience(control, ws, audienceId, { status: 'refreshing' });
    try {
      const validation = validateCriteria(JSON.parse(row.criteria), await analytics.propertyCatalog(ws));
      if (!validation.ok) throw new Error(`the criteria are no longer valid: ${validation.errors[0]!.message}`);
      const snapshot = await analytics.refresh({
        ws,
        audienceId,
        at,
        nextRefreshAt: new Date(at.getTime() + row.refresh_every_ms),
        plan: planCriteria(validation.criteria, at),
        destinationIds: storedDestinations(row).map((d) => d.id),
        limitMs: this.limitMs,
        signal: this.stopping.signal,
      });
      return { ok: true, snapshot };
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      await updateAudience(control, ws, audienceId, { status: 'failed', last_error: error, next_refresh_at: at });
      return { ok: false, error };
    }
  }
}
