// Segment's `alias { previousId, userId }` (decisions §13): previousId's person or visitor merged
// into userId's person by §12's rules (people/merge.ts), never forced. previousId names a person
// by its user id, or a visitor: a visitor linked to another person brings that person (merged when
// it has no user id of its own), an unlinked one is linked to userId's person as /v1/persons with
// both ids would. A merge §12 refuses without force (both persons have a user id) fails for itself,
// and the resolver sets it aside with the reason.

import { mergePersons } from '../people/merge.js';
import { personByRef } from '../store/control/merges.js';
import { personsBy, visitorsById } from '../store/control/people.js';
import type { Stores } from '../store/open.js';
import type { Ingest } from './ingest.js';
import type { AliasInput } from './segment/operations.js';

export interface AliasMerge {
  /** Merges `previous_id`'s person or visitor into `user_id`'s person (never forced). */
  mergeAlias(ws: string, alias: AliasInput): Promise<void>;
}

/** The person previousId names: by user id, else through the visitor of that id; null when neither. */
async function previousPerson(stores: Stores, ws: string, previousId: string): Promise<{ person_id: string } | null> {
  const byUserId = await personByRef(stores.control, ws, { external_id: previousId });
  if (byUserId) return { person_id: byUserId.person_id };
  const [visitor] = await visitorsById(stores.control, ws, [previousId]);
  if (visitor?.person_key == null) return null;
  const [person] = await personsBy(stores.control, ws, 'person_key', [visitor.person_key]);
  return person ? { person_id: person.person_id } : null;
}

export function personMergeAlias(ingest: Ingest, stores: Stores, clock: () => Date): AliasMerge {
  return {
    async mergeAlias(ws, { previous_id, user_id }) {
      if (previous_id === user_id) return;
      const from = await previousPerson(stores, ws, previous_id);
      if (!from) {
        await ingest.person(ws, { external_id: user_id, visitor_id: previous_id });
        return;
      }
      await ingest.person(ws, { external_id: user_id }); // userId's person exists from here
      await mergePersons(stores, ws, { from, into: { external_id: user_id } }, clock());
    },
  };
}
