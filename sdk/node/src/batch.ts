// Messages waiting to be sent, kept serialized, and the request bodies made of them: as many as
// fit in one body under the batch limit, oldest first.

import { byteLength, MAX_BATCH_BYTES } from './limits.js';
import type { Message } from './message.js';

export interface Queued {
  message: Message;
  /** The message's JSON, made once: measured against the limits and pasted into each body that carries it. */
  json: string;
  bytes: number;
}

export const queued = (message: Message): Queued => {
  const json = JSON.stringify(message);
  return { message, json, bytes: byteLength(json) };
};

/** What a body adds around its messages: the envelope, and sentAt as an ISO 8601 time. */
const ENVELOPE_BYTES = byteLength('{"batch":[],"sentAt":""}') + new Date(0).toISOString().length;

/** How many of `queue`'s first messages go in one body: at most `maxCount`, and at least one. */
export function batchLength(queue: readonly Queued[], maxCount: number, maxBytes = MAX_BATCH_BYTES): number {
  let bytes = ENVELOPE_BYTES;
  let n = 0;
  for (const item of queue) {
    const next = bytes + item.bytes + (n > 0 ? 1 : 0);
    if (n >= maxCount || (n > 0 && next > maxBytes)) break;
    bytes = next;
    n++;
  }
  return n;
}

/**
 * The request body: the messages' JSON as made at enqueue, and sentAt, the time of this attempt,
 * from which the service corrects the messages' timestamps for this machine's clock skew.
 */
export const body = (batch: readonly Queued[], sentAt: Date): string =>
  `{"batch":[${batch.map((q) => q.json).join(',')}],"sentAt":"${sentAt.toISOString()}"}`;
