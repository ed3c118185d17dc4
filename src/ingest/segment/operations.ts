// What the Segment-compatible endpoints write to the ingest log: each message already mapped to
// the input of the code /v1/events, /v1/persons and /v1/pageviews run (decisions §13), so the
// resolver only replays those calls.

import type { RecordHead } from '../log/ingest-log.js';
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

/** One acknowledged request as the log keeps it. */
export interface LoggedRequest extends RecordHead {
  ops: LogOperation[];
}

export type OperationKind = 'event' | 'person' | 'pageview' | 'alias';

export function kindOf(op: LogOperation): OperationKind {
  if ('event' in op) return 'event';
  if ('pageview' in op) return 'pageview';
  if ('person' in op) return 'person';
  return 'alias';
}
