-- Audience splits (decisions §14): the splits as JSON, and each audience's own salt that places its
-- members (as store/duckdb/migrations.ts adds them). Audiences saved before get a salt of their own.

-- Up Migration

ALTER TABLE audiences ADD COLUMN splits json NOT NULL DEFAULT '[]';
ALTER TABLE audiences ADD COLUMN split_salt text;
UPDATE audiences SET split_salt = md5(random()::text || audience_id);
ALTER TABLE audiences ALTER COLUMN split_salt SET NOT NULL;

-- Down Migration

ALTER TABLE audiences DROP COLUMN split_salt;
ALTER TABLE audiences DROP COLUMN splits;
