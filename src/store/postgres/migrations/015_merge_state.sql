-- Person merges resumable (people/merge.ts): a merge is `pending` from its first transaction until
-- its later steps have moved everything of `from` (the finisher resumes those a stopped process
-- left); merges recorded before were complete when answered.

-- Up Migration

ALTER TABLE person_merges ADD COLUMN from_person_key bigint;
ALTER TABLE person_merges ADD COLUMN state text NOT NULL DEFAULT 'done';
CREATE INDEX person_merges_pending ON person_merges (created_at) WHERE state = 'pending';

-- Down Migration

DROP INDEX person_merges_pending;
ALTER TABLE person_merges DROP COLUMN state;
ALTER TABLE person_merges DROP COLUMN from_person_key;
