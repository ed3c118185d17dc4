// Which identifiers a workspace may hold, where an engine's lookup of a list of ids costs a scan
// (DuckDB: store/duckdb/known-ids.ts): an id proven new needs no lookup. Elsewhere none is kept
// (ControlCaches.knownIds is null) and every id missing from the identity cache is looked up.

export type IdKind = 'visitor_id' | 'external_id' | 'email';

export interface KnownIds {
  /** True when `id` is proven not to be held by the workspace (else it must be looked up). */
  absent(ws: string, kind: IdKind, id: string): boolean;
  /** Records an id a write of the workspace holds (call before its transaction commits). */
  add(ws: string, kind: IdKind, id: string): void;
  /** Starts making the workspace's proofs unless they exist; never waits (call it inside a write transaction). */
  prepare(ws: string): void;
  /** Drops the workspace's proofs (ids were erased: a filter can only grow); the next `prepare` makes them anew. */
  forget(ws: string): void;
  /** Whether the workspace's proofs are in use (for tests). */
  isReady(ws: string): boolean;
}
