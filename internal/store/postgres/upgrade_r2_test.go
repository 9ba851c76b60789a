package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/store/storetest"
)

// TestUpgradeKeepsEveryEventAndDelivery upgrades a database holding
// events (their missing payment and refund ids NULL), webhook endpoints
// (their events a text[]), deliveries and attempts written as the schema
// before 00018 allowed, and reads every row back through the store
// (codec's one row mapping): each is kept and reads as written, NULL ids
// as "", the delivery trigger follows the endpoint's events, now JSON, and
// the NOT NULLs hold from then on.
func TestUpgradeKeepsEveryEventAndDelivery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, db, _ := schemaAt(t, 17)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123000, time.UTC)
	later := at.Add(time.Hour)
	for _, q := range []string{
		`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', $1)`,
		// Events before the endpoints, so that the trigger adds no delivery;
		// no payment or refund was NULL.
		`INSERT INTO events (id, merchant_id, mode, type, payment_id, refund_id, payload, created_at) VALUES
			('e-cap', 'm1', 'test', 'payment.captured', 'p1', NULL, '{"a":1}'::bytea, $1),
			('e-ref', 'm1', 'test', 'refund.succeeded', 'p1', 'r1', '{"b":2}'::bytea, $1),
			('e-ping', 'm1', 'test', 'ping', NULL, NULL, '{}'::bytea, $1)`,
		`INSERT INTO webhook_endpoints (merchant_id, mode, url, secret, events, created_at, updated_at,
			previous_secret, previous_secret_expires_at, disabled_at, secret_sealed, previous_secret_sealed) VALUES
			('m1', 'test', 'https://shop.example/hook', '', '{payment.captured,refund.succeeded}', $1, $1,
				'', $2, NULL, '\x01', '\x02'),
			('m1', 'live', 'https://shop.example/live', '', DEFAULT, $1, $1, '', NULL, $1, '\x03', NULL)`,
		`INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status, attempts,
			next_attempt_at, last_attempt_at, last_status_code, last_error, created_at, updated_at) VALUES
			('d-new', 'e-cap', 'm1', 'test', 'payment.captured', 'pending', 0, $1, NULL, 0, '', $1, $1),
			('d-done', 'e-ref', 'm1', 'test', 'refund.succeeded', 'succeeded', 2, $1, $1, 200, '', $1, $1),
			('d-ping', 'e-ping', 'm1', 'test', 'ping', 'failed', 1, $1, $1, 0, 'refused', $1, $1)`,
		`INSERT INTO webhook_attempts (delivery_id, number, url, started_at, status_code, latency_us, response,
			error, private_address) VALUES
			('d-done', 1, 'https://shop.example/hook', $1, 500, 1500, 'oops'::bytea, 'HTTP 500', NULL),
			('d-done', 2, 'https://shop.example/hook', $1, 200, 700, '', '', false),
			('d-ping', 1, 'https://10.0.0.1/hook', $1, 0, 20, '', 'refused', true)`,
	} {
		args := []any{at}
		if strings.Contains(q, "$2") {
			args = append(args, later)
		}
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}

	s, err := Open(ctx, url) // applies 00018 and later
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for table, want := range map[string]int{"events": 3, "webhook_endpoints": 2, "webhook_deliveries": 3, "webhook_attempts": 3} {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != want {
			t.Errorf("%d rows of %s after the upgrade (%v), want %d", n, table, err, want)
		}
	}
	storetest.CheckUpgradedWebhooks(t, s, at, later)

	// The delivery trigger reads the endpoint's JSON events: a subscribed
	// event gets a delivery, another none.
	if _, err := s.pool.Exec(ctx, `INSERT INTO events (id, merchant_id, mode, type, payment_id, refund_id, payload, created_at)
		VALUES ('e-new', 'm1', 'test', 'payment.captured', 'p2', '', '', $1), ('e-other', 'm1', 'test', 'payment.failed', 'p3', '', '', $1)`,
		at); err != nil {
		t.Fatal(err)
	}
	var fresh int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE event_id IN ('e-new', 'e-other')`).Scan(&fresh); err != nil || fresh != 1 {
		t.Errorf("%d deliveries of the new events (%v), want 1", fresh, err)
	}

	// The ids are NOT NULL now, and events a JSON array.
	if _, err := s.pool.Exec(ctx, `UPDATE events SET payment_id = NULL WHERE id = 'e-cap'`); err == nil {
		t.Error("a NULL payment_id was stored after the upgrade")
	}
	var typ string
	if err := s.pool.QueryRow(ctx, `SELECT jsonb_typeof(events) FROM webhook_endpoints WHERE mode = 'live'`).Scan(&typ); err != nil || typ != "array" {
		t.Errorf("live endpoint's events: %q, %v; want an array", typ, err)
	}
}
