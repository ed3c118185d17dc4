// Segment's `alias { previousId, userId }` (decisions §13): previousId's person or visitor merged
// into userId's person by §12's rules, never forced. The person merge is its own feature; until it
// is wired in, `linkVisitorAlias` does what today's identity rules already can: it links the
// visitor previousId to userId's person (as /v1/persons with both ids would), which covers the
// common case of an anonymous visitor who signs up.

import type { Ingest } from './ingest.js';
import type { AliasInput } from './segment/operations.js';

export interface AliasMerge {
  /** Merges `previous_id`'s person or visitor into `user_id`'s person (never forced). */
  mergeAlias(ws: string, alias: AliasInput): Promise<void>;
}

export function linkVisitorAlias(ingest: Ingest): AliasMerge {
  return {
    async mergeAlias(ws, { previous_id, user_id }) {
      await ingest.person(ws, { external_id: user_id, visitor_id: previous_id });
    },
  };
}
