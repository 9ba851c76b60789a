-- Provider routing and recovery (issue 5): operator states of providers,
-- each node's circuit breaker reports, the sandbox providers' ledger, and
-- the recovery job's claim on a payment. Times are INTEGER unix
-- microseconds (UTC), as everywhere. No column holds card data.

-- +goose Up
-- A recovery job holds the payment until then (0: never claimed).
ALTER TABLE payments ADD COLUMN recovery_until INTEGER NOT NULL DEFAULT 0;
-- The recovery job's scan: payments still created, oldest first.
CREATE INDEX payments_created ON payments (created_at) WHERE status = 'created';

CREATE TABLE provider_states (
    provider_id TEXT PRIMARY KEY,
    drained     INTEGER NOT NULL CHECK (drained IN (0, 1)),
    updated_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE provider_breakers (
    node        TEXT NOT NULL,
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    provider_id TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('closed', 'half-open', 'open')),
    since       INTEGER NOT NULL,
    reported_at INTEGER NOT NULL,
    PRIMARY KEY (node, mode, provider_id)
) STRICT;
CREATE INDEX provider_breakers_reported ON provider_breakers (reported_at);

-- What the sandbox providers received, as a remote provider would keep it.
CREATE TABLE sandbox_ledger (
    provider_id  TEXT NOT NULL,
    payment_id   TEXT NOT NULL,
    mode         TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    amount       INTEGER NOT NULL,
    currency     TEXT NOT NULL,
    outcome      TEXT NOT NULL CHECK (outcome IN ('captured', 'authorized', 'pending_3ds', 'declined', 'errored')),
    provider_ref TEXT NOT NULL DEFAULT '',
    decline_code TEXT NOT NULL DEFAULT '',
    message      TEXT NOT NULL DEFAULT '',
    ready_at     INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (provider_id, payment_id)
) STRICT;

-- +goose Down
DROP TABLE sandbox_ledger;
DROP TABLE provider_breakers;
DROP TABLE provider_states;
DROP INDEX payments_created;
ALTER TABLE payments DROP COLUMN recovery_until;
