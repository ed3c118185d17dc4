// The client: calls queue their message; a queue of `flushAt` messages, or `flushIntervalMs` after
// the first waiting one, sends them. One request at a time, oldest messages first, so the service
// receives a process's messages in the order they were made (it resolves them in arrival order).

import { batchLength, type Queued, queued } from './batch.js';
import { DeliveryError } from './errors.js';
import { MAX_MESSAGE_BYTES } from './limits.js';
import {
  type AliasInput, aliasMessage, type IdentifyInput, identifyMessage, type Message, type PageInput, pageMessage, type TrackInput, trackMessage,
} from './message.js';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.js';
import { deliver, type Endpoint, type RetryNotice } from './transport.js';
import { LIBRARY } from './version.js';

export interface AnalyticsOptions {
  /** The workspace's secret key (sk_…), sent as the HTTP Basic user name. */
  writeKey: string;
  /** Where the service is, e.g. https://audiences.example.com. */
  host: string;
  /** Default /v1/batch. */
  path?: string;
  /** Messages per request; a queue this long is sent at once (default 100). */
  flushAt?: number;
  /** How long a message waits for others before it is sent anyway (default 5 s). */
  flushIntervalMs?: number;
  /** Messages waiting at most; past it new ones are reported as `queue_full` (default 10,000). */
  maxQueueSize?: number;
  retry?: Partial<RetryPolicy>;
  /** Each request's time limit (default 10 s). */
  timeoutMs?: number;
  /** Flush when the event loop empties (`beforeExit`; default true). */
  flushOnExit?: boolean;
  /** The longest that exit flush may take (default 10 s). */
  exitTimeoutMs?: number;
  /** Messages that will not be delivered (default: a console warning). */
  onError?: (error: DeliveryError) => void;
  /** Before each retry: for logs and metrics. */
  onRetry?: (notice: RetryNotice) => void;
  /** After each batch the service took. */
  onDelivery?: (delivery: { messages: number; bytes: number; attempts: number }) => void;
}

/** Runs the caller's hook: one that throws must not stop delivery nor leave a flush waiting. */
function callback(hook: () => void): void {
  try {
    hook();
  } catch (err) {
    console.warn(`[${LIBRARY.name}] a callback threw: ${String(err)}`);
  }
}

const DEFAULTS = { path: '/v1/batch', flushAt: 100, flushIntervalMs: 5_000, maxQueueSize: 10_000, timeoutMs: 10_000, exitTimeoutMs: 10_000 };

function endpointOf(options: AnalyticsOptions): Endpoint {
  if (typeof options.writeKey !== 'string' || options.writeKey === '') throw new TypeError('writeKey is required');
  const url = new URL(`${options.host.replace(/\/+$/, '')}${options.path ?? DEFAULTS.path}`);
  return {
    url: url.href,
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    headers: {
      authorization: `Basic ${btoa(`${options.writeKey}:`)}`,
      'content-type': 'application/json',
      'user-agent': `${LIBRARY.name}/${LIBRARY.version}`,
    },
  };
}

export class Analytics {
  readonly #endpoint: Endpoint;
  readonly #retry: RetryPolicy;
  readonly #flushAt: number;
  readonly #flushIntervalMs: number;
  readonly #maxQueueSize: number;
  readonly #exitTimeoutMs: number;
  readonly #options: AnalyticsOptions;
  readonly #queue: Queued[] = [];
  /** Messages accepted, and of those how many are sent or given up: a flush waits for the count it saw. */
  #accepted = 0;
  #settled = 0;
  #waiters: { upTo: number; resolve: () => void }[] = [];
  #sending: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed: Promise<void> | undefined;
  readonly #abandon = new AbortController();
  readonly #onExit = () => void this.close({ timeoutMs: this.#exitTimeoutMs });

