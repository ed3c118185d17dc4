// A Segment request body's messages: a batch's `batch` array (each message with its `type`), or the
// single call itself, whose type is its route's. Read when a request arrives and again when its
// record is resolved, from the same bytes.

import { invalidRequest } from '../../errors.js';
import { MESSAGE_TYPES, type MessageType } from './messages.js';

/** What a route takes: one kind of call, or a batch of any. */
export type SegmentKind = MessageType | 'batch';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The messages of `body` (the batch array itself, not a copy); 400 naming each message without a known type. */
export function messagesOf(kind: SegmentKind, body: Json): unknown[] {
  if (kind !== 'batch') return [body];
  const batch = body.batch;
  if (!Array.isArray(batch) || batch.length === 0) throw invalidRequest([{ field: '/batch', message: 'must be a non-empty array of messages' }]);
  const faults: { field: string; message: string; index: number }[] = [];
  for (let index = 0; index < batch.length; index++) {
    const message: unknown = batch[index];
    if (!MESSAGE_TYPES.includes((isObject(message) ? message.type : undefined) as MessageType)) {
      faults.push({ field: `/batch/${index}/type`, message: `must be one of ${MESSAGE_TYPES.join(', ')}`, index });
    }
  }
  if (faults.length > 0) throw invalidRequest(faults);
  return batch;
}

/** The type of the `index`-th message of a body of `kind` (messagesOf checked it). */
export const typeOf = (kind: SegmentKind, message: unknown): MessageType => (kind === 'batch' ? (message as Json).type as MessageType : kind);

/** Where the `index`-th message is in the body, as a JSON Pointer ('' for a single call). */
export const pointerOf = (kind: SegmentKind, index: number): string => (kind === 'batch' ? `/batch/${index}` : '');

/** The batch's `sentAt`, when it is a date-time. */
export function sentAtOf(body: Json): number | undefined {
  const ms = typeof body.sentAt === 'string' ? Date.parse(body.sentAt) : NaN;
  return Number.isNaN(ms) ? undefined : ms;
}
