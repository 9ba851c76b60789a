-- One representation for both engines (issue 19), for the vault, 3-D
-- Secure, routing and idempotency tables.
--
-- idempotency_keys gets PostgreSQL's mode check, as triggers that abort
-- the statement with the constraint's name (PostgreSQL's) in the message,
-- as a CHECK would. A rebuild would be the other way (no table references
-- it), but the triggers come first for a reason: created twice they fail,
-- so a second process that starts this migration at the same moment as
-- another fails without changing anything (migrate.go), where every later
-- statement here would succeed again. Rows already stored satisfy it: every
-- writer keeps to it.
--
-- payments.recovery_until: "never claimed" was 0 here and NULL on
-- PostgreSQL; it is NULL on both now. SQLite cannot drop a NOT NULL from a
-- column, and payments is referenced by other tables (no rebuild), so a new
-- nullable column takes the values (0 becomes NULL), the old one is
-- dropped (no index, trigger or constraint names it) and the new one takes
-- its name.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER idempotency_keys_mode_check_insert BEFORE INSERT ON idempotency_keys
WHEN NEW.mode NOT IN ('test', 'live')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: idempotency_keys_mode_check'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER idempotency_keys_mode_check_update BEFORE UPDATE OF mode ON idempotency_keys
WHEN NEW.mode NOT IN ('test', 'live')
BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: idempotency_keys_mode_check'); END;
-- +goose StatementEnd

ALTER TABLE payments ADD COLUMN recovery_until_nullable INTEGER;
UPDATE payments SET recovery_until_nullable = recovery_until WHERE recovery_until <> 0;
ALTER TABLE payments DROP COLUMN recovery_until;
ALTER TABLE payments RENAME COLUMN recovery_until_nullable TO recovery_until;

-- +goose Down
ALTER TABLE payments ADD COLUMN recovery_until_zero INTEGER NOT NULL DEFAULT 0;
UPDATE payments SET recovery_until_zero = recovery_until WHERE recovery_until IS NOT NULL;
ALTER TABLE payments DROP COLUMN recovery_until;
ALTER TABLE payments RENAME COLUMN recovery_until_zero TO recovery_until;
DROP TRIGGER idempotency_keys_mode_check_update;
DROP TRIGGER idempotency_keys_mode_check_insert;
