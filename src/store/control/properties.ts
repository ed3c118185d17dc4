// Event property definitions: the payload paths seen per event name (store/property-paths.ts), the
// compiler's whitelist, kept with the control state.

import { columnOf, type ControlSql } from './store.js';

export async function propertyCatalog(store: ControlSql, workspaceId: string): Promise<Map<string, Set<string>>> {
  const rows = await store.all('SELECT event_name, path FROM event_properties WHERE workspace_id = $1', [workspaceId]);
  const catalog = new Map<string, Set<string>>();
  for (const row of rows as { event_name: string; path: string }[]) {
    let paths = catalog.get(row.event_name);
    if (!paths) catalog.set(row.event_name, (paths = new Set()));
    paths.add(row.path);
  }
  return catalog;
}

/** Records property paths; paths already known are kept as they are. */
export async function recordPropertyPaths(tx: ControlSql, ws: string, paths: { event_name: string; path: string }[]): Promise<void> {
  if (paths.length === 0) return;
  await tx.run(`INSERT INTO event_properties (workspace_id, event_name, path)
    SELECT $1, ${tx.dialect.texts('$2')}, ${tx.dialect.texts('$3')} ON CONFLICT DO NOTHING`,
  [ws, columnOf(paths.map((p) => p.event_name)), columnOf(paths.map((p) => p.path))]);
}
