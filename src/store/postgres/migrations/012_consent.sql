-- Consent (decisions §12): the members each ad-platform destination does not hold because of their
-- ads consent, and the daily salts of cookieless visitor ids (as store/duckdb/migrations.ts adds them).

-- Up Migration

CREATE TABLE audience_consent_withheld (
  workspace_id text NOT NULL,
  audience_id text NOT NULL,
  destination_id text NOT NULL,
  profile bigint NOT NULL,
  PRIMARY KEY (workspace_id, audience_id, destination_id, profile)
);
CREATE TABLE visitor_salts (
  day text PRIMARY KEY,
  salt text NOT NULL,
  created_at timestamptz NOT NULL
);
