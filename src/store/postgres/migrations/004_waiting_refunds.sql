-- Refunds kept without a payer (their charge or payment intent not seen yet) are found by that
-- charge or payment intent when a group of notifications names it (store/control/payments.ts
-- readRefunds): partial indexes hold only those refunds, so the lookup reads none of the others.

-- Up Migration

CREATE INDEX refunds_waiting_on_charge ON refunds (workspace_id, charge_id) WHERE customer_id IS NULL;
CREATE INDEX refunds_waiting_on_payment_intent ON refunds (workspace_id, payment_intent_id) WHERE customer_id IS NULL;

-- Down Migration

DROP INDEX refunds_waiting_on_payment_intent;
DROP INDEX refunds_waiting_on_charge;
