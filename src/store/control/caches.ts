// What one process keeps in memory of a control store's committed rows, declared once per store
// instance: two copies over the same rows could disagree. A store shared by several nodes has
// writers elsewhere, so there nothing that a write elsewhere could make stale is kept.

import { IDENTITY_CACHE_ENTRIES, IdentityCache } from './identity-cache.js';
import type { KnownIds } from './known-ids.js';

export class ControlCaches {
  /** Persons' and visitors' identifiers (identity resolution). */
  readonly identities: IdentityCache;
  /** Ids proven never stored, where the engine offers the proof and nobody else writes. */
  readonly knownIds: KnownIds | null;
  /**
   * Trait paths known stored, per workspace, so that a batch writes only new ones (most batches
   * carry traits seen before). Definitions are never removed, so an entry stays true.
   */
  readonly traitPaths = new Map<string, Set<string>>();
  /**
   * Each workspace's suppression list as read (hashes; null: empty) and when (privacy/suppression.ts):
   * kept until this process changes it, and for a few seconds where other nodes may.
   */
  readonly suppressions = new Map<string, { hashes: Promise<Set<string> | null>; readAt: number }>();
  /** Changes to suppression lists made through this process: a read that overlapped one is not kept. */
  suppressionChanges = 0;
  /**
   * Changes to workspaces' webhook settings (secret, payments mode) made through this process. A
   * reader may keep the settings of a store nobody else writes, and reads them again once this moved.
   */
  settingsChanges = 0;

  constructor(shared: boolean, knownIds?: () => KnownIds) {
    this.identities = new IdentityCache(shared ? 0 : IDENTITY_CACHE_ENTRIES);
    this.knownIds = shared || !knownIds ? null : knownIds();
  }
}
