-- Single-use card tokens (issue 24, decisions.md section 19): a card
-- collected in the browser with the public key, paid with once within 15
-- minutes. sealed is the card number and CVV sealed together by the vault
-- (its secret seal, bound to the token's id, merchant and mode) under the
-- master key key_id; both are NULL once the token is used, and the row is
-- deleted by the sweeper once it has expired. Nothing else here (no
-- fingerprint, no hash) leads back to the card. client_addr is the address
-- of the browser that tokenized it, which the card-testing guard counts
-- the token's payment by.

-- +goose Up
CREATE TABLE card_tokens (
    id          text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode        text NOT NULL,
    brand       text NOT NULL,
    last4       text NOT NULL,
    exp_month   integer NOT NULL,
    exp_year    integer NOT NULL,
    holder_name text NOT NULL,
    client_addr text NOT NULL,
    key_id      text,
    sealed      bytea,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    payment_id  text NOT NULL DEFAULT '',
    CONSTRAINT card_tokens_sealed CHECK ((key_id IS NULL) = (sealed IS NULL)),
    CONSTRAINT card_tokens_used CHECK (used_at IS NULL OR sealed IS NULL)
);

CREATE INDEX card_tokens_expires ON card_tokens (expires_at);
CREATE INDEX card_tokens_key ON card_tokens (key_id) WHERE key_id IS NOT NULL;

-- +goose Down
DROP TABLE card_tokens;
