// Event property definitions: the payload paths seen per event name, the compiler's whitelist.

import type { DuckDBConnection } from '@duckdb/node-api';
import { column, texts } from './columns.js';
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

/** The same definitions as `event_name \0 path` keys, for ingest's cache. */
export async function knownPropertyPaths(store: Store, workspaceId: string): Promise<Set<string>> {
  const known = new Set<string>();
  for (const [name, paths] of await propertyCatalog(store, workspaceId)) for (const path of paths) known.add(`${name}\0${path}`);
  return known;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Paths of a JSON structure (objects only; arrays are leaves): `a`, `a.b`, … in document order.
 * The walk keeps its own stack, so no depth overflows it.
 */
export function propertyPaths(structure: unknown): string[] {
  const paths: string[] = [];
  const stack: { value: unknown; path: string }[] = [];
  let value = structure;
  let prefix = '';
  for (;;) {
    if (isObject(value)) {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) stack.push({ value: value[keys[i]!], path: prefix + keys[i] });
    }
    const next = stack.pop();
    if (!next) return paths;
    paths.push(next.path);
    value = next.value;
    prefix = `${next.path}.`;
  }
}

/** Records property paths; paths already known are kept as they are. */
export async function recordPropertyPaths(tx: DuckDBConnection, ws: string, paths: { event_name: string; path: string }[]): Promise<void> {
  if (paths.length === 0) return;
  await tx.run(`INSERT INTO event_properties (workspace_id, event_name, path)
    SELECT $1, unnest(${texts('$2')}), unnest(${texts('$3')}) ON CONFLICT DO NOTHING`,
  [ws, column(paths.map((p) => p.event_name)), column(paths.map((p) => p.path))]);
}

