-- The origins allowed to embed a merchant's card fields (decisions.md
-- section 19), one row per merchant and mode that set them. origins holds
-- the normalized origins (scheme://host[:port]) separated by single
-- spaces, in the order they were given; '' when they were cleared. A
-- merchant and mode without a row allow none.

-- +goose Up
CREATE TABLE merchant_origins (
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    mode        TEXT NOT NULL,
    origins     TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (merchant_id, mode)
);

-- +goose Down
DROP TABLE merchant_origins;
