-- The merchant dashboard (issue 8): its users, their sessions, the audit
-- log, when API keys were last used, and the indexes its pages read by.
-- Passwords are stored only as argon2id PHC strings and session tokens only
-- as their SHA-256. Times are INTEGER unix microseconds (UTC), as everywhere.
--
-- The lists page newest first by (created_at, id) with keyset cursors, so
-- every list has an index in that order behind its equality filters: with a
-- million payments per merchant and mode a page stays an index range scan.
-- Every index slows the insert and update of a payment, so the payment list
-- has one index per filter, not per combination: the plain list, by status,
-- by currency, a customer's payments (by customer_id, which names one
-- merchant and mode), and payments_merchant_ref, rebuilt here in list
-- order. ListPayments reads the most selective one a query allows
-- (reference, customer, currency, status, plain list); the other filters
-- are residual conditions, and dates are a range of every one of them.

-- +goose Up
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    merchant_id   TEXT NOT NULL REFERENCES merchants (id),
    email         TEXT NOT NULL UNIQUE, -- lower-cased by the caller
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX users_merchant ON users (merchant_id);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    token_hash   BLOB NOT NULL UNIQUE,
    user_id      TEXT NOT NULL REFERENCES users (id),
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    remote_addr  TEXT NOT NULL DEFAULT ''
) STRICT;
-- SetUserPassword revokes a user's other sessions.
CREATE INDEX sessions_user ON sessions (user_id);

-- mode is '' for actions of no mode (sign-in, password change); user_id is
-- '' for a failed sign-in of no known user.
CREATE TABLE audit_log (
    id          TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    mode        TEXT NOT NULL CHECK (mode IN ('', 'test', 'live')),
    user_id     TEXT NOT NULL DEFAULT '',
    email       TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL,
    target      TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT '',
    remote_addr TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_log_merchant ON audit_log (merchant_id, created_at DESC, id DESC);

-- Written at most about once a minute per key, off the request path.
ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;

CREATE INDEX payments_list ON payments (merchant_id, mode, created_at DESC, id DESC);
CREATE INDEX payments_list_status ON payments (merchant_id, mode, status, created_at DESC, id DESC);
CREATE INDEX payments_currency ON payments (merchant_id, mode, currency, created_at DESC, id DESC);
CREATE INDEX payments_customer ON payments (customer_id, created_at DESC, id DESC);
-- In list order, keyset included; PaymentByMerchantRef reads it too (its
-- few rows of one reference are sorted by insertion after created_at).
DROP INDEX payments_merchant_ref;
CREATE INDEX payments_merchant_ref ON payments (merchant_id, mode, merchant_ref, created_at DESC, id DESC);

-- A payment's events and its refunds' events (they carry its id too).
CREATE INDEX events_payment ON events (payment_id, created_at, seq) WHERE payment_id <> '';

-- The customer list; search by external id prefix uses the unique
-- (merchant_id, mode, external_id) index, by email this one.
CREATE INDEX customers_list ON customers (merchant_id, mode, created_at DESC, id DESC);
CREATE INDEX customers_email ON customers (merchant_id, mode, lower(email)) WHERE email IS NOT NULL;

-- +goose Down
DROP INDEX customers_email;
DROP INDEX customers_list;
DROP INDEX events_payment;
DROP INDEX payments_merchant_ref;
CREATE INDEX payments_merchant_ref ON payments (merchant_id, mode, merchant_ref, created_at);
DROP INDEX payments_customer;
DROP INDEX payments_currency;
DROP INDEX payments_list_status;
DROP INDEX payments_list;
ALTER TABLE api_keys DROP COLUMN last_used_at;
DROP TABLE audit_log;
DROP TABLE sessions;
DROP TABLE users;
