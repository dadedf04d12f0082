-- Refunds and cancelled campaigns (D17.33–38, D17.42). Money BIGINT pesewas, times BIGINT Unix
-- ms, flags BIGINT 0/1, lists TEXT JSON.
--
-- A refund of (part of) a successful payment. Its effects are written with it (tickets voided,
-- votes taken back, the donation marked, the ledger hold) and undone if the provider fails it.
-- Its id is its reference at the provider, so a retried create never refunds twice.
CREATE TABLE refunds (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    transaction_reference TEXT NOT NULL REFERENCES transactions(reference),
    provider TEXT NOT NULL,
    amount BIGINT NOT NULL,
    -- pending | succeeded | failed
    status TEXT NOT NULL,
    reason TEXT,
    -- The codes of the tickets this refund voided (JSON array; empty for votes and donations).
    ticket_codes TEXT NOT NULL,
    -- Votes taken back from the participant at creation (given back on failure).
    votes BIGINT NOT NULL DEFAULT 0,
    -- Filed by a campaign cancellation (D17.37): at most one per payment.
    campaign_cancel BIGINT NOT NULL DEFAULT 0,
    -- NULL for refunds a cancellation filed.
    idempotency_key TEXT,
    provider_refund_id TEXT,
    -- Set once the provider is known to hold the refund.
    provider_created BIGINT NOT NULL DEFAULT 0,
    failure_reason TEXT,
    -- First unanswered provider call of the current outage (D16.8: 24 h fails an uncreated refund).
    provider_down_since BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX refunds_by_transaction ON refunds (transaction_reference, created_at);
CREATE INDEX refunds_by_account ON refunds (account_id, created_at);
CREATE UNIQUE INDEX refunds_one_cancel_per_payment ON refunds (transaction_reference) WHERE campaign_cancel = 1;

-- What pending and succeeded refunds claim of the payment (the ceiling: a conditional UPDATE
-- keeps it at most `amount`), and what succeeded refunds gave back.
ALTER TABLE transactions ADD COLUMN refund_claimed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE transactions ADD COLUMN refunded BIGINT NOT NULL DEFAULT 0;
-- The refund that voided the ticket (NULL while valid).
ALTER TABLE tickets ADD COLUMN void_refund_id TEXT;
CREATE INDEX tickets_by_void_refund ON tickets (void_refund_id);
-- Pesewas of the donation that pending and succeeded refunds claim.
ALTER TABLE donations ADD COLUMN refunded BIGINT NOT NULL DEFAULT 0;
-- A cancellation (D17.37): when, why, and whether it refunds every buyer (a `campaign_cancel`
-- job files those refunds in batches).
ALTER TABLE campaigns ADD COLUMN cancelled_at BIGINT;
ALTER TABLE campaigns ADD COLUMN cancel_reason TEXT;
ALTER TABLE campaigns ADD COLUMN cancel_refund BIGINT NOT NULL DEFAULT 0;
