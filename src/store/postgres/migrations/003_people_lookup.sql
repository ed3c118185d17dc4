-- People lookup (GET /people, store/control/lookup.ts): trigram indexes (pg_trgm, a trusted
-- extension shipped with PostgreSQL: a database owner may create it) on the lowercased columns a
-- term is searched in, which answer `lower(column) LIKE '%term%'` without reading every row; and
-- the keys that find the customers of the persons on a page, directly or through their visitors.

-- Up Migration

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX persons_email_trgm ON persons USING gin (lower(email) gin_trgm_ops);
CREATE INDEX persons_external_id_trgm ON persons USING gin (lower(external_id) gin_trgm_ops);
CREATE INDEX persons_name_trgm ON persons USING gin (lower(name) gin_trgm_ops);
CREATE INDEX payment_customers_id_trgm ON payment_customers USING gin (lower(customer_id) gin_trgm_ops);
CREATE INDEX payment_customers_email_trgm ON payment_customers USING gin (lower(email) gin_trgm_ops);

CREATE INDEX payment_customers_by_person ON payment_customers (workspace_id, person_key);
CREATE INDEX visitors_by_person ON visitors (workspace_id, person_key);
