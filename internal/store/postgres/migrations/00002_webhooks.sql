-- Webhook delivery (issue 3): endpoint state, deliveries and their attempts.
--
-- A delivery is born in the statement that writes its event: the trigger
-- events_webhook_delivery inserts one for every event (but pings, which
-- CreatePing delivers) whose (merchant, mode) has an enabled endpoint
-- subscribed to the event's type. Every statement that writes an event is
-- covered, including the single-statement CTEs of the payment and refund
-- transitions, and no endpoint means no delivery and no error.

-- +goose Up
-- The secret a rotation replaced signs deliveries too until it expires;
-- disabled_at is set when the receiver answers 410 Gone.
ALTER TABLE webhook_endpoints
    ADD COLUMN previous_secret text NOT NULL DEFAULT '',
    ADD COLUMN previous_secret_expires_at timestamptz,
    ADD COLUMN disabled_at timestamptz;

CREATE TABLE webhook_deliveries (
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    id               text PRIMARY KEY,
    event_id         text NOT NULL REFERENCES events (id),
    merchant_id      text NOT NULL,
    mode             text NOT NULL CHECK (mode IN ('test', 'live')),
    event_type       text NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    -- Pending: when the next attempt is due, or when the lease of the
    -- attempt in flight ends.
    next_attempt_at  timestamptz NOT NULL,
    lease            text NOT NULL DEFAULT '', -- token of the claim in flight
    last_attempt_at  timestamptz,
    last_status_code integer NOT NULL DEFAULT 0,
    last_error       text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
-- ClaimDeliveries: only pending deliveries are indexed.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_merchant_idx ON webhook_deliveries (merchant_id, mode, created_at DESC, seq DESC);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
    delivery_id text NOT NULL REFERENCES webhook_deliveries (id),
    number      integer NOT NULL,
    url         text NOT NULL,
    started_at  timestamptz NOT NULL,
    status_code integer NOT NULL,
    latency_us  bigint NOT NULL,
    response    bytea NOT NULL,
    error       text NOT NULL,
    PRIMARY KEY (delivery_id, number)
);

-- +goose StatementBegin
CREATE FUNCTION webhook_delivery_for_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status,
        next_attempt_at, created_at, updated_at)
    SELECT gen_random_uuid()::text, NEW.id, NEW.merchant_id, NEW.mode, NEW.type, 'pending',
        NEW.created_at, NEW.created_at, NEW.created_at
    FROM webhook_endpoints w
    WHERE w.merchant_id = NEW.merchant_id AND w.mode = NEW.mode AND w.disabled_at IS NULL
        AND (cardinality(w.events) = 0 OR NEW.type = ANY (w.events));
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER events_webhook_delivery AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.type <> 'ping') EXECUTE FUNCTION webhook_delivery_for_event();

-- +goose Down
DROP TRIGGER events_webhook_delivery ON events;
DROP FUNCTION webhook_delivery_for_event();
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_endpoints
    DROP COLUMN disabled_at,
    DROP COLUMN previous_secret_expires_at,
    DROP COLUMN previous_secret;
