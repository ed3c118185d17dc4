-- Person merges (people/merge.ts): the record of every merge, and the identifiers of merged-away
-- persons, which resolve to the person they were merged into (as store/duckdb/migrations.ts adds them).

-- Up Migration

CREATE TABLE person_merges (
  workspace_id text NOT NULL,
  merge_id text NOT NULL,
  from_person_id text NOT NULL,
  into_person_id text NOT NULL,
  into_person_key bigint NOT NULL,
  current_person_key bigint NOT NULL,
  forced boolean NOT NULL,
  visitors bigint NOT NULL,
  customers bigint NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, merge_id)
);
CREATE INDEX person_merges_by_person ON person_merges (workspace_id, current_person_key);
CREATE TABLE person_aliases (
  workspace_id text NOT NULL,
  kind text NOT NULL,
  value text NOT NULL,
  person_key bigint NOT NULL,
  PRIMARY KEY (workspace_id, kind, value)
);
CREATE INDEX person_aliases_by_person ON person_aliases (workspace_id, person_key);

-- Down Migration

DROP TABLE person_aliases;
DROP TABLE person_merges;