  constructor(options: AnalyticsOptions) {
    this.#options = options;
    this.#endpoint = endpointOf(options);
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#flushAt = Math.max(1, options.flushAt ?? DEFAULTS.flushAt);
    this.#flushIntervalMs = options.flushIntervalMs ?? DEFAULTS.flushIntervalMs;
    this.#maxQueueSize = options.maxQueueSize ?? DEFAULTS.maxQueueSize;
    this.#exitTimeoutMs = options.exitTimeoutMs ?? DEFAULTS.exitTimeoutMs;
    // Edge runtimes have no process events: there, flush() before the response ends.
    if (options.flushOnExit !== false && typeof globalThis.process?.on === 'function') process.on('beforeExit', this.#onExit);
  }

  identify(input: IdentifyInput): void {
    this.#enqueue(identifyMessage(input));
  }

  track(input: TrackInput): void {
    this.#enqueue(trackMessage(input));
  }

  page(input: PageInput): void {
    this.#enqueue(pageMessage(input));
  }

  alias(input: AliasInput): void {
    this.#enqueue(aliasMessage(input));
  }

  /** Sends what is waiting; resolves once every message queued before the call is delivered or reported to onError. */
  flush(): Promise<void> {
    if (this.#settled >= this.#accepted) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.#waiters.push({ upTo: this.#accepted, resolve }));
    this.#send();
    return done;
  }

  /**
   * Flushes and stops: later calls are reported as `closed`. With `timeoutMs`, what is not
   * delivered by then is abandoned (reported to onError) and close resolves.
   */
  close({ timeoutMs }: { timeoutMs?: number } = {}): Promise<void> {
    if (typeof globalThis.process?.off === 'function') process.off('beforeExit', this.#onExit);
    this.#closed ??= this.#closeWithin(timeoutMs);
    return this.#closed;
  }

  async #closeWithin(timeoutMs: number | undefined): Promise<void> {
    const flushed = this.flush();
    if (timeoutMs === undefined) return flushed;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([flushed, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
    this.#abandon.abort();
    await flushed;
  }

  #enqueue(message: Message): void {
    if (this.#closed) return this.#fail(new DeliveryError('closed', [message], 'sent after close()'));
    const item = queued(message);
    if (item.bytes > MAX_MESSAGE_BYTES) {
      return this.#fail(new DeliveryError('too_large', [message], `${item.bytes} bytes, above the ${MAX_MESSAGE_BYTES} a message may take`));
    }
    if (this.#queue.length >= this.#maxQueueSize) {
      return this.#fail(new DeliveryError('queue_full', [message], `${this.#maxQueueSize} messages already waiting`));
    }
    this.#queue.push(item);
    this.#accepted++;
    this.#schedule();
  }

  /** A full batch goes now; fewer wait for the interval (a send under way takes them when it ends). */
  #schedule(): void {
    if (this.#sending || this.#queue.length === 0) return;
    if (this.#queue.length >= this.#flushAt) return this.#send();
    if (this.#timer) return;
    // Unref'd: a waiting message does not keep the process alive; beforeExit sends it instead.
    this.#timer = setTimeout(() => this.#send(), this.#flushIntervalMs);
    this.#timer.unref?.();
  }

  #send(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#sending ??= this.#drain().finally(() => {
      this.#sending = undefined;
      // A flush asked while the last batch was settling is still waiting: its messages go now.
      if (this.#waiters.length > 0) this.#send();
      else this.#schedule();
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, batchLength(this.#queue, this.#flushAt));
      const messages = batch.map((q) => q.message);
      const { onRetry } = this.#options;
      const outcome = await deliver(batch, this.#endpoint, this.#retry, this.#abandon.signal, onRetry && ((notice) => callback(() => onRetry(notice))));
      if (outcome.ok) {
        const delivery = { messages: batch.length, bytes: batch.reduce((n, q) => n + q.bytes, 0), attempts: outcome.attempts };
        callback(() => this.#options.onDelivery?.(delivery));
      } else {
        this.#fail(new DeliveryError(outcome.reason, messages, outcome.detail, outcome.status));
      }
      this.#settled += batch.length;
      this.#waiters = this.#waiters.filter((w) => (w.upTo <= this.#settled ? (w.resolve(), false) : true));
    }
  }

  #fail(error: DeliveryError): void {
    const { onError } = this.#options;
    if (onError) callback(() => onError(error));
    else console.warn(`[${LIBRARY.name}] ${error.message}`);
  }
}
