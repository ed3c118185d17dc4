// The privacy worker: every tick (and when a request arrives), each workspace with unfinished
// requests is worked on by one process (a lease per workspace), its waiting requests a batch a
// pass (the oldest BATCH_REQUESTS; the next batch right after): suppression lists first, in the
// order asked; then the deletes together. A delete is
// resumable: its identifiers are first replaced by the keys they reach (one transaction), then the
// control rows go (persons, visitors, the payers' identities), then the analytical rows, and the
// requests are done only once no such row is left. A process killed anywhere leaves the requests
// running with their lease expiring: the next tick, here or on another node, does the rest again
// (each step finds what is left and is harmless when nothing is). A request whose passes keep
// failing (or keep being killed) ends `failed` with the error after MAX_ATTEMPTS passes. Every
// failure is logged with its requests; one that lost to concurrent ingest is tried again at once.

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LEASE_DEFAULTS, type LeaseOptions, withLease } from '../store/control/leases.js';
import {
  clearDepartures, type ErasedKeys, eraseControlRows, finishRequests, type Identifier, type IdentifierKind, markRunning, type PrivacyRequestRow,
  recordErasedRows, recordResolved, requestItems, resolveErased, suppress, unfinishedRequests, unsuppress, workspacesWithUnfinished,
} from '../store/control/privacy.js';
import type { ErasedRows } from '../store/analytics.js';
import type { Stores } from '../store/open.js';
import { isTransient, PASS_RETRIES, retryDelayMs } from './retry.js';
import { suppressionsChanged } from './suppression.js';

/** What a failure is told with: the error, and for a pass its workspace, requests and whether it is tried again. */
export interface PrivacyLogFields {
  err: unknown;
  workspace_id?: string;
  request_ids?: string[];
  retry?: boolean;
}

/** Where failures are told: the app's logger (pino's signature). */
export interface PrivacyLog {
  error(fields: PrivacyLogFields, msg: string): void;
  warn(fields: PrivacyLogFields, msg: string): void;
}

export interface PrivacyWorkerOptions {
  clock: () => Date;
  intervalMs: number;
  lease?: LeaseOptions;
  log?: PrivacyLog;
  /** The requests a pass takes at most, oldest first (BATCH_REQUESTS unless given). */
  batchRequests?: number;
}

const DELETES = new Set(['delete', 'suppress_and_delete']);

/** Passes a request is taken up by before it ends `failed`. */
export const MAX_ATTEMPTS = 5;

/**
 * Requests of a workspace one pass takes: up to 100,000 identifiers (5,000 a request), so a pass's
 * keys stay a bounded parameter and its mutations bounded; the next batch is taken right after.
 */
export const BATCH_REQUESTS = 20;

/** An error as a request shows it: its first line, short. */
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);

export class PrivacyWorker {
  private timer: NodeJS.Timeout | null = null;
  private readonly running = new Map<string, Promise<void>>();
  private readonly holder = `privacy:${process.pid}:${randomUUID()}`;
  private readonly batch: number;

  constructor(private readonly stores: Stores, private readonly options: PrivacyWorkerOptions) {
    this.batch = options.batchRequests ?? BATCH_REQUESTS;
  }

  /** Ticks now (requests a stopped process left resume at start) and every interval. */
  start(): void {
    if (this.timer) return;
    const tick = () => void this.tick().catch((err: unknown) => this.options.log?.error({ err }, 'privacy worker tick failed'));
    this.timer = setInterval(tick, this.options.intervalMs);
    this.timer.unref();
    tick();
  }

  /** Works on every workspace with unfinished requests; resolves when those passes end. */
  async tick(): Promise<void> {
    await Promise.all((await workspacesWithUnfinished(this.stores.control)).map((ws) => this.kick(ws)));
    await clearDepartures(this.stores.control);
  }

  /**
   * Works on the workspace's requests now, a batch a pass until none is waiting, unless passes of
   * this process are under way (they are then waited for). A failed pass ends it: the next tick
   * takes its requests up again.
   */
  kick(ws: string): Promise<void> {
    let work = this.running.get(ws);
    if (!work) {
      work = this.drain(ws).finally(() => this.running.delete(ws));
      this.running.set(ws, work);
    }
    return work;
  }

  /** Waits for the passes under way. */
  async idle(): Promise<void> {
    await Promise.all([...this.running.values()]);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.idle();
  }

  private async drain(ws: string): Promise<void> {
    // A pass's failure is logged where it happened.
    while (await this.pass(ws).catch(() => 0) === this.batch);
  }

  /** One pass over the oldest waiting requests: how many it took (0: none, or another process has the workspace). */
  private async pass(ws: string): Promise<number> {
    const control = this.stores.control;
    const held = await withLease(control, `privacy:${ws}`, this.holder, this.options.lease ?? LEASE_DEFAULTS, async () => {
      const unfinished = await unfinishedRequests(control, ws, this.batch);
      // Taken up MAX_ATTEMPTS times and never finished: the passes were killed before they could say why.
      const spent = unfinished.filter((r) => r.attempts >= MAX_ATTEMPTS).map((r) => r.request_id);
      if (spent.length > 0) {
        await control.transaction((tx) => finishRequests(tx, ws, spent, 'failed', `stopped ${MAX_ATTEMPTS} times before it finished`, this.options.clock()));
      }
      const ids = unfinished.filter((r) => r.attempts < MAX_ATTEMPTS).map((r) => r.request_id);
      if (ids.length > 0) {
        await control.transaction((tx) => markRunning(tx, ws, ids));
        await this.work(ws, ids);
      }
      return unfinished.length;
    });
    return held?.value ?? 0;
  }

