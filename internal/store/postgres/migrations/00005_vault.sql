-- Stored cards (issue 6): the card vault. The card number is only ever in
-- ciphertext, sealed by AES-256-GCM under the card's own data key; the data
-- key is in wrapped_key, sealed under the master key named by key_id (a hash
-- of the key, never the key). fingerprint is an HMAC of the number under a
-- key derived from that master key, to find the same card saved twice.
-- Deleting a card erases ciphertext, wrapped_key, key_id and fingerprint:
-- only the masked summary stays. No column holds a CVV.

-- +goose Up
CREATE TABLE stored_cards (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    id          text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    customer_id text NOT NULL REFERENCES customers (id),
    state       text NOT NULL CHECK (state IN ('active', 'pending', 'deleted')),
    payment_id  text,                -- the payment that saved it (NULL when saved directly)
    brand       text NOT NULL,
    last4       text NOT NULL,
    exp_month   integer NOT NULL,
    exp_year    integer NOT NULL,
    holder_name text NOT NULL,
    key_id      text,
    wrapped_key bytea,
    ciphertext  bytea,
    fingerprint text,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    deleted_at  timestamptz,
    -- A card that is not deleted is sealed; a deleted one keeps nothing.
    CONSTRAINT stored_cards_sealed CHECK ((state = 'deleted') =
        (key_id IS NULL AND wrapped_key IS NULL AND ciphertext IS NULL AND fingerprint IS NULL)),
    CONSTRAINT stored_cards_deleted_at CHECK ((state = 'deleted') = (deleted_at IS NOT NULL))
);
-- One active card per number and customer: concurrent saves of one number
-- store it once.
CREATE UNIQUE INDEX stored_cards_active_fingerprint ON stored_cards (merchant_id, mode, customer_id, fingerprint)
    WHERE state = 'active';
-- The customer's list, newest first.
CREATE INDEX stored_cards_customer ON stored_cards (customer_id, created_at DESC, seq DESC) WHERE state = 'active';
-- At most one pending card per payment waiting for 3-D Secure.
CREATE UNIQUE INDEX stored_cards_pending_payment ON stored_cards (payment_id) WHERE state = 'pending';
-- Rewrap's scan: cards under a key that is not the newest.
CREATE INDEX stored_cards_key ON stored_cards (key_id, id) WHERE key_id IS NOT NULL;

-- +goose Down
DROP TABLE stored_cards;
