-- 3-D Secure challenges (issue 4). A challenge binds the hash of a callback
-- token to one payment; the token itself is never stored. Times are INTEGER
-- unix microseconds (UTC), as everywhere.

-- +goose Up
CREATE TABLE threeds_challenges (
    token_hash    BLOB PRIMARY KEY,   -- SHA-256 of the token
    payment_id    TEXT NOT NULL REFERENCES payments (id),
    merchant_id   TEXT NOT NULL,
    mode          TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    claimed_until INTEGER,            -- a callback is completing it until then
    consumed_at   INTEGER             -- used: completed or expired
) STRICT;
-- The expiry job's scan: unconsumed challenges by expiry.
CREATE INDEX threeds_challenges_open ON threeds_challenges (expires_at) WHERE consumed_at IS NULL;
CREATE INDEX threeds_challenges_payment ON threeds_challenges (payment_id);

-- +goose Down
DROP TABLE threeds_challenges;
