-- One representation for both engines (issue 19), for the vault, 3-D
-- Secure, routing and idempotency tables: the payment a stored card or an
-- idempotency record names is NOT NULL DEFAULT '' (none: ''), as on SQLite,
-- so that one row mapping (internal/store/codec) reads both. Existing NULLs
-- become ''. No index or key needs NULL there: stored_cards_pending_payment
-- covers pending cards only, which always name their payment. The sealed
-- columns of stored_cards stay NULL once a card is deleted (the seal check
-- and the partial indexes rest on it), as on SQLite; so do optional times.

-- +goose Up
UPDATE stored_cards SET payment_id = '' WHERE payment_id IS NULL;
ALTER TABLE stored_cards ALTER COLUMN payment_id SET DEFAULT '', ALTER COLUMN payment_id SET NOT NULL;
UPDATE idempotency_keys SET payment_id = '' WHERE payment_id IS NULL;
ALTER TABLE idempotency_keys ALTER COLUMN payment_id SET DEFAULT '', ALTER COLUMN payment_id SET NOT NULL;

-- +goose Down
ALTER TABLE idempotency_keys ALTER COLUMN payment_id DROP NOT NULL, ALTER COLUMN payment_id DROP DEFAULT;
UPDATE idempotency_keys SET payment_id = NULL WHERE payment_id = '';
ALTER TABLE stored_cards ALTER COLUMN payment_id DROP NOT NULL, ALTER COLUMN payment_id DROP DEFAULT;
UPDATE stored_cards SET payment_id = NULL WHERE payment_id = '';
