-- A charge's refunds are read together whenever a notification names the charge, whatever their
-- payer (store/control/payments.ts readRefunds): they are reconciled with its amount_refunded.

-- Up Migration

CREATE INDEX refunds_by_charge ON refunds (workspace_id, charge_id);
DROP INDEX refunds_waiting_on_charge;

-- Down Migration

CREATE INDEX refunds_waiting_on_charge ON refunds (workspace_id, charge_id) WHERE customer_id IS NULL;
DROP INDEX refunds_by_charge;
