-- The merchant dashboard (issue 8): its users, their sessions, the audit
-- log, when API keys were last used, and the indexes its pages read by.
-- Passwords are stored only as argon2id PHC strings and session tokens only
-- as their SHA-256.
--
-- The lists page newest first by (created_at, id) with keyset cursors, so
-- every list has an index in that order behind its equality filters: with a
-- million payments per merchant and mode a page stays an index range scan.
-- Every index slows the insert and update of a payment, so the payment list
-- has one index per filter, not per combination: the plain list, by status,
-- by currency, a customer's payments (by customer_id, which names one
-- merchant and mode), and payments_merchant_ref_idx, rebuilt here in list
-- order. ListPayments reads the most selective one a query allows
-- (reference, customer, currency, status, plain list); the other filters
-- are residual conditions, and dates are a range of every one of them.

-- +goose Up
CREATE TABLE users (
    id            text PRIMARY KEY,
    merchant_id   text NOT NULL REFERENCES merchants (id),
    email         text NOT NULL, -- lower-cased by the caller
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    CONSTRAINT users_email_key UNIQUE (email)
);
CREATE INDEX users_merchant_idx ON users (merchant_id);

CREATE TABLE sessions (
    id           text PRIMARY KEY,
    token_hash   bytea NOT NULL,
    user_id      text NOT NULL REFERENCES users (id),
    merchant_id  text NOT NULL REFERENCES merchants (id),
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    remote_addr  text NOT NULL DEFAULT '',
    CONSTRAINT sessions_token_hash_key UNIQUE (token_hash)
);
-- SetUserPassword revokes a user's other sessions.
CREATE INDEX sessions_user_idx ON sessions (user_id);

-- mode is '' for actions of no mode (sign-in, password change); user_id is
-- '' for a failed sign-in of no known user.
CREATE TABLE audit_log (
    id          text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode        text NOT NULL CHECK (mode IN ('', 'test', 'live')),
    user_id     text NOT NULL DEFAULT '',
    email       text NOT NULL DEFAULT '',
    action      text NOT NULL,
    target      text NOT NULL DEFAULT '',
    detail      text NOT NULL DEFAULT '',
    remote_addr text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL
);
CREATE INDEX audit_log_merchant_idx ON audit_log (merchant_id, created_at DESC, id DESC);

-- Written at most about once a minute per key, off the request path.
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

CREATE INDEX payments_list_idx ON payments (merchant_id, mode, created_at DESC, id DESC);
CREATE INDEX payments_list_status_idx ON payments (merchant_id, mode, status, created_at DESC, id DESC);
CREATE INDEX payments_currency_idx ON payments (merchant_id, mode, currency, created_at DESC, id DESC);
CREATE INDEX payments_customer_idx ON payments (customer_id, created_at DESC, id DESC);
-- In list order, keyset included; PaymentByMerchantRef reads it too (its
-- few rows of one reference are sorted by seq after created_at).
DROP INDEX payments_merchant_ref_idx;
CREATE INDEX payments_merchant_ref_idx ON payments (merchant_id, mode, merchant_ref, created_at DESC, id DESC)
    WHERE merchant_ref IS NOT NULL;

-- A payment's events and its refunds' events (they carry its id too).
CREATE INDEX events_payment_idx ON events (payment_id, created_at, seq) WHERE payment_id IS NOT NULL;

-- The customer list, and its search: by email, and by external id prefix
-- as a range in binary ("C") order, whatever the database's collation.
CREATE INDEX customers_list_idx ON customers (merchant_id, mode, created_at DESC, id DESC);
CREATE INDEX customers_email_idx ON customers (merchant_id, mode, lower(email)) WHERE email IS NOT NULL;
CREATE INDEX customers_external_prefix_idx ON customers (merchant_id, mode, (external_id COLLATE "C"));

-- +goose Down
DROP INDEX customers_external_prefix_idx;
DROP INDEX customers_email_idx;
DROP INDEX customers_list_idx;
DROP INDEX events_payment_idx;
DROP INDEX payments_merchant_ref_idx;
CREATE INDEX payments_merchant_ref_idx ON payments (merchant_id, mode, merchant_ref, created_at DESC, seq DESC)
    WHERE merchant_ref IS NOT NULL;
DROP INDEX payments_customer_idx;
DROP INDEX payments_currency_idx;
DROP INDEX payments_list_status_idx;
DROP INDEX payments_list_idx;
ALTER TABLE api_keys DROP COLUMN last_used_at;
DROP TABLE audit_log;
DROP TABLE sessions;
DROP TABLE users;
