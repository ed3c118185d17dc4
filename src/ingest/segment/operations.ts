// What the Segment-compatible endpoints write to the ingest log, and what its resolver runs: each
// message mapped to the input of the code /v1/events, /v1/persons and /v1/pageviews run (decisions
// §13). A record keeps the request's body as it came; its head holds what makes mapping it again
// give the same operations (the receive time, the message ids drawn for messages without one).

import type { RecordHead } from '../log/ingest-log.js';
import type { SegmentKind } from './body.js';
import type { EventInput, PageviewInput, PersonInput } from '../schemas.js';

/** `alias { previousId, userId }`: previousId's person or visitor is merged into userId's. */
export interface AliasInput {
  previous_id: string;
  user_id: string;
}

export type LogOperation =
  | { event: EventInput }
  | { person: PersonInput }
  | { pageview: PageviewInput }
  | { alias: AliasInput };

/** The head of one acknowledged request's record; its payload is the request's JSON body (without a writeKey). */
export interface LoggedRequest extends RecordHead {
  kind: SegmentKind;
  /** The receive time the timestamps were corrected with (ms). */
  received: number;
  /** The message ids drawn for the messages without one, by their index in the body. */
  drawn_ids?: Record<number, string>;
}

/** A record of the log's first format (before bodies were kept): its head holds its operations, mapped. */
export interface MappedRequest extends RecordHead {
  ops: LogOperation[];
}

export type OperationKind = 'event' | 'person' | 'pageview' | 'alias';

export function kindOf(op: LogOperation): OperationKind {
  if ('event' in op) return 'event';
  if ('pageview' in op) return 'pageview';
  if ('person' in op) return 'person';
  return 'alias';
}
