-- Provider routing and recovery (issue 5): operator states of providers,
-- each node's circuit breaker reports, the sandbox providers' ledger, and
-- the recovery job's claim on a payment. No column holds card data.

-- +goose Up
-- A recovery job holds the payment until then (NULL: never claimed).
ALTER TABLE payments ADD COLUMN recovery_until timestamptz;
-- The recovery job's scan: payments still created, oldest first.
CREATE INDEX payments_created_idx ON payments (created_at, seq) WHERE status = 'created';

CREATE TABLE provider_states (
    provider_id text PRIMARY KEY,
    drained     boolean NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE provider_breakers (
    node        text NOT NULL,
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    provider_id text NOT NULL,
    state       text NOT NULL CHECK (state IN ('closed', 'half-open', 'open')),
    since       timestamptz NOT NULL,
    reported_at timestamptz NOT NULL,
    PRIMARY KEY (node, mode, provider_id)
);
CREATE INDEX provider_breakers_reported_idx ON provider_breakers (reported_at);

-- What the sandbox providers received, as a remote provider would keep it.
CREATE TABLE sandbox_ledger (
    provider_id  text NOT NULL,
    payment_id   text NOT NULL,
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    amount       bigint NOT NULL,
    currency     text NOT NULL,
    outcome      text NOT NULL CHECK (outcome IN ('captured', 'authorized', 'pending_3ds', 'declined', 'errored')),
    provider_ref text NOT NULL DEFAULT '',
    decline_code text NOT NULL DEFAULT '',
    message      text NOT NULL DEFAULT '',
    ready_at     timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (provider_id, payment_id)
);

-- +goose Down
DROP TABLE sandbox_ledger;
DROP TABLE provider_breakers;
DROP TABLE provider_states;
DROP INDEX payments_created_idx;
ALTER TABLE payments DROP COLUMN recovery_until;
