// Explicit person merges (decisions §12): `from`'s visitors, events, page views (they follow the
// visitors) and payment customers move to `into`; traits shallow-merge with `into`'s winning;
// `from`'s identifiers resolve to `into` from then on (store/control/merges.ts aliases, read by
// every ingest path). Other features call mergePersons too (Segment's alias, issue 37).
//
// Three steps, the first recording the merge as pending: one unit of work locks both persons (a
// write for either waits, or runs again and finds `into`: control/people.ts lockPersons), moves
// the control rows and, where the engine can, the events, and records the merge. A second moves
// what a unit that locked `from` before the merge linked to it (it committed before the merge could
// lock). Last, the analytical engine finishes (ClickHouse: mutations), and the merge is done. Each
// later step finds what is left and is harmless when nothing is: a process stopped after the first
// leaves the merge pending under a lease that expires, and the finisher (people/finisher.ts) runs
// them again here or on another node. A merge asked again (a retry, a race with the same merge
// elsewhere) finds one person and answers as the first did.

import { randomBytes, randomUUID } from 'node:crypto';
import { AppError, invalidRequest } from '../errors.js';
import { LEASE_DEFAULTS, type LeaseOptions, takeLeaseIn, withLease } from '../store/control/leases.js';
import {
  countLateMoves, markMergeDone, mergedIdentifiers, mergePersonRows, mergesOf, type MergeRow, movable, moveLinkedRows, pendingMerge, type PendingMerge,
  personByRef, type PersonRef, recordMerge,
} from '../store/control/merges.js';
import { lockPersons, type PersonRecord } from '../store/control/people.js';
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
export async function mergePersons(stores: Stores, ws: string, request: MergeRequest, at: Date, lease = LEASE_DEFAULTS): Promise<MergeAnswer> {
  // Its own holder: this process's finisher leaves the merge alone unless this call's lease expires.
  const holder = `merge:${process.pid}:${randomUUID()}`;
  const begun = await beginMerge(stores, ws, request, at, holder, lease);
  if (!begun.merge) return { person_id: begun.person_id, merge_id: null, moved: { visitors: 0, customers: 0, events: 0 } };
  const { merge, pending } = begun;
  let late = await finishMerge(stores, pending, holder, lease);
  // Its lease lapsed and another holder took the merge over: answered once that one is done.
  while (!late && await pendingMerge(stores.control, ws, merge.merge_id)) await new Promise((resolve) => setTimeout(resolve, FINISHED_POLL_MS));
  late ??= NOTHING;
  return {
    person_id: merge.into_person_id, merge_id: merge.merge_id,
    moved: { visitors: merge.visitors + late.visitors, customers: merge.customers + late.customers, events: late.events },
  };
}

/** The first step, one unit of work: the merge recorded pending, under `holder`'s lease; no merge when both name one person. */
export async function beginMerge(
  stores: Stores, ws: string, request: MergeRequest, at: Date, holder: string, lease: LeaseOptions,
): Promise<{ person_id: string; merge: null } | { person_id: string; merge: MergeRow; pending: PendingMerge }> {
  const { control, analytics } = stores;
  return analytics.unit(async (work) => {
    const [from, into] = await bothPersons(work.control, ws, request);
    if (from.person_key === into.person_key) return { person_id: into.person_id, merge: null };
    if (needsForce(from, into) && request.force !== true) {
      throw new AppError('merge_conflict', `both persons have an external_id (${from.person_id}, ${into.person_id}): merging them needs force: true`);
    }
    await lockPersons(work.control, ws, [from.person_key, into.person_key], 'merge');
    const merged = await mergePersonRows(work, ws, from, into, at);
    const moved = await moveLinkedRows(work, ws, from.person_key, into.person_key, at);
    await work.analytics.movePersonEvents(ws, from.person_key, into.person_key);
    const merge: MergeRow = {
      merge_id: newMergeId(), from_person_id: from.person_id, into_person_id: into.person_id, forced: needsForce(from, into),
      visitors: moved.visitors.length, customers: moved.customers, created_at: at,
    };
    await recordMerge(work.control, ws, merge, into.person_key, from.person_key);
    await takeLeaseIn(work.control, mergeLease(merge.merge_id), holder, lease.ttlMs);
    work.control.afterCommit(() => control.caches.identities.forget(ws, [from, into, merged], moved.visitors.map((v) => v.visitor_id)));
    return { person_id: into.person_id, merge, pending: { workspace_id: ws, merge_id: merge.merge_id, from_person_key: from.person_key, current_person_key: into.person_key } };
  });
}

const mergeLease = (mergeId: string) => `merge:${mergeId}`;

/** What the later steps moved. */
export interface LateMoves {
  visitors: number;
  customers: number;
  events: number;
}

const NOTHING: LateMoves = { visitors: 0, customers: 0, events: 0 };
/** How often a call waits for a merge that another holder is finishing (its own lease lapsed). */
const FINISHED_POLL_MS = 100;

/**
 * The later steps of a pending merge, under its lease: what units that locked `from` before the
 * merge linked to it, then the analytical engine's rows; then the merge is done. Null (nothing
 * run) while another holder has the lease.
 */
export async function finishMerge(stores: Stores, merge: PendingMerge, holder: string, lease: LeaseOptions): Promise<LateMoves | null> {
  const { control, analytics } = stores;
  const ws = merge.workspace_id;
  const ran = await withLease(control, mergeLease(merge.merge_id), holder, lease, async () => {
    // Read again: a merge of into since then makes another person the one `from`'s rows go to.
    const now = await pendingMerge(control, ws, merge.merge_id);
    if (!now) return NOTHING;
    const late = await analytics.unit(async (work) => {
      const moved = await moveLinkedRows(work, ws, now.from_person_key, now.current_person_key, new Date());
      await countLateMoves(work.control, ws, now.merge_id, moved);
      work.control.afterCommit(() => control.caches.identities.forget(ws, [], moved.visitors.map((v) => v.visitor_id)));
      return moved;
    });
    const events = await analytics.finishPersonMove(ws, now.from_person_key, now.current_person_key);
    await markMergeDone(control, ws, now.merge_id);
    return { visitors: late.visitors.length, customers: late.customers, events };
  });
  return ran?.value ?? null;
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
