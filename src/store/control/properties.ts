// Property definitions, the compiler's whitelists, kept with the control state: the payload paths
// seen per event name, and the trait paths seen on the workspace's persons (store/property-paths.ts).

import type { PropertyCatalog } from '../../criteria/index.js';
import { columnOf, type ControlSql, type ControlStore, type ControlTx } from './store.js';

export async function propertyCatalog(store: ControlSql, workspaceId: string): Promise<PropertyCatalog> {
  const rows = await store.all('SELECT event_name, path FROM event_properties WHERE workspace_id = $1', [workspaceId]);
  const events = new Map<string, Set<string>>();
  for (const row of rows as { event_name: string; path: string }[]) {
    let paths = events.get(row.event_name);
    if (!paths) events.set(row.event_name, (paths = new Set()));
    paths.add(row.path);
  }
  const traits = await store.all('SELECT path FROM trait_definitions WHERE workspace_id = $1', [workspaceId]);
  const names = await store.all('SELECT event_name FROM event_names WHERE workspace_id = $1', [workspaceId]);
  return { events, traits: new Set(traits.map((r) => r.path as string)), eventNames: new Set(names.map((r) => r.event_name as string)) };
}

/** Records event names received (with properties or not); names already known are kept as they are. */
export async function recordEventNames(tx: ControlSql, ws: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  await tx.run(`INSERT INTO event_names (workspace_id, event_name) SELECT $1, ${tx.dialect.texts('$2')} ON CONFLICT DO NOTHING`,
    [ws, columnOf(names)]);
}

/** Records property paths; paths already known are kept as they are. */
export async function recordPropertyPaths(tx: ControlSql, ws: string, paths: { event_name: string; path: string }[]): Promise<void> {
  if (paths.length === 0) return;
  await tx.run(`INSERT INTO event_properties (workspace_id, event_name, path)
    SELECT $1, ${tx.dialect.texts('$2')}, ${tx.dialect.texts('$3')} ON CONFLICT DO NOTHING`,
  [ws, columnOf(paths.map((p) => p.event_name)), columnOf(paths.map((p) => p.path))]);
}

/** Records trait paths; paths already known are kept as they are. */
export async function recordTraitPaths(tx: ControlSql, ws: string, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  await tx.run(`INSERT INTO trait_definitions (workspace_id, path) SELECT $1, ${tx.dialect.texts('$2')} ON CONFLICT DO NOTHING`,
    [ws, columnOf(paths)]);
}

/** Records the trait paths of a batch, in the transaction `tx` of `store`, writing only those not known yet. */
export async function recordNewTraitPaths(store: ControlStore, tx: ControlTx, ws: string, paths: Iterable<string>): Promise<void> {
  const workspaces = store.caches.traitPaths;
  const known = workspaces.get(ws) ?? new Set<string>();
  workspaces.set(ws, known);
  const fresh = [...new Set(paths)].filter((path) => !known.has(path));
  if (fresh.length === 0) return;
  await recordTraitPaths(tx, ws, fresh);
  // Known once committed: a rolled-back batch's paths are written again by the next.
  tx.afterCommit(() => {
    for (const path of fresh) known.add(path);
  });
}
