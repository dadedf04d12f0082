-- Withdrawals (D9.1, D14, D16.12–13): payout requests with their ledger hold, the idempotency
-- keys of POST /withdrawals, and approval requests (D16.19; general: the reseller portal files
-- and decides other entity types in the same table). Money BIGINT pesewas, times BIGINT Unix ms.
CREATE TABLE withdrawals (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    -- awaiting_approval | pending | processing | completed | failed | cancelled
    status TEXT NOT NULL,
    amount BIGINT NOT NULL,
    currency TEXT NOT NULL,
    bank_name TEXT NOT NULL,
    bank_code TEXT NOT NULL,
    account_number TEXT NOT NULL,
    account_name TEXT NOT NULL,
    -- The payout provider chosen at creation; its transfer's reference is this row's id.
    provider TEXT NOT NULL,
    failure_reason TEXT,
    idempotency_key TEXT NOT NULL,
    -- Set once the provider is known to hold the transfer (created or adopted).
    transfer_created BIGINT NOT NULL DEFAULT 0,
    -- First unanswered provider call of the current outage (D16.8: 24 h fails the payout).
    provider_down_since BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX withdrawals_by_account ON withdrawals (account_id, created_at);

-- One row per (account, key): claimed in the transaction that creates the withdrawal, holding
-- the first answer for replays until expires_at.
CREATE TABLE idempotency_keys (
    account_id TEXT NOT NULL REFERENCES accounts(id),
    idem_key TEXT NOT NULL,
    -- SHA-256 hex of the canonical JSON body (keys sorted, no spacing).
    request_hash TEXT NOT NULL,
    -- in_flight | done
    status TEXT NOT NULL,
    response_status BIGINT,
    response_body TEXT,
    original_request_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, idem_key)
);

CREATE TABLE approval_requests (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    entity_type TEXT NOT NULL,
    -- pending | approved | rejected | cancelled
    status TEXT NOT NULL,
    reason TEXT,
    request_payload TEXT NOT NULL,
    -- NULL for requests Tessera files itself (a withdrawal above the threshold).
    requested_by TEXT,
    decided_by TEXT,
    note TEXT,
    created_at BIGINT NOT NULL,
    decided_at BIGINT
);
CREATE INDEX approval_requests_by_account ON approval_requests (account_id, status, created_at);
