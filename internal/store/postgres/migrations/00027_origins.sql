-- The origins allowed to embed a merchant's card fields (decisions.md
-- section 19), one row per merchant and mode that set them. origins holds
-- the normalized origins (scheme://host[:port]) separated by single
-- spaces, in the order they were given; '' when they were cleared. A
-- merchant and mode without a row allow none.

-- +goose Up
CREATE TABLE merchant_origins (
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode        text NOT NULL,
    origins     text NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (merchant_id, mode)
);

-- +goose Down
DROP TABLE merchant_origins;
