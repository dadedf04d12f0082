-- Foundation: accounts, their domains, API keys and settings.
-- Portable SQL for SQLite and PostgreSQL: TEXT ids (UUID v7), BIGINT Unix-ms times,
-- BIGINT 0/1 flags, JSON as TEXT, money as BIGINT pesewas.
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    slug TEXT NOT NULL UNIQUE,
    platform_name TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE domains (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    hostname TEXT NOT NULL UNIQUE,
    is_primary BIGINT NOT NULL DEFAULT 0,
    verified BIGINT NOT NULL DEFAULT 0,
    ssl_status TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX domains_by_account ON domains (account_id);

CREATE TABLE api_keys (
    key_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    campaign_id TEXT,
    scopes TEXT NOT NULL,
    capabilities TEXT NOT NULL,
    -- public and campaign keys: keyed hash of the secret; private keys: AEAD ciphertext.
    secret_hash TEXT,
    secret_sealed TEXT,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_by_account ON api_keys (account_id);

CREATE TABLE settings (
    account_id TEXT NOT NULL REFERENCES accounts(id),
    category TEXT NOT NULL,
    config TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, category)
);

-- Bumped by every change that the in-memory auth cache mirrors (keys, account status,
-- domains), by the server and the operator CLI alike; servers poll it.
CREATE TABLE auth_generation (
    id BIGINT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO auth_generation (id, value) VALUES (1, 0);
