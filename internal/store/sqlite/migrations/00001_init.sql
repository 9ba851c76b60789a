-- The first schema of paygate on SQLite.
-- Times are INTEGER unix microseconds (UTC). JSON documents are TEXT.
-- Exact byte strings (hashes, fingerprints, response bodies, event payloads)
-- are BLOB. "None" is '' for text columns, as in the domain, except where
-- NULL carries meaning (expiry, revocation, billing, email).
-- No column holds a card number or a CVV.

-- +goose Up
CREATE TABLE instance_secrets (
    name       TEXT PRIMARY KEY,
    value      BLOB NOT NULL
) STRICT;

CREATE TABLE merchants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX merchants_created ON merchants (created_at);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    type        TEXT NOT NULL CHECK (type IN ('secret', 'public')),
    hash        BLOB NOT NULL UNIQUE,
    hint        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER
) STRICT;
CREATE INDEX api_keys_merchant ON api_keys (merchant_id, created_at);

CREATE TABLE webhook_endpoints (
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    events      TEXT NOT NULL, -- JSON array of event names; [] means all
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, mode)
) STRICT;

CREATE TABLE idempotency_keys (
    merchant_id TEXT NOT NULL,
    mode        TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('in_flight', 'complete')),
    status_code INTEGER NOT NULL DEFAULT 0,
    body        BLOB,
    payment_id  TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, mode, key)
) STRICT;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

CREATE TABLE customers (
    id          TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    external_id TEXT NOT NULL,
    email       TEXT,
    metadata    TEXT NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (merchant_id, mode, external_id)
) STRICT;

CREATE TABLE payments (
    id                 TEXT PRIMARY KEY,
    merchant_id        TEXT NOT NULL REFERENCES merchants (id),
    mode               TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    customer_id        TEXT NOT NULL REFERENCES customers (id),
    provider_id        TEXT NOT NULL DEFAULT '',
    provider_ref       TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL,
    amount             INTEGER NOT NULL,
    currency           TEXT NOT NULL,
    amount_text        TEXT NOT NULL,
    amount_captured    INTEGER NOT NULL DEFAULT 0,
    -- Sum of the refunds that are not failed; kept here so that one
    -- conditional UPDATE guards the refund limit.
    amount_refunded    INTEGER NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0),
    method             TEXT NOT NULL,
    stored_card_id     TEXT NOT NULL DEFAULT '',
    merchant_ref       TEXT NOT NULL DEFAULT '',
    error_code         TEXT NOT NULL DEFAULT '',
    error_message      TEXT NOT NULL DEFAULT '',
    decline_code       TEXT NOT NULL DEFAULT '',
    card_brand         TEXT NOT NULL DEFAULT '',
    card_last4         TEXT NOT NULL DEFAULT '',
    card_exp_month     INTEGER NOT NULL DEFAULT 0,
    card_exp_year      INTEGER NOT NULL DEFAULT 0,
    card_holder_name   TEXT NOT NULL DEFAULT '',
    card_fingerprint   TEXT NOT NULL DEFAULT '',
    billing            TEXT, -- JSON object, NULL when none
    return_url         TEXT NOT NULL DEFAULT '',
    device_fingerprint TEXT NOT NULL DEFAULT '',
    metadata           TEXT NOT NULL DEFAULT '{}',
    idempotency_key    TEXT NOT NULL DEFAULT '',
    lease_until        INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX payments_merchant_ref ON payments (merchant_id, mode, merchant_ref, created_at);
CREATE INDEX payments_status_lease ON payments (status, lease_until);

CREATE TABLE refunds (
    id             TEXT PRIMARY KEY,
    merchant_id    TEXT NOT NULL REFERENCES merchants (id),
    mode           TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    payment_id     TEXT NOT NULL REFERENCES payments (id),
    amount         INTEGER NOT NULL CHECK (amount > 0),
    currency       TEXT NOT NULL,
    amount_text    TEXT NOT NULL,
    reason         TEXT NOT NULL DEFAULT '',
    status         TEXT NOT NULL,
    provider_id    TEXT NOT NULL DEFAULT '',
    provider_ref   TEXT NOT NULL DEFAULT '',
    failure_reason TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX refunds_payment ON refunds (payment_id, created_at);
CREATE INDEX refunds_status ON refunds (status, updated_at);

-- The outbox. seq keeps the insertion order among events of one instant.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    merchant_id TEXT NOT NULL,
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    type        TEXT NOT NULL,
    payment_id  TEXT NOT NULL DEFAULT '',
    refund_id   TEXT NOT NULL DEFAULT '',
    payload     BLOB NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX events_merchant ON events (merchant_id, mode, created_at, seq);

-- +goose Down
DROP TABLE events;
DROP TABLE refunds;
DROP TABLE payments;
DROP TABLE customers;
DROP TABLE idempotency_keys;
DROP TABLE webhook_endpoints;
DROP TABLE api_keys;
DROP TABLE merchants;
DROP TABLE instance_secrets;
