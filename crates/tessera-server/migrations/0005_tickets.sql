-- Tickets at the gate and in the customer's hands (D7, D8, D9.2, D13): one-time passcode
-- challenges, customer sessions, and what notification delivery needs beyond 0003.
-- Times BIGINT Unix ms.

-- A passcode sent to a recipient. Shared by my-tickets (purpose `my_tickets`, campaign-scoped)
-- and the reseller portal's sign-in and `otp/send` challenges (D15.4, D16.16), hence the
-- channel, recipient, purpose and nullable account and campaign. Only the keyed hash of the
-- code is kept.
CREATE TABLE otp_challenges (
    id TEXT PRIMARY KEY,
    account_id TEXT REFERENCES accounts(id),
    campaign_id TEXT,
    channel TEXT NOT NULL,
    recipient TEXT NOT NULL,
    purpose TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    -- Whether a code was actually sent (false when the recipient holds no ticket: the
    -- challenge exists so that the answer does not reveal it, but no code can match).
    sent BIGINT NOT NULL DEFAULT 0,
    attempts BIGINT NOT NULL DEFAULT 0,
    expires_at BIGINT NOT NULL,
    consumed_at BIGINT,
    created_at BIGINT NOT NULL
);
-- Resend cooldown and hourly cap look up the recipient's recent challenges.
CREATE INDEX otp_challenges_by_recipient ON otp_challenges (purpose, recipient, created_at);

-- A verified holder of tickets: bound to an account, a campaign and an e-mail (D8.3). The
-- token itself is never stored, only its keyed hash.
CREATE TABLE customer_sessions (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    campaign_id TEXT NOT NULL,
    email TEXT NOT NULL,
    challenge_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

-- Listing notifications by status and channel.
CREATE INDEX notifications_by_account_status ON notifications (account_id, status, created_at);
