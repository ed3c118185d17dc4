// The suppression check at ingest: identifiers on the workspace's suppression list are stored
// nowhere. The list is kept in memory per workspace as hashes (control/privacy.ts identifierHash),
// so a workspace without one pays a map lookup a batch, and one with a list a hash per identifier.
// A store nobody else writes keeps the list until this process changes it; a shared one (many API
// nodes) reads it again after SHARED_READ_MS, so another node's change applies within that time.

import { identifierHash, type IdentifierKind, suppressionHashes } from '../store/control/privacy.js';
import type { ControlStore } from '../store/control/store.js';

export const SHARED_READ_MS = 5000;

/** Whether an identifier is suppressed; null: the workspace suppresses nothing. */
export type SuppressionCheck = ((kind: IdentifierKind, value: string | undefined) => boolean) | null;

export async function suppressionCheck(store: ControlStore, ws: string): Promise<SuppressionCheck> {
  const cache = store.caches.suppressions;
  let entry = cache.get(ws);
  if (!entry || (store.shared && Date.now() - entry.readAt > SHARED_READ_MS)) {
    // One read for every batch arriving meanwhile: each awaits the same promise, so the batches go
    // on in their order of arrival (the group commit keeps that order).
    const changes = store.caches.suppressionChanges;
    const fresh = { hashes: suppressionHashes(store, ws).then((h) => (h.size === 0 ? null : h)), readAt: Date.now() };
    entry = fresh;
    cache.set(ws, fresh);
    fresh.hashes.then(() => {
      if (changes !== store.caches.suppressionChanges && cache.get(ws) === fresh) cache.delete(ws);
    }, () => {
      if (cache.get(ws) === fresh) cache.delete(ws);
    });
  }
  const hashes = await entry.hashes;
  if (!hashes) return null;
  return (kind, value) => value !== undefined && hashes.has(identifierHash(kind, value));
}

/** The workspace's list changed here: read again at the next check. */
export function suppressionsChanged(store: ControlStore, ws: string): void {
  store.caches.suppressionChanges++;
  store.caches.suppressions.delete(ws);
}

/** A payment notification's identifiers with the suppressed ones dropped: its payment stays, carrying nothing of them. */
export function withoutSuppressed<T extends { metadata: { userId: string | null; visitorId: string | null }; reference: string | null;
  email: string | null; customerEmail: string | null | undefined }>(check: SuppressionCheck, plan: T): T {
  if (!check) return plan;
  const drop = (kind: IdentifierKind, value: string | null | undefined) => (value !== null && value !== undefined && check(kind, value) ? null : value);
  return {
    ...plan,
    metadata: { userId: drop('external_id', plan.metadata.userId) ?? null, visitorId: drop('visitor_id', plan.metadata.visitorId) ?? null },
    reference: drop('visitor_id', plan.reference) ?? null,
    email: drop('email', plan.email) ?? null,
    customerEmail: drop('email', plan.customerEmail),
  };
}
