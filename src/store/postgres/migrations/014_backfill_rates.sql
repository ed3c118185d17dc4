-- Where a Stripe backfill stopped, per object type, and the exchange rates revenue reports convert
-- at (as store/duckdb/migrations.ts adds them).

-- Up Migration

CREATE TABLE stripe_backfill_cursors (
  workspace_id text NOT NULL,
  object_type text NOT NULL,
  since text,
  last_id text,
  done boolean NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, object_type)
);
CREATE TABLE exchange_rates (
  workspace_id text NOT NULL,
  currency text NOT NULL,
  day date NOT NULL,
  per_eur double precision NOT NULL,
  PRIMARY KEY (workspace_id, currency, day)
);

-- Down Migration

DROP TABLE exchange_rates;
DROP TABLE stripe_backfill_cursors;
