// History from the payment processor's list API (decisions §14): Stripe's events only go back 30
// days, so customers, checkout sessions, payment intents, subscriptions, invoices, charges and
// refunds are read from their list endpoints (the stripe SDK's auto-pagination) and each object is
// applied as the notification of its current state (backfill-objects.ts), through the webhook's own
// unit of work and rules: a payment both backfilled and notified is one payment. After each page the
// last id applied is stored per object type, so an interrupted backfill resumes where it stopped.

import Stripe from 'stripe';
import { type BackfillCursor, clearCursors, readCursors, saveCursor } from '../store/control/backfill.js';
import type { ControlSql } from '../store/control/store.js';
import type { PaymentsMode } from '../store/control/workspaces.js';
import { BACKFILL_SOURCES, type BackfillSource, notificationOf } from './backfill-objects.js';
import type { Json } from './notification.js';
import type { PaymentWebhook } from './webhook.js';

/** A page as the list API gives it at most (and the most one unit of work takes here). */
const MAX_PAGE = 100;

export interface BackfillOptions {
  /** Only objects created on or after this day (`YYYY-MM-DD`, UTC); all history when null. */
  since: string | null;
  mode: PaymentsMode;
  /** Objects a request asks for (1..100, default 100). */
  pageSize?: number;
  /** Stops after the page under way (the cursors kept): SIGINT in the command line. */
  signal?: AbortSignal;
  /** The wait after a rate-limited request (429) before the listing resumes, doubled each time in a row. */
  rateLimitWaitMs?: number;
  /** How many 429s in a row end the backfill (resumable). */
  maxRateLimited?: number;
  progress?: (p: BackfillProgress) => void;
}

export interface BackfillProgress {
  objectType: string;
  /** Objects applied in this run (skipped ones included). */
  read: number;
  /** Of them, objects of the other payments mode: not applied, as their notifications would not be. */
  ignored: number;
  done: boolean;
}

export interface BackfillResult {
  complete: boolean;
  types: BackfillProgress[];
}

/**
 * A client of the processor's API at `base` (STRIPE_API_BASE, e.g. http://127.0.0.1:12111; Stripe's
 * own host when unset). The SDK retries connection failures, 409s and 5xx itself.
 */
export function stripeClient(apiKey: string, base?: string): Stripe {
  if (!base) return new Stripe(apiKey, { maxNetworkRetries: 3 });
  const url = new URL(base);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(apiKey, { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || (protocol === 'http' ? 80 : 443), protocol, maxNetworkRetries: 3 });
}

const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

const isRateLimited = (err: unknown) => err instanceof Stripe.errors.StripeRateLimitError;

export class Backfill {
  constructor(private readonly webhook: PaymentWebhook, private readonly control: ControlSql, private readonly clock: () => Date = () => new Date()) {}

  /** Reads every object type to its end, resuming each where a run before stopped; the cursors go once all are read. */
  async run(ws: string, stripe: Stripe, options: BackfillOptions): Promise<BackfillResult> {
    const cursors = await readCursors(this.control, ws);
    const types: BackfillProgress[] = [];
    for (const source of BACKFILL_SOURCES) {
      const kept = cursors.get(source.type);
      // A cursor of another --since was a listing of other objects: that type starts again.
      const cursor: BackfillCursor = kept && kept.since === options.since ? kept : { objectType: source.type, since: options.since, lastId: null, done: false };
      const progress: BackfillProgress = { objectType: source.type, read: 0, ignored: 0, done: cursor.done };
      types.push(progress);
      if (!cursor.done) await this.readType(ws, stripe, source, cursor, progress, options);
      if (!progress.done) return { complete: false, types };
    }
    await clearCursors(this.control, ws);
    return { complete: true, types };
  }

  /** One object type, page by page from its cursor; a 429 waits and lists again from the cursor. */
  private async readType(ws: string, stripe: Stripe, source: BackfillSource, cursor: BackfillCursor, progress: BackfillProgress, options: BackfillOptions) {
    const wait = options.rateLimitWaitMs ?? 2000;
    let limited = 0;
    for (;;) {
      try {
        await this.listFrom(ws, stripe, source, cursor, progress, options);
        if (options.signal?.aborted) return;
        cursor.done = progress.done = true;
        await saveCursor(this.control, ws, cursor, this.clock());
        return;
      } catch (err) {
        if (!isRateLimited(err) || ++limited > (options.maxRateLimited ?? 8)) throw err;
        await sleep(wait * 2 ** (limited - 1), options.signal);
        if (options.signal?.aborted) return;
      }
    }
  }

  private async listFrom(ws: string, stripe: Stripe, source: BackfillSource, cursor: BackfillCursor, progress: BackfillProgress, options: BackfillOptions) {
    const size = Math.min(Math.max(options.pageSize ?? MAX_PAGE, 1), MAX_PAGE);
    const params: Json = { limit: size, ...source.params };
    if (cursor.lastId !== null) params.starting_after = cursor.lastId;
    if (options.since !== null) params.created = { gte: Date.parse(`${options.since}T00:00:00Z`) / 1000 };
    let page: Json[] = [];
    const flush = async () => {
      if (page.length === 0) return;
      await this.apply(ws, source, page, progress, options.mode);
      cursor.lastId = page.at(-1)!.id as string;
      page = [];
      await saveCursor(this.control, ws, cursor, this.clock());
      options.progress?.({ ...progress });
    };
    try {
      for await (const object of source.list(stripe, params)) {
        page.push(object as Json);
        if (page.length === size) await flush();
        if (options.signal?.aborted) break;
      }
    } finally {
      // What was read before a failure is applied and counted, so the next listing starts after it.
      await flush();
    }
  }

  private async apply(ws: string, source: BackfillSource, objects: Json[], progress: BackfillProgress, mode: PaymentsMode): Promise<void> {
    const notifications = objects.flatMap((o) => {
      progress.read++;
      // As the webhook ignores a notification of the other mode.
      if (typeof o.livemode === 'boolean' && o.livemode !== (mode === 'live')) {
        progress.ignored++;
        return [];
      }
      const n = notificationOf(source, o);
      return n ? [n] : [];
    });
    if (notifications.length > 0) await this.webhook.applyAll(ws, notifications);
  }
}
