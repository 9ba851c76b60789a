-- One representation for both engines (issue 19), for events and webhooks:
--
-- events.payment_id and refund_id are NOT NULL DEFAULT '' as on SQLite
-- (existing NULLs become ''), so that one row mapping (codec.ScanEvent)
-- reads both; events_payment_idx keeps skipping the events without a
-- payment (pings) with the predicate SQLite's events_payment has,
-- "payment_id <> ''", which the queries by payment repeat so that the
-- planner proves it even for a generic plan.
--
-- webhook_endpoints.events, a text[], becomes a jsonb array of event
-- types: SQLite stores the same JSON as text, and both scan as bytes
-- (codec.ScanEndpointState). [] still means every event; the delivery
-- trigger tests membership with jsonb's ?. Like SQLite's column it has no
-- default: every writer passes it.

-- +goose Up
UPDATE events SET payment_id = COALESCE(payment_id, ''), refund_id = COALESCE(refund_id, '')
WHERE payment_id IS NULL OR refund_id IS NULL;
ALTER TABLE events
    ALTER COLUMN payment_id SET DEFAULT '', ALTER COLUMN payment_id SET NOT NULL,
    ALTER COLUMN refund_id SET DEFAULT '', ALTER COLUMN refund_id SET NOT NULL;
DROP INDEX events_payment_idx;
CREATE INDEX events_payment_idx ON events (payment_id, created_at, seq) WHERE payment_id <> '';

ALTER TABLE webhook_endpoints ALTER COLUMN events DROP DEFAULT;
ALTER TABLE webhook_endpoints ALTER COLUMN events TYPE jsonb USING to_jsonb(events);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_for_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status,
        next_attempt_at, created_at, updated_at)
    SELECT gen_random_uuid()::text, NEW.id, NEW.merchant_id, NEW.mode, NEW.type, 'pending',
        NEW.created_at, NEW.created_at, NEW.created_at
    FROM webhook_endpoints w
    WHERE w.merchant_id = NEW.merchant_id AND w.mode = NEW.mode AND w.disabled_at IS NULL
        AND (w.events = '[]'::jsonb OR w.events ? NEW.type);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhook_delivery_for_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
-- A transform cannot hold a subquery: the JSON text of an array of event
-- types (no brackets or escapes in them) is the array's literal.
ALTER TABLE webhook_endpoints ALTER COLUMN events TYPE text[]
    USING translate(events::text, '[]', '{}')::text[];
ALTER TABLE webhook_endpoints ALTER COLUMN events SET DEFAULT '{}';

DROP INDEX events_payment_idx;
CREATE INDEX events_payment_idx ON events (payment_id, created_at, seq) WHERE payment_id IS NOT NULL;
ALTER TABLE events
    ALTER COLUMN payment_id DROP NOT NULL, ALTER COLUMN payment_id DROP DEFAULT,
    ALTER COLUMN refund_id DROP NOT NULL, ALTER COLUMN refund_id DROP DEFAULT;
UPDATE events SET payment_id = NULLIF(payment_id, ''), refund_id = NULLIF(refund_id, '')
WHERE payment_id = '' OR refund_id = '';
