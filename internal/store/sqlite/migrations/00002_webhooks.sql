-- Webhook delivery (issue 3): endpoint state, deliveries and their attempts.
--
-- A delivery is born in the transaction that writes its event: the trigger
-- events_webhook_delivery inserts one for every event (but pings, which
-- CreatePing delivers) whose (merchant, mode) has an enabled endpoint
-- subscribed to the event's type. Every code path that writes an event is
-- covered, and no endpoint means no delivery and no error.

-- +goose Up
-- The secret a rotation replaced signs deliveries too until it expires;
-- disabled_at is set when the receiver answers 410 Gone.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at INTEGER;
ALTER TABLE webhook_endpoints ADD COLUMN disabled_at INTEGER;

CREATE TABLE webhook_deliveries (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    event_id         TEXT NOT NULL REFERENCES events (id),
    merchant_id      TEXT NOT NULL,
    mode             TEXT NOT NULL CHECK (mode IN ('test', 'live')),
    event_type       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    -- Pending: when the next attempt is due, or when the lease of the
    -- attempt in flight ends.
    next_attempt_at  INTEGER NOT NULL,
    lease            TEXT NOT NULL DEFAULT '', -- token of the claim in flight
    last_attempt_at  INTEGER,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
) STRICT;
-- ClaimDeliveries: only pending deliveries are indexed.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_merchant ON webhook_deliveries (merchant_id, mode, created_at, seq);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id),
    number      INTEGER NOT NULL,
    url         TEXT NOT NULL,
    started_at  INTEGER NOT NULL,
    status_code INTEGER NOT NULL,
    latency_us  INTEGER NOT NULL,
    response    BLOB NOT NULL,
    error       TEXT NOT NULL,
    PRIMARY KEY (delivery_id, number)
) STRICT;

-- The delivery id is a random (version 4) UUID made in SQL.
-- +goose StatementBegin
CREATE TRIGGER events_webhook_delivery AFTER INSERT ON events
WHEN NEW.type <> 'ping'
BEGIN
    INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status,
        next_attempt_at, created_at, updated_at)
    SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2)
            || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2)
            || '-' || hex(randomblob(6))),
        NEW.id, NEW.merchant_id, NEW.mode, NEW.type, 'pending',
        NEW.created_at, NEW.created_at, NEW.created_at
    FROM webhook_endpoints w
    WHERE w.merchant_id = NEW.merchant_id AND w.mode = NEW.mode AND w.disabled_at IS NULL
        AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = NEW.type));
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER events_webhook_delivery;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_endpoints DROP COLUMN disabled_at;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_expires_at;
ALTER TABLE webhook_endpoints DROP COLUMN previous_secret;
