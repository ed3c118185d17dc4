// Event property definitions: the payload paths seen per event name, the compiler's whitelist.

import type { Store } from './db.js';

export async function propertyCatalog(store: Store, workspaceId: string): Promise<Map<string, Set<string>>> {
  const rows = await store.query('SELECT event_name, path FROM event_properties WHERE workspace_id = $1', [workspaceId]);
  const catalog = new Map<string, Set<string>>();
  for (const row of rows as { event_name: string; path: string }[]) {
    let paths = catalog.get(row.event_name);
    if (!paths) catalog.set(row.event_name, (paths = new Set()));
    paths.add(row.path);
  }
  return catalog;
}
