-- Visitors with events stored without a person. The DuckDB printer reads it to look up only those
-- visitors' links; here it is kept by the same writes (the events live in ClickHouse, whose printer
-- reads the links dictionary), so rows from before this migration say false.

-- Up Migration

ALTER TABLE visitors ADD COLUMN anonymous_events BOOLEAN NOT NULL DEFAULT false;

-- Down Migration

ALTER TABLE visitors DROP COLUMN anonymous_events;
