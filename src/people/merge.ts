// Explicit person merges (decisions §12): `from`'s visitors, events, page views (they follow the
// visitors) and payment customers move to `into`; traits shallow-merge with `into`'s winning;
// `from`'s identifiers resolve to `into` from then on (store/control/merges.ts aliases, read by
// every ingest path). Other features call mergePersons too (Segment's alias, issue 37).
//
// Three steps. One unit of work moves the control rows and, where the engine can, the events, and
// records the merge. Then every transaction older than it has ended (on every node): one of them
// may have linked a visitor or customer to `from`, or stored events for it, before seeing the
// merge; a second unit moves those. Last, the analytical engine finishes (ClickHouse: mutations).
// A merge asked again (a retry, a race with the same merge elsewhere) finds one person and answers
// as the first did.

import { randomBytes } from 'node:crypto';
import { AppError, invalidRequest } from '../errors.js';
import {
  mergedIdentifiers, mergePersonRows, mergesOf, type MergeRow, movable, moveLinkedRows, personByRef, type PersonRef, recordMerge,
} from '../store/control/merges.js';
import type { PersonRecord } from '../store/control/people.js';
import type { ControlSql } from '../store/control/store.js';
import type { Stores } from '../store/open.js';
import type { MergeAnswer, MergeBody, MergePreview } from './schema.js';

const newMergeId = () => `mrg_${randomBytes(12).toString('base64url')}`;

export interface MergeRequest {
  from: PersonRef;
  into: PersonRef;
  /** Needed when both persons have an external_id; issue 37's alias never forces. */
  force?: boolean;
}

/** The persons `from` and `into` name now; 404 naming the side that names nobody. */
async function bothPersons(sql: ControlSql, ws: string, request: MergeRequest): Promise<[PersonRecord, PersonRecord]> {
  const [from, into] = [await personByRef(sql, ws, request.from), await personByRef(sql, ws, request.into)];
  for (const [side, person] of [['from', from], ['into', into]] as const) {
    if (!person) throw new AppError('not_found', `${side} names no person of this workspace`, { field: `/${side}` });
  }
  return [from!, into!];
}

const needsForce = (from: PersonRecord, into: PersonRecord) => from.external_id !== null && into.external_id !== null;

/** Merges `from` into `into` on every store; answers once the merge is complete everywhere. */
export async function mergePersons(stores: Stores, ws: string, request: MergeRequest, at: Date): Promise<MergeAnswer> {
  const { control, analytics } = stores;
  const first = await analytics.unit(async (work) => {
    const [from, into] = await bothPersons(work.control, ws, request);
    if (from.person_key === into.person_key) return { from, into, merge: null };
    if (needsForce(from, into) && request.force !== true) {
      throw new AppError('merge_conflict', `both persons have an external_id (${from.person_id}, ${into.person_id}): merging them needs force: true`);
    }
    const merged = await mergePersonRows(work, ws, from, into, at);
    const moved = await moveLinkedRows(work, ws, from.person_key, into.person_key, at);
    await work.analytics.movePersonEvents(ws, from.person_key, into.person_key);
    const merge: MergeRow = {
      merge_id: newMergeId(), from_person_id: from.person_id, into_person_id: into.person_id, forced: needsForce(from, into),
      visitors: moved.visitors.length, customers: moved.customers, created_at: at,
    };
    await recordMerge(work.control, ws, merge, into.person_key, from.person_key);
    work.control.afterCommit(() => control.caches.identities.forget(ws, [from, into, merged], moved.visitors.map((v) => v.visitor_id)));
    return { from, into, merge };
  });
  const { from, into, merge } = first;
  if (!merge) return { person_id: into.person_id, merge_id: null, moved: { visitors: 0, customers: 0, events: 0 } };
  await control.awaitOlderTransactions();
  const late = await analytics.unit(async (work) => {
    const moved = await moveLinkedRows(work, ws, from.person_key, into.person_key, at);
    work.control.afterCommit(() => control.caches.identities.forget(ws, [], moved.visitors.map((v) => v.visitor_id)));
    return moved;
  });
  const events = await analytics.finishPersonMove(ws, from.person_key, into.person_key);
  return {
    person_id: into.person_id, merge_id: merge.merge_id,
    moved: { visitors: merge.visitors + late.visitors.length, customers: merge.customers + late.customers, events },
  };
}

/** What a merge would do, without doing it (the console shows it before asking). */
export async function previewMerge(stores: Stores, ws: string, body: MergeBody): Promise<MergePreview> {
  const sql = stores.control;
  const [from, into] = await bothPersons(sql, ws, body);
  if (from.person_key === into.person_key) throw invalidRequest([{ field: '/into', message: 'from and into are the same person' }]);
  const ids = (p: PersonRecord) => ({ person_id: p.person_id, external_id: p.external_id, email: p.email });
  return {
    from: ids(from), into: ids(mergedIdentifiers(from, into)), needs_force: needsForce(from, into),
    moves: await movable(sql, ws, from.person_key),
  };
}

/** Every merge that made the person `personId` names now (itself, or a person merged into it), newest first. */
export async function listMerges(stores: Stores, ws: string, personId: string) {
  const person = await personByRef(stores.control, ws, { person_id: personId });
  if (!person) throw new AppError('not_found', `no person ${personId}`);
  const rows = await mergesOf(stores.control, ws, person.person_key);
  return { person_id: person.person_id, data: rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() })) };
}
