-- The console (D17.28–32, D17.43): organization members and their browser sessions. Times
-- BIGINT Unix ms.
--
-- A person of an organization (account) with one role: owner | manager | finance | gate.
-- E-mail stored as given, matched lower-cased (D17.10); one member per e-mail per account.
CREATE TABLE org_members (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    email TEXT NOT NULL,
    email_lc TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX org_members_by_email ON org_members (account_id, email_lc);
CREATE INDEX org_members_by_email_lc ON org_members (email_lc, created_at);

-- A signed-in member's console session: the cookie's token is stored only as its keyed hash.
-- 12 h after its last use (sliding); ended by sign-out or by removing the member (the rows go
-- with the member).
CREATE TABLE console_sessions (
    token_hash TEXT PRIMARY KEY,
    member_id TEXT NOT NULL REFERENCES org_members(id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX console_sessions_by_member ON console_sessions (member_id);

-- The console member who asked for a withdrawal (NULL when asked through the API): a second
-- member approves it (four eyes, D17.30).
ALTER TABLE withdrawals ADD COLUMN requested_by TEXT;

-- The dashboard's figures are sums over one account's rows (D17.30: p99 under 50 ms with 10,000
-- payments). The ledger's sums (the console's gross and fees, the API's balance) read only this
-- index; the check-in counter (dashboard, gate page, live stream) counts only checked-in tickets.
CREATE INDEX ledger_sums ON ledger_entries (account_id, kind, settles_at, amount);
CREATE INDEX tickets_checked_in ON tickets (account_id) WHERE checked_in = 1;
