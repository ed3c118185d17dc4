-- The passes that took up each privacy request: one that keeps failing is marked failed after
-- MAX_ATTEMPTS (privacy/worker.ts), never left running (as store/duckdb/migrations.ts adds it).

-- Up Migration

ALTER TABLE privacy_requests ADD COLUMN attempts integer NOT NULL DEFAULT 0;

-- Down Migration

ALTER TABLE privacy_requests DROP COLUMN attempts;
