-- The success-rate router's scores (decisions.md section 21): what each node
-- last knew of each provider for one currency and card brand in one mode,
-- written every few seconds and forgotten when the node stops, so that
-- `paygate providers` and the dashboard show them while nodes serve. The
-- windows themselves live in Redis or in process, never here.

-- +goose Up
CREATE TABLE routing_scores (
    node        TEXT NOT NULL,
    mode        TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    provider_id TEXT NOT NULL,
    currency    TEXT NOT NULL,
    brand       TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    approved    INTEGER NOT NULL,
    score       REAL NOT NULL,
    share       REAL NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (node, mode, provider_id, currency, brand)
) STRICT;
CREATE INDEX routing_scores_updated ON routing_scores (updated_at);

-- +goose Down
DROP TABLE routing_scores;
