// Leases: a named piece of work (an audience's refresh, a destination's deliveries) done by one
// holder at a time across every process sharing the control store. A lease expires unless its
// holder renews it, so a process killed mid-work holds nothing for longer than the lease's time.
// Expiry is by the holders' wall clocks: keep the nodes' clocks in sync (NTP).

import type { ControlSql, ControlStore } from './store.js';

export interface LeaseOptions {
  /** How long a lease lasts without renewal. */
  ttlMs: number;
  /** How often a held lease is renewed (well under ttlMs). */
  renewEveryMs: number;
}

export const LEASE_DEFAULTS: LeaseOptions = { ttlMs: 30_000, renewEveryMs: 10_000 };

/** A lease of `ttlMs`, renewed three times in that time. */
export const leaseOf = (ttlMs: number): LeaseOptions => ({ ttlMs, renewEveryMs: Math.max(100, Math.floor(ttlMs / 3)) });

/** Takes `name` for `holder` when it is free, expired, or already the holder's. */
export function takeLease(store: ControlStore, name: string, holder: string, ttlMs: number): Promise<boolean> {
  return store.transaction((tx) => takeLeaseIn(tx, name, holder, ttlMs));
}

/** takeLease inside a transaction: the lease is held once it commits (work recorded with its holder). */
export async function takeLeaseIn(tx: ControlSql, name: string, holder: string, ttlMs: number): Promise<boolean> {
  const now = Date.now();
  const rows = await tx.all(`INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3)
    ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
    WHERE leases.expires_at <= $4 OR leases.holder = excluded.holder
    RETURNING holder`, [name, holder, new Date(now + ttlMs), new Date(now)]);
  return rows.length === 1;
}

/** Extends a lease still held by `holder`; false when it was lost (expired and taken by another). */
export async function renewLease(store: ControlStore, name: string, holder: string, ttlMs: number): Promise<boolean> {
  return (await store.run('UPDATE leases SET expires_at = $1 WHERE name = $2 AND holder = $3', [new Date(Date.now() + ttlMs), name, holder])) === 1;
}

export async function releaseLease(store: ControlStore, name: string, holder: string): Promise<void> {
  await store.run('DELETE FROM leases WHERE name = $1 AND holder = $2', [name, holder]);
}

/** A lease being held: renewed in the background until released; `lost` once a renewal failed. */
export interface HeldLease {
  readonly lost: boolean;
}

/**
 * Runs `work` under the lease `name`, renewed while it runs and released after; null (and `work`
 * not run) when another holder has it.
 */
export async function withLease<T>(
  store: ControlStore, name: string, holder: string, options: LeaseOptions, work: (lease: HeldLease) => Promise<T>,
): Promise<{ value: T } | null> {
  if (!(await takeLease(store, name, holder, options.ttlMs))) return null;
  const lease = { lost: false };
  const timer = setInterval(() => {
    void renewLease(store, name, holder, options.ttlMs).then((held) => {
      if (!held) lease.lost = true;
    }, () => undefined);
  }, options.renewEveryMs);
  timer.unref();
  try {
    return { value: await work(lease) };
  } finally {
    clearInterval(timer);
    // A lease lost meanwhile is another holder's now: the holder condition leaves it alone.
    await releaseLease(store, name, holder).catch(() => undefined);
  }
}
