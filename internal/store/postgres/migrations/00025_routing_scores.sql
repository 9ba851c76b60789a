-- The success-rate router's scores (decisions.md section 21): what each node
-- last knew of each provider for one currency and card brand in one mode,
-- written every few seconds and forgotten when the node stops, so that
-- `paygate providers` and the dashboard show them while nodes serve. The
-- windows themselves live in Redis or in process, never here.

-- +goose Up
CREATE TABLE routing_scores (
    node        text NOT NULL,
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    provider_id text NOT NULL,
    currency    text NOT NULL,
    brand       text NOT NULL,
    attempts    bigint NOT NULL,
    approved    bigint NOT NULL,
    score       double precision NOT NULL,
    share       double precision NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (node, mode, provider_id, currency, brand)
);
CREATE INDEX routing_scores_updated_idx ON routing_scores (updated_at);

-- +goose Down
DROP TABLE routing_scores;
