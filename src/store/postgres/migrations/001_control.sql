-- The control state on PostgreSQL: the tables of the control statements (store/control/*.ts) and
-- the ClickHouse outbox, as DuckDB's migrations leave them (store/duckdb/migrations.ts), without
-- the analytical tables, which live in ClickHouse. Instants are timestamptz; JSON kept as sent is
-- json, JSON merged inside the engine (traits) is jsonb.
--
-- Unique keys make every find-or-create race-free across API nodes: the second of two
-- transactions inserting the same identifier fails on the key and runs again, finding the first's
-- row (store/postgres/control.ts retries on the constraints named in RACED_CONSTRAINTS).

-- Up Migration

CREATE TABLE workspaces (
  workspace_id text PRIMARY KEY,
  name text NOT NULL,
  stripe_webhook_secret text,
  created_at timestamptz NOT NULL DEFAULT now(),
  payments_mode text DEFAULT 'live'
);
CREATE INDEX workspaces_by_name ON workspaces (name, created_at);

CREATE TABLE api_keys (
  key_hash text CONSTRAINT api_keys_hash PRIMARY KEY,
  workspace_id text NOT NULL,
  kind text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, kind);

-- Keys unique across workspaces, positive: a profile is a person's key or minus a visitor's.
CREATE SEQUENCE person_keys START 1;
CREATE SEQUENCE visitor_keys START 1;

CREATE TABLE persons (
  workspace_id text NOT NULL,
  person_key bigint PRIMARY KEY,
  person_id text NOT NULL,
  external_id text,
  email text,
  name text,
  traits jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CONSTRAINT persons_external_id UNIQUE (workspace_id, external_id),
  CONSTRAINT persons_email UNIQUE (workspace_id, email)
);

CREATE TABLE visitors (
  workspace_id text NOT NULL,
  visitor_key bigint PRIMARY KEY,
  visitor_id text NOT NULL,
  person_key bigint,
  first_seen_at timestamptz NOT NULL,
  linked_at timestamptz,
  CONSTRAINT visitors_visitor_id UNIQUE (workspace_id, visitor_id)
);

CREATE TABLE event_properties (
  workspace_id text NOT NULL,
  event_name text NOT NULL,
  path text NOT NULL,
  PRIMARY KEY (workspace_id, event_name, path)
);

CREATE TABLE event_messages (
  workspace_id text NOT NULL,
  message_id text NOT NULL,
  PRIMARY KEY (workspace_id, message_id)
);

CREATE TABLE processed_notifications (
  workspace_id text NOT NULL,
  notification_id text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, notification_id)
);

CREATE TABLE payment_objects (
  workspace_id text NOT NULL,
  object_id text NOT NULL,
  customer_id text NOT NULL,
  CONSTRAINT payment_objects_id PRIMARY KEY (workspace_id, object_id)
);

CREATE TABLE payment_customers (
  workspace_id text NOT NULL,
  customer_id text NOT NULL,
  email text,
  person_key bigint,
  visitor_key bigint,
  tr_user_id text,
  tr_visitor_id text,
  link_state text NOT NULL,
  updated_at timestamptz NOT NULL,
  tr_user_id_created timestamptz,
  tr_visitor_id_created timestamptz,
  customer_email text,
  customer_email_created timestamptz,
  payment_email text,
  payment_email_created timestamptz,
  CONSTRAINT payment_customers_id PRIMARY KEY (workspace_id, customer_id)
);
CREATE INDEX payment_customers_by_visitor ON payment_customers (workspace_id, visitor_key);

CREATE TABLE refunds (
  workspace_id text NOT NULL,
  refund_id text NOT NULL,
  customer_id text,
  charge_id text,
  payment_intent_id text,
  amount bigint,
  currency text,
  status text,
  created_at timestamptz NOT NULL,
  source_created timestamptz NOT NULL,
  CONSTRAINT refunds_id PRIMARY KEY (workspace_id, refund_id)
);

CREATE TABLE payments (
  workspace_id text NOT NULL,
  payment_id text NOT NULL,
  customer_id text,
  amount bigint,
  currency text,
  paid_at timestamptz,
  source text,
  invoice_id text,
  CONSTRAINT payments_id PRIMARY KEY (workspace_id, payment_id)
);

CREATE SEQUENCE audience_snapshot_ids START 1;
CREATE SEQUENCE audience_delivery_ids START 1;

CREATE TABLE audiences (
  workspace_id text NOT NULL,
  audience_id text NOT NULL,
  name text NOT NULL,
  criteria json NOT NULL,
  is_time_windowed boolean NOT NULL,
  refresh_every text NOT NULL,
  refresh_every_ms bigint NOT NULL,
  destinations json NOT NULL,
  status text NOT NULL,
  snapshot_id bigint,
  member_count bigint,
  last_refreshed_at timestamptz,
  next_refresh_at timestamptz NOT NULL,
  last_error text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, audience_id)
);
CREATE INDEX audiences_by_next_refresh ON audiences (next_refresh_at);

CREATE TABLE audience_snapshots (
  workspace_id text NOT NULL,
  audience_id text NOT NULL,
  snapshot_id bigint NOT NULL,
  previous_snapshot_id bigint,
  taken_at timestamptz NOT NULL,
  member_count bigint NOT NULL,
  added_count bigint NOT NULL,
  removed_count bigint NOT NULL,
  PRIMARY KEY (workspace_id, snapshot_id)
);
CREATE INDEX audience_snapshots_by_audience ON audience_snapshots (workspace_id, audience_id);

CREATE TABLE audience_deliveries (
  workspace_id text NOT NULL,
  delivery_id bigint NOT NULL,
  audience_id text NOT NULL,
  destination_id text NOT NULL,
  snapshot_id bigint NOT NULL,
  status text NOT NULL,
  next_page integer NOT NULL DEFAULT 0,
  skipped bigint NOT NULL DEFAULT 0,
  last_error text,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  base_snapshot_id bigint,
  sends_diff boolean,
  page_size integer,
  page_count integer,
  added_count bigint,
  removed_count bigint,
  PRIMARY KEY (workspace_id, delivery_id)
);
CREATE INDEX audience_deliveries_by_audience ON audience_deliveries (workspace_id, audience_id, destination_id, status);
CREATE INDEX audience_deliveries_pending ON audience_deliveries (status) WHERE status = 'pending';

CREATE TABLE audience_delivery_attempts (
  workspace_id text NOT NULL,
  delivery_id bigint NOT NULL,
  page integer NOT NULL,
  request text NOT NULL,
  attempt integer NOT NULL,
  ok boolean NOT NULL,
  http_status integer,
  error text,
  attempted_at timestamptz NOT NULL
);
CREATE INDEX audience_delivery_attempts_by_delivery ON audience_delivery_attempts (workspace_id, delivery_id);

CREATE TABLE audience_destinations (
  workspace_id text NOT NULL,
  audience_id text NOT NULL,
  destination_id text NOT NULL,
  acked_snapshot_id bigint NOT NULL
);
CREATE INDEX audience_destinations_by_destination ON audience_destinations (workspace_id, audience_id, destination_id);

CREATE TABLE audience_destination_changes (
  workspace_id text NOT NULL,
  audience_id text NOT NULL,
  destination_id text NOT NULL,
  change text NOT NULL,
  profile bigint NOT NULL
);
CREATE INDEX audience_destination_changes_by_profile ON audience_destination_changes (workspace_id, audience_id, destination_id, profile);

-- ANALYTICS_STORE=clickhouse: a committed unit's analytical rows until ClickHouse acknowledges them.
CREATE TABLE analytics_outbox (
  token text NOT NULL,
  table_name text NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX analytics_outbox_by_token ON analytics_outbox (token);
