-- 3-D Secure challenges (issue 4). A challenge binds the hash of a callback
-- token to one payment; the token itself is never stored.

-- +goose Up
CREATE TABLE threeds_challenges (
    token_hash    bytea PRIMARY KEY,          -- SHA-256 of the token
    payment_id    text NOT NULL REFERENCES payments (id),
    merchant_id   text NOT NULL,
    mode          text NOT NULL CHECK (mode IN ('test', 'live')),
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    claimed_until timestamptz,                -- a callback is completing it until then
    consumed_at   timestamptz                 -- used: completed or expired
);
-- The expiry job's scan: unconsumed challenges by expiry.
CREATE INDEX threeds_challenges_open ON threeds_challenges (expires_at) WHERE consumed_at IS NULL;
CREATE INDEX threeds_challenges_payment ON threeds_challenges (payment_id);

-- +goose Down
DROP TABLE threeds_challenges;
