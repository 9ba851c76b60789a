-- The card-testing guard's settings (decisions.md section 20), one row per
-- merchant, mode and rule that was changed; a rule without a row has its
-- default (on in live mode, off in test mode). window_ms and block_ms are
-- milliseconds. The counters themselves live in Redis or in process, never
-- here.

-- +goose Up
CREATE TABLE guard_rules (
    merchant_id text NOT NULL REFERENCES merchants (id),
    mode        text NOT NULL,
    rule        text NOT NULL,
    enabled     boolean NOT NULL,
    threshold   integer NOT NULL,
    window_ms   bigint NOT NULL,
    block_ms    bigint NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (merchant_id, mode, rule)
);

-- +goose Down
DROP TABLE guard_rules;
