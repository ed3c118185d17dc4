-- The people lookup (store/control/lookup.ts) lists each payment customer without an owner (no
-- person, and not linked through its visitor): trigram indexes of those customers only, so that a
-- term common among the owned ones (whose emails their persons' often repeat) reads none of them.

-- Up Migration

CREATE INDEX payment_customers_unowned_id_trgm ON payment_customers USING gin (lower(customer_id) gin_trgm_ops)
  WHERE person_key IS NULL AND link_state <> 'linked';
CREATE INDEX payment_customers_unowned_email_trgm ON payment_customers USING gin (lower(email) gin_trgm_ops)
  WHERE person_key IS NULL AND link_state <> 'linked';

-- Down Migration

DROP INDEX payment_customers_unowned_email_trgm;
DROP INDEX payment_customers_unowned_id_trgm;
