-- One representation for both engines (issue 19): the checks PostgreSQL
-- declares on payments and refunds hold on SQLite too. SQLite cannot add a
-- CHECK to an existing table without rebuilding it; payments is referenced
-- by other tables, so its checks are triggers that abort the statement,
-- with the constraint's name in the message, as a CHECK would. Rows
-- already stored satisfy them: every writer keeps to them.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER payments_status_check_insert BEFORE INSERT ON payments
WHEN NEW.status NOT IN ('created', 'captured', 'authorized', 'pending_3ds', 'pending_consent', 'failed', 'voided')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: payments_status'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER payments_status_check_update BEFORE UPDATE OF status ON payments
WHEN NEW.status NOT IN ('created', 'captured', 'authorized', 'pending_3ds', 'pending_consent', 'failed', 'voided')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: payments_status'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER payments_refund_limit_insert BEFORE INSERT ON payments
WHEN NEW.amount_refunded > NEW.amount_captured
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: payments_refund_limit'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER payments_refund_limit_update BEFORE UPDATE OF amount_refunded, amount_captured ON payments
WHEN NEW.amount_refunded > NEW.amount_captured
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: payments_refund_limit'); END;
-- +goose StatementEnd
-- refunds is rebuilt (no table references it): error_code and
-- error_message become NOT NULL DEFAULT '' like its other text columns, and
-- the status check is a CHECK.
CREATE TABLE refunds_rebuilt (
    id             TEXT PRIMARY KEY,
    merchant_id    TEXT NOT NULL REFERENCES merchants (id),
    mode           TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    payment_id     TEXT NOT NULL REFERENCES payments (id),
    amount         INTEGER NOT NULL CHECK (amount > 0),
    currency       TEXT NOT NULL,
    amount_text    TEXT NOT NULL,
    reason         TEXT NOT NULL DEFAULT '',
    status         TEXT NOT NULL CONSTRAINT refunds_status CHECK (status IN ('created', 'pending', 'succeeded', 'failed')),
    provider_id    TEXT NOT NULL DEFAULT '',
    provider_ref   TEXT NOT NULL DEFAULT '',
    failure_reason TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    error_code     TEXT NOT NULL DEFAULT '',
    error_message  TEXT NOT NULL DEFAULT ''
) STRICT;
INSERT INTO refunds_rebuilt (id, merchant_id, mode, payment_id, amount, currency, amount_text, reason, status,
    provider_id, provider_ref, failure_reason, created_at, updated_at, error_code, error_message)
SELECT id, merchant_id, mode, payment_id, amount, currency, amount_text, reason, status,
    provider_id, provider_ref, failure_reason, created_at, updated_at, COALESCE(error_code, ''), COALESCE(error_message, '')
FROM refunds;
DROP TABLE refunds;
ALTER TABLE refunds_rebuilt RENAME TO refunds;
CREATE INDEX refunds_payment ON refunds (payment_id, created_at);
CREATE INDEX refunds_status ON refunds (status, updated_at);

-- +goose Down
CREATE TABLE refunds_rebuilt (
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
    updated_at     INTEGER NOT NULL,
    error_code     TEXT,
    error_message  TEXT
) STRICT;
INSERT INTO refunds_rebuilt SELECT id, merchant_id, mode, payment_id, amount, currency, amount_text, reason, status,
    provider_id, provider_ref, failure_reason, created_at, updated_at, NULLIF(error_code, ''), NULLIF(error_message, '')
FROM refunds;
DROP TABLE refunds;
ALTER TABLE refunds_rebuilt RENAME TO refunds;
CREATE INDEX refunds_payment ON refunds (payment_id, created_at);
CREATE INDEX refunds_status ON refunds (status, updated_at);
DROP TRIGGER payments_refund_limit_update;
DROP TRIGGER payments_refund_limit_insert;
DROP TRIGGER payments_status_check_update;
DROP TRIGGER payments_status_check_insert;
