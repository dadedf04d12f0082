-- The reseller portal (D10, D15, D16.14–19): users, reseller profiles, their members and
-- invitations, and portal sessions. Portable SQL as in 0001: TEXT ids (UUID v7), BIGINT Unix-ms
-- times, JSON as TEXT. Sign-in and `otp/send` passcodes use `otp_challenges` of 0005; approval
-- requests use `approval_requests` of 0004.

-- A person who signs in to the portal. E-mail is stored lower-cased, unique (D15.1).
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- One per reseller account. status: draft | enabled | suspended | disabled (D10.2).
CREATE TABLE reseller_profiles (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL UNIQUE REFERENCES accounts(id),
    status TEXT NOT NULL,
    require_sub_creator_approval BIGINT NOT NULL DEFAULT 0,
    allow_public_signup BIGINT NOT NULL DEFAULT 0,
    -- low | medium | high
    risk_level TEXT NOT NULL,
    settings TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- A member of a reseller's team, or an invitation (user_id NULL, email set, status pending).
-- member_type: owner | operator | finance | support | sub_creator; status: pending | active |
-- suspended | revoked (D15.2). roles and permissions: JSON arrays of names (D10.4, D16.14).
CREATE TABLE reseller_members (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    user_id TEXT REFERENCES users(id),
    email TEXT,
    creator_id TEXT,
    member_type TEXT NOT NULL,
    display_name TEXT,
    roles TEXT NOT NULL,
    permissions TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX reseller_members_by_account ON reseller_members (account_id, created_at);
CREATE INDEX reseller_members_by_user ON reseller_members (user_id);
CREATE INDEX reseller_members_by_email ON reseller_members (email);

-- A signed-in user: only the keyed hash of the opaque token is kept. expires_at slides to
-- 12 h after the last use; revoked_at ends it (logout, member suspended or revoked).
CREATE TABLE portal_sessions (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    member_id TEXT NOT NULL REFERENCES reseller_members(id),
    account_id TEXT NOT NULL REFERENCES accounts(id),
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX portal_sessions_by_member ON portal_sessions (member_id);