  /**
   * The requests' suppressions, then their deletes. A failure that lost to concurrent writes is
   * tried again after a short wait (PASS_RETRIES times); each failure is logged with the requests.
   */
  private async work(ws: string, ids: string[]): Promise<void> {
    const control = this.stores.control;
    for (let retry = 0; ; retry++) {
      // Read again each try: a failed try may have moved them on (resolved, suppressions done).
      const requests = (await unfinishedRequests(control, ws, this.batch)).filter((r) => ids.includes(r.request_id));
      try {
        await this.applySuppressions(ws, requests);
        const deletes = requests.filter((r) => DELETES.has(r.type));
        if (deletes.length > 0) await this.erase(ws, deletes);
        return;
      } catch (err) {
        const again = retry < PASS_RETRIES && isTransient(err);
        const fields = { err, workspace_id: ws, request_ids: requests.map((r) => r.request_id), retry: again };
        if (again) {
          this.options.log?.warn(fields, 'privacy pass failed; it is tried again');
          await sleep(retryDelayMs(retry));
          continue;
        }
        this.options.log?.error(fields, 'privacy pass failed');
        const last = requests.filter((r) => r.attempts >= MAX_ATTEMPTS).map((r) => r.request_id);
        await control.transaction((tx) => finishRequests(tx, ws, last, 'failed', errorText(err), this.options.clock()));
        throw err;
      }
    }
  }

  /** Suppress and unsuppress in the order asked; suppress-only requests are then done. */
  private async applySuppressions(ws: string, requests: PrivacyRequestRow[]): Promise<void> {
    const control = this.stores.control;
    const listed = requests.filter((r) => r.type !== 'delete');
    if (listed.length === 0) return;
    const now = this.options.clock();
    await control.transaction(async (tx) => {
      for (const r of listed) {
        const hashes = r.identifier_hashes.map((h) => h.sha256);
        if (r.type === 'unsuppress') await unsuppress(tx, ws, hashes);
        else await suppress(tx, ws, hashes, now);
      }
      await finishRequests(tx, ws, listed.filter((r) => !DELETES.has(r.type)).map((r) => r.request_id), 'done', null, now);
      tx.afterCommit(() => suppressionsChanged(control, ws));
    });
    if (control.shared) suppressionsChanged(control, ws);
  }

  private async erase(ws: string, requests: PrivacyRequestRow[]): Promise<void> {
    const { control, analytics } = this.stores;
    await this.resolve(ws, requests.filter((r) => r.phase === 'resolve'));
    const ids = requests.map((r) => r.request_id);
    const items = await requestItems(control, ws, ids);
    const keys = keysOf(items);
    // Each request's own counts, before anything is erased (a resumed request keeps those of its first pass).
    const counts = new Map<string, ErasedRows>();
    for (const r of requests.filter((q) => q.events === null)) {
      const own = keysOf(items.filter((i) => i.request_id === r.request_id));
      counts.set(r.request_id, await analytics.countKeys(ws, own.personKeys, own.visitorKeys));
    }
    await control.transaction((tx) => recordErasedRows(tx, ws, counts));
    const now = this.options.clock();
    await analytics.freezeAttribution(ws, keys.customerIds);
    await analytics.unit(async (work) => {
      const { traitPaths } = await eraseControlRows(work.control, work.mirror, ws, keys, now);
      work.control.afterCommit(() => {
        control.caches.identities.forgetWorkspace(ws);
        control.caches.knownIds?.forget(ws);
        const known = control.caches.traitPaths.get(ws);
        for (const path of traitPaths) known?.delete(path);
      });
    });
    await analytics.eraseKeys(ws, keys.personKeys, keys.visitorKeys);
    await control.transaction((tx) => finishRequests(tx, ws, ids, 'done', null, this.options.clock()));
  }

  /** Replaces the identifiers of requests not resolved yet by their keys, in one transaction. */
  private async resolve(ws: string, requests: PrivacyRequestRow[]): Promise<void> {
    if (requests.length === 0) return;
    const items = await requestItems(this.stores.control, ws, requests.map((r) => r.request_id));
    await this.stores.control.transaction(async (tx) => {
      const resolved = new Map<string, ErasedKeys>();
      for (const r of requests) {
        const identifiers = items.filter((i) => i.request_id === r.request_id)
          .map((i): Identifier => ({ kind: i.kind as IdentifierKind, value: i.value }));
        resolved.set(r.request_id, await resolveErased(tx, ws, identifiers));
      }
      await recordResolved(tx, ws, resolved);
    });
  }
}

/** The union of the keys the requests' items hold. */
function keysOf(items: { kind: string; value: string }[]): ErasedKeys {
  const of = (kind: string) => [...new Set(items.filter((i) => i.kind === kind).map((i) => i.value))];
  return { personKeys: of('person_key').map(Number), visitorKeys: of('visitor_key').map(Number), customerIds: of('customer_id') };
}
