-- Organization catalogue: campaigns, ticket types, participants, submissions and the audit log.
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
    -- Ticket types and participants created so far; conditional updates on these counters make
    -- "bootstrap only while empty" and "type fixed once it has children" race-free.
    ticket_type_count BIGINT NOT NULL DEFAULT 0,
    participant_count BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, slug)
);
CREATE INDEX campaigns_by_account ON campaigns (account_id, created_at);

CREATE TABLE ticket_types (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    name TEXT NOT NULL,
    description TEXT,
    ticket_type TEXT NOT NULL,
    price BIGINT NOT NULL,
    quantity_available BIGINT NOT NULL,
    -- Sold and held (reserved by pending payments) quantities; remaining is derived.
    quantity_sold BIGINT NOT NULL DEFAULT 0,
    quantity_held BIGINT NOT NULL DEFAULT 0,
    max_per_person BIGINT NOT NULL,
    status TEXT NOT NULL,
    required_attendee_fields TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX ticket_types_by_campaign ON ticket_types (campaign_id, created_at);
CREATE INDEX ticket_types_by_account ON ticket_types (account_id);

CREATE TABLE participants (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    campaign_id TEXT NOT NULL REFERENCES campaigns(id),
    name TEXT NOT NULL,
    code TEXT NOT NULL,
    search_text TEXT NOT NULL,
    description TEXT,
    image_url TEXT,
    status TEXT NOT NULL,
    votes BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (campaign_id, code)
);
CREATE INDEX participants_by_account ON participants (account_id, created_at);

CREATE TABLE submissions (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    campaign_id TEXT REFERENCES campaigns(id),
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    phone TEXT,
    message TEXT,
    fields TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX submissions_by_account ON submissions (account_id, created_at);

CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    key_id TEXT,
    action TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    request_id TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX audit_log_by_account ON audit_log (account_id, created_at);
