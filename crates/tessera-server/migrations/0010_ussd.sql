-- Votes by dial (D17.19–22). One row per gateway session, so a process restart mid-session
-- resumes where the caller was: the step the caller is on (JSON), the last screen shown (sent
-- again when a gateway repeats a request), how many inputs were consumed (Africa's Talking sends
-- every input so far in each request) and Hubtel's last Sequence. A session that confirmed a vote
-- keeps the vote's reference. Nalo has no session id: its sessions are keyed by the MSISDN.
-- Times BIGINT Unix ms; flags BIGINT 0/1.
CREATE TABLE ussd_sessions (
    account_id TEXT NOT NULL REFERENCES accounts(id),
    gateway TEXT NOT NULL,
    session_id TEXT NOT NULL,
    msisdn TEXT NOT NULL,
    network TEXT,
    step TEXT NOT NULL,
    screen TEXT NOT NULL,
    ended BIGINT NOT NULL DEFAULT 0,
    inputs BIGINT NOT NULL DEFAULT 0,
    sequence BIGINT NOT NULL DEFAULT 0,
    reference TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, gateway, session_id)
);
CREATE INDEX ussd_sessions_by_age ON ussd_sessions (updated_at);
-- A re-dial finds the phone's pending USSD vote (D17.22).
CREATE INDEX transactions_by_phone ON transactions (account_id, phone, created_at);
-- The code a caller types finds its nominee (codes are unique per campaign, D3.7).
CREATE INDEX participants_by_code ON participants (account_id, code);
