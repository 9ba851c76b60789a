-- One representation for both engines (issue 19): the checks PostgreSQL
-- declares on payments and refunds hold on SQLite too. SQLite cannot add a
-- CHECK to an existing table without rebuilding it (and the tables that
-- reference it), so the same conditions are triggers that abort the
-- statement, with the constraint's name in the message, as a CHECK would.
-- Rows already stored satisfy them: every writer keeps to them.

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
-- +goose StatementBegin
CREATE TRIGGER refunds_status_check_insert BEFORE INSERT ON refunds
WHEN NEW.status NOT IN ('created', 'pending', 'succeeded', 'failed')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: refunds_status'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER refunds_status_check_update BEFORE UPDATE OF status ON refunds
WHEN NEW.status NOT IN ('created', 'pending', 'succeeded', 'failed')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: refunds_status'); END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER refunds_status_check_update;
DROP TRIGGER refunds_status_check_insert;
DROP TRIGGER payments_refund_limit_update;
DROP TRIGGER payments_refund_limit_insert;
DROP TRIGGER payments_status_check_update;
DROP TRIGGER payments_status_check_insert;
