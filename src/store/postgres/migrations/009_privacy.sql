-- Privacy requests, their identifiers while under way, suppression lists, departures and retention
-- (as store/duckdb/migrations.ts adds them).

-- Up Migration

CREATE TABLE privacy_requests (
  workspace_id text NOT NULL,
  request_id text NOT NULL,
  type text NOT NULL,
  status text NOT NULL,
  phase text NOT NULL,
  identifier_hashes json NOT NULL,
  persons bigint,
  visitors bigint,
  events bigint,
  pageviews bigint,
  customers bigint,
  error text,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  PRIMARY KEY (workspace_id, request_id)
);
CREATE INDEX privacy_requests_unfinished ON privacy_requests (workspace_id) WHERE status IN ('pending', 'running');
CREATE TABLE privacy_request_items (
  workspace_id text NOT NULL,
  request_id text NOT NULL,
  kind text NOT NULL,
  value text NOT NULL
);
CREATE INDEX privacy_request_items_by_request ON privacy_request_items (workspace_id, request_id);
CREATE TABLE suppressions (
  workspace_id text NOT NULL,
  hash text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, hash)
);
CREATE TABLE privacy_departures (
  workspace_id text NOT NULL,
  profile bigint NOT NULL,
  person_id text,
  visitor_id text,
  external_id text,
  email text,
  created_at timestamptz NOT NULL
);
CREATE INDEX privacy_departures_by_profile ON privacy_departures (workspace_id, profile);
ALTER TABLE workspaces ADD COLUMN retention_days integer;

-- Down Migration

ALTER TABLE workspaces DROP COLUMN retention_days;
DROP TABLE privacy_departures;
DROP TABLE suppressions;
DROP TABLE privacy_request_items;
DROP TABLE privacy_requests;
