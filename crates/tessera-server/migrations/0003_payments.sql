-- Payments: transactions, what they fulfil (tickets, votes, donations), the append-only ledger,
-- stored provider webhooks, queued notifications, and the job queue workers claim with a lease.
-- Money is BIGINT pesewas; times BIGINT Unix ms; flags BIGINT 0/1.
CREATE TABLE transactions (
    reference TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    transaction_type TEXT NOT NULL,
    status TEXT NOT NULL,
    -- What the customer is charged, the fee on the price, and the price of what is bought.
    amount BIGINT NOT NULL,
    fees BIGINT NOT NULL,
    price BIGINT NOT NULL,
    currency TEXT NOT NULL,
    provider TEXT,
    channel TEXT NOT NULL,
    email TEXT NOT NULL,
    phone TEXT,
    full_name TEXT,
    callback_url TEXT,
    description TEXT,
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    ticket_type_id TEXT REFERENCES ticket_types(id),
    participant_id TEXT REFERENCES participants(id),
    -- Tickets bought, or votes bought.
    quantity BIGINT NOT NULL,
    metadata TEXT NOT NULL,
    authorization_url TEXT,
    access_code TEXT,
    -- Units of the ticket type this transaction holds right now (0 once released or sold).
    reserved BIGINT NOT NULL DEFAULT 0,
    -- Set once, by the one transaction that credits the ledger: the guard against paying twice.
    credited BIGINT NOT NULL DEFAULT 0,
    fulfilled BIGINT NOT NULL DEFAULT 0,
    mismatch BIGINT NOT NULL DEFAULT 0,
    paid_late BIGINT NOT NULL DEFAULT 0,
    hold_expires_at BIGINT NOT NULL,
    paid_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX transactions_by_account ON transactions (account_id, created_at);

CREATE TABLE tickets (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    ticket_type_id TEXT NOT NULL REFERENCES ticket_types(id),
    transaction_reference TEXT NOT NULL REFERENCES transactions(reference),
    ticket_code TEXT NOT NULL UNIQUE,
    qr_token TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    attendee_name TEXT,
    attendee_email TEXT NOT NULL,
    checked_in BIGINT NOT NULL DEFAULT 0,
    checked_in_at BIGINT,
    checked_in_by TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX tickets_by_transaction ON tickets (transaction_reference);
CREATE INDEX tickets_by_campaign_email ON tickets (campaign_id, attendee_email);

CREATE TABLE donations (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    transaction_reference TEXT NOT NULL UNIQUE REFERENCES transactions(reference),
    amount BIGINT NOT NULL,
    email TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- Append-only. A balance is a sum. One entry of a kind per reference: a second credit of the
-- same charge cannot be written, whatever the code above it does.
CREATE TABLE ledger_entries (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    amount BIGINT NOT NULL,
    reference TEXT NOT NULL,
    settles_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (kind, reference)
);
CREATE INDEX ledger_by_account ON ledger_entries (account_id, created_at);

-- Verified provider callbacks, stored before they are answered (durable hand-off).
CREATE TABLE webhook_events (
    id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    event_key TEXT NOT NULL,
    event TEXT NOT NULL,
    reference TEXT NOT NULL,
    payload TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    processed_at BIGINT,
    outcome TEXT,
    UNIQUE (provider, event_key)
);

CREATE TABLE notifications (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    channel TEXT NOT NULL,
    event_type TEXT NOT NULL,
    recipient TEXT NOT NULL,
    subject TEXT,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    sent_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX notifications_by_account ON notifications (account_id, created_at);

-- Work that outlives a request. A worker claims a due job by setting lease_until in the future
-- (a job whose worker died is claimed again once its lease ran out) and deletes it in the same
-- transaction as the effect it finishes.
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    queue TEXT NOT NULL,
    subject TEXT NOT NULL,
    run_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL DEFAULT 0,
    claimed_by TEXT,
    attempts BIGINT NOT NULL DEFAULT 0,
    -- Doubling delays (verify polling, provider retries) carry their last step here.
    step_ms BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    UNIQUE (queue, subject)
);
CREATE INDEX jobs_due ON jobs (queue, run_at);
