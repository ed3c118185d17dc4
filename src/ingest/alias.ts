// Segment's `alias { previousId, userId }` (decisions §13): previousId's person or visitor merged
// into userId's person by §12's rules, never forced. The person merge is its own feature; until it
// is wired in, `linkVisitorAlias` does what today's identity rules already can: it links the
// visitor previousId to userId's person (as /v1/persons with both ids would), which covers the
// common case of an anonymous visitor who signs up. A previousId that is another person's user id
// needs the merge: that alias fails for itself, and the resolver sets it aside with the reason.

import { personsBy } from '../store/control/people.js';
import type { ControlSql } from '../store/control/store.js';
import type { Ingest } from './ingest.js';
import type { AliasInput } from './segment/operations.js';

export interface AliasMerge {
  /** Merges `previous_id`'s person or visitor into `user_id`'s person (never forced). */
  mergeAlias(ws: string, alias: AliasInput): Promise<void>;
}

/** An alias this build cannot apply: its previousId is a person's user id (a merge of two persons). */
export class AliasNeedsMerge extends Error {}

export function linkVisitorAlias(ingest: Ingest, control: ControlSql): AliasMerge {
  return {
    async mergeAlias(ws, { previous_id, user_id }) {
      if (previous_id === user_id) return;
      if ((await personsBy(control, ws, 'external_id', [previous_id])).length > 0) {
        throw new AliasNeedsMerge(`alias: previousId "${previous_id}" is a person's userId; merging two persons needs POST /v1/persons/merge, not in this build`);
      }
      await ingest.person(ws, { external_id: user_id, visitor_id: previous_id });
    },
  };
}
