-- Stored cards (issue 6): the card vault. The card number is only ever in
-- ciphertext, sealed by AES-256-GCM under the card's own data key; the data
-- key is in wrapped_key, sealed under the master key named by key_id (a hash
-- of the key, never the key). fingerprint is an HMAC of the number under a
-- key derived from that master key, to find the same card saved twice.
-- Deleting a card erases ciphertext, wrapped_key, key_id and fingerprint:
-- only the masked summary stays. No column holds a CVV.
-- Times are INTEGER unix microseconds (UTC), as everywhere.

-- +goose Up
CREATE TABLE stored_cards (
    id          TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    customer_id TEXT NOT NULL REFERENCES customers (id),
    state       TEXT NOT NULL CHECK (state IN ('active', 'pending', 'deleted')),
    payment_id  TEXT NOT NULL DEFAULT '', -- the payment that saved it ('' when saved directly)
    brand       TEXT NOT NULL,
    last4       TEXT NOT NULL,
    exp_month   INTEGER NOT NULL,
    exp_year    INTEGER NOT NULL,
    holder_name TEXT NOT NULL,
    key_id      TEXT,
    wrapped_key BLOB,
    ciphertext  BLOB,
    fingerprint TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    deleted_at  INTEGER,
    -- A card that is not deleted is sealed; a deleted one keeps nothing.
    CHECK ((state = 'deleted') = (key_id IS NULL AND wrapped_key IS NULL AND ciphertext IS NULL AND fingerprint IS NULL)),
    CHECK ((state = 'deleted') = (deleted_at IS NOT NULL))
) STRICT;
-- One active card per number and customer: concurrent saves of one number
-- store it once.
CREATE UNIQUE INDEX stored_cards_active_fingerprint ON stored_cards (merchant_id, mode, customer_id, fingerprint)
    WHERE state = 'active';
-- The customer's list, newest first.
CREATE INDEX stored_cards_customer ON stored_cards (customer_id, created_at) WHERE state = 'active';
-- At most one pending card per payment waiting for 3-D Secure.
CREATE UNIQUE INDEX stored_cards_pending_payment ON stored_cards (payment_id) WHERE state = 'pending';
-- Rewrap's scan: cards under a key that is not the newest.
CREATE INDEX stored_cards_key ON stored_cards (key_id, id) WHERE key_id IS NOT NULL;

-- +goose Down
DROP TABLE stored_cards;
