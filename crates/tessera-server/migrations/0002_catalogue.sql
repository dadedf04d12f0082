-- Organization catalogue: campaigns (and, below, what hangs off them).
-- Lower-cased copies of searchable text are computed by the application, so that
-- case-insensitive search behaves the same on SQLite and PostgreSQL.
CREATE TABLE campaigns (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    title TEXT NOT NULL,
    slug TEXT NOT NULL,
    search_text TEXT NOT NULL,
    description TEXT NOT NULL,
    campaign_type TEXT NOT NULL,
    status TEXT NOT NULL,
    start_date BIGINT NOT NULL,
    end_date BIGINT NOT NULL,
    vote_price BIGINT,
    verification_required BIGINT NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, slug)
);
CREATE INDEX campaigns_by_account ON campaigns (account_id, created_at);
