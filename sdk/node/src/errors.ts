import type { Message } from './message.js';

/**
 * Why messages were not delivered: `rejected` (the service refused the batch: a 4xx other than 408 /
 * 429), `retries_exhausted`, `abandoned` (close's deadline came first), `too_large` (one message
 * above 32 KB), `queue_full` (maxQueueSize messages already waiting), `closed` (sent after close()).
 */
export type DeliveryFailure = 'rejected' | 'retries_exhausted' | 'abandoned' | 'too_large' | 'queue_full' | 'closed';

export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';

  constructor(
    readonly reason: DeliveryFailure,
    /** The messages lost, as they would have been sent. */
    readonly messages: readonly Message[],
    detail: string,
    /** The service's last answer, when there was one. */
    readonly status?: number,
  ) {
    super(`${messages.length} message(s) not delivered (${reason}): ${detail}`);
  }
}
