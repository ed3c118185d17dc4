-- Leases of work done by one node at a time (store/control/leases.ts), and the workspaces' trait
-- definitions, the person leaf's whitelist (store/control/properties.ts), as DuckDB's migrations add them.

-- Up Migration

CREATE TABLE leases (
  name text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);

CREATE TABLE trait_definitions (
  workspace_id text NOT NULL,
  path text NOT NULL,
  PRIMARY KEY (workspace_id, path)
);
