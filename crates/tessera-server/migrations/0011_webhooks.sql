-- Outbound webhooks (D17.24–27, D17.41). Times BIGINT Unix ms.
--
-- An account's endpoints. The signing secret (`whsec_…`) is sealed with the master key (key id
-- `webhook:<endpoint id>`); after a rotation the previous one is kept, and signed with too, until
-- `previous_secret_until`. `event_types` is a JSON array, NULL for every type. `failing_since`
-- is the first failure of the current run of failures (5 days of them disable the endpoint).
-- The worker that delivers an endpoint's events holds it by `lease_owner`/`lease_until`; an
-- endpoint whose next event is not yet due is parked with `lease_until` at that time and no owner.
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    url TEXT NOT NULL,
    description TEXT,
    event_types TEXT,
    status TEXT NOT NULL,
    disabled_reason TEXT,
    secret_sealed TEXT NOT NULL,
    previous_secret_sealed TEXT,
    previous_secret_until BIGINT,
    failing_since BIGINT,
    lease_owner TEXT,
    lease_until BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_by_account ON webhook_endpoints (account_id, created_at);

-- The last sequence given to an account's events: bumped in the transaction that records an
-- event, so sequences are gap-free (a rolled-back change takes its number back with it).
CREATE TABLE event_sequences (
    account_id TEXT PRIMARY KEY REFERENCES accounts(id),
    last BIGINT NOT NULL
);

-- What happened, one row per event, written in the same transaction as the change it reports.
-- `data` is the JSON object exactly as delivered and as the feed shows it.
CREATE TABLE events (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    sequence BIGINT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, sequence)
);
CREATE INDEX events_by_time ON events (account_id, created_at);

-- One event to send to one endpoint: written with the event for every enabled endpoint that
-- takes its type, and again by a replay. Sent in `sequence` order per endpoint; `pending` until
-- a 2xx (`delivered`) or its retries are used up (`failed`).
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    event_id TEXT NOT NULL REFERENCES events(id),
    sequence BIGINT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (endpoint_id, status, sequence);

-- Every request made to an endpoint (test events included): the answer's status (NULL when
-- none came), how long it took, what went wrong and the start of the answer's body.
CREATE TABLE webhook_attempts (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    status_code BIGINT,
    duration_ms BIGINT NOT NULL,
    error TEXT,
    response TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, at);
