-- The customers without an owner (no person, not linked through their visitor) in the people
-- lookup's page order (store/control/lookup.ts): a common term walks them and stops at the page's
-- end instead of reading every customer whose email holds it.

-- Up Migration

CREATE INDEX payment_customers_unowned ON payment_customers (workspace_id, ('c' || customer_id))
  WHERE person_key IS NULL AND link_state <> 'linked';

-- Down Migration

DROP INDEX payment_customers_unowned;
