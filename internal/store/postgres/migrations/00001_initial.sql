-- The initial schema of paygate on PostgreSQL.
--
-- Conventions: ids are text (canonical UUID strings); money is bigint minor
-- units beside the currency and the amount text exactly as submitted; times
-- are timestamptz at microsecond precision; merchant JSON (metadata) is text
-- so that it comes back byte for byte; hashes and stored response bodies are
-- bytea; optional strings are NULL when empty. seq (an identity) breaks ties
-- between equal created_at values in insertion order wherever a listing is
-- ordered by time. Every merchant-owned table carries merchant_id and mode,
-- and every read of merchant data filters by both.

-- +goose Up
CREATE TABLE instance_secrets (
    name       text PRIMARY KEY,
    value      bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE merchants (
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    id         text PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX merchants_created_at_idx ON merchants (created_at, seq);

CREATE TABLE api_keys (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    id          text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    type        text NOT NULL CHECK (type IN ('secret', 'public')),
    hash        bytea NOT NULL,
    hint        text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    revoked_at  timestamptz,
    CONSTRAINT api_keys_hash_key UNIQUE (hash)
);
CREATE INDEX api_keys_merchant_idx ON api_keys (merchant_id, created_at, seq);

CREATE TABLE webhook_endpoints (
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    url         text NOT NULL,
    secret      text NOT NULL,
    events      text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (merchant_id, mode)
);

CREATE TABLE idempotency_keys (
    merchant_id text NOT NULL,
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    key         text NOT NULL,
    fingerprint bytea NOT NULL,
    state       text NOT NULL CHECK (state IN ('in_flight', 'complete')),
    status_code integer NOT NULL DEFAULT 0,
    body        bytea,
    payment_id  text,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (merchant_id, mode, key)
);
-- PurgeIdempotency deletes by age.
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

CREATE TABLE customers (
    id          text PRIMARY KEY,
    merchant_id text NOT NULL,
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    external_id text NOT NULL,
    email       text,
    metadata    text NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    CONSTRAINT customers_external_id_key UNIQUE (merchant_id, mode, external_id)
);

CREATE TABLE payments (
    seq                bigint GENERATED ALWAYS AS IDENTITY,
    id                 text PRIMARY KEY,
    merchant_id        text NOT NULL,
    mode               text NOT NULL CHECK (mode IN ('test', 'live')),
    customer_id        text NOT NULL REFERENCES customers (id),
    provider_id        text,
    provider_ref       text,
    status             text NOT NULL CHECK (status IN
        ('created', 'captured', 'authorized', 'pending_3ds', 'pending_consent', 'failed', 'voided')),
    amount             bigint NOT NULL,
    currency           text NOT NULL,
    amount_text        text NOT NULL,
    amount_captured    bigint NOT NULL DEFAULT 0,
    amount_refunded    bigint NOT NULL DEFAULT 0,
    method             text NOT NULL,
    stored_card_id     text,
    merchant_ref       text,
    error_code         text,
    error_message      text,
    decline_code       text,
    card_brand         text NOT NULL DEFAULT '',
    card_last4         text NOT NULL DEFAULT '',
    card_exp_month     integer NOT NULL DEFAULT 0,
    card_exp_year      integer NOT NULL DEFAULT 0,
    card_holder_name   text NOT NULL DEFAULT '',
    card_fingerprint   text NOT NULL DEFAULT '',
    billing            jsonb,
    return_url         text,
    device_fingerprint text,
    metadata           text NOT NULL DEFAULT '{}',
    idempotency_key    text,
    lease_until        timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    -- The refund limit, guarded once more by the database itself.
    CONSTRAINT payments_refund_limit CHECK (amount_refunded >= 0 AND amount_refunded <= amount_captured)
);
-- PaymentByMerchantRef: the newest payment of (merchant, mode) with the reference.
CREATE INDEX payments_merchant_ref_idx ON payments (merchant_id, mode, merchant_ref, created_at DESC, seq DESC)
    WHERE merchant_ref IS NOT NULL;

CREATE TABLE refunds (
    seq            bigint GENERATED ALWAYS AS IDENTITY,
    id             text PRIMARY KEY,
    merchant_id    text NOT NULL,
    mode           text NOT NULL CHECK (mode IN ('test', 'live')),
    payment_id     text NOT NULL REFERENCES payments (id),
    amount         bigint NOT NULL CHECK (amount > 0),
    currency       text NOT NULL,
    amount_text    text NOT NULL,
    reason         text,
    status         text NOT NULL CHECK (status IN ('created', 'pending', 'succeeded', 'failed')),
    provider_id    text,
    provider_ref   text,
    failure_reason text,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
-- RefundsByPayment, newest first.
CREATE INDEX refunds_payment_idx ON refunds (payment_id, created_at DESC, seq DESC);
-- RefundsToProcess: only the unfinished refunds are indexed.
CREATE INDEX refunds_to_process_idx ON refunds (created_at, seq) WHERE status IN ('created', 'pending');

CREATE TABLE events (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    id          text PRIMARY KEY,
    merchant_id text NOT NULL,
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    type        text NOT NULL,
    payment_id  text,
    refund_id   text,
    payload     bytea NOT NULL,
    created_at  timestamptz NOT NULL
);
-- EventsByMerchant, oldest first; seq orders events written in one transaction.
CREATE INDEX events_merchant_idx ON events (merchant_id, mode, created_at, seq);

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
