package sqlite

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/store/storetest"
)

// TestUpgradeKeepsEveryEventAndDelivery upgrades a file holding events,
// webhook endpoints, deliveries and attempts written before 00016 (an
// attempt's private address unrecorded, false and true) and reads every
// row back through the store (codec's one row mapping): each is kept and
// reads as written, the delivery trigger still follows the endpoint's
// events, and the boolean check PostgreSQL's type implies holds from then
// on.
func TestUpgradeKeepsEveryEventAndDelivery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, db, _ := schemaAt(t, 15)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123000, time.UTC)
	later := at.Add(time.Hour)
	for _, q := range []string{
		`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', ?1)`,
		// Events before the endpoints, so that the trigger adds no delivery.
		`INSERT INTO events (id, merchant_id, mode, type, payment_id, refund_id, payload, created_at) VALUES
			('e-cap', 'm1', 'test', 'payment.captured', 'p1', '', CAST('{"a":1}' AS BLOB), ?1),
			('e-ref', 'm1', 'test', 'refund.succeeded', 'p1', 'r1', CAST('{"b":2}' AS BLOB), ?1),
			('e-ping', 'm1', 'test', 'ping', '', '', CAST('{}' AS BLOB), ?1)`,
		`INSERT INTO webhook_endpoints (merchant_id, mode, url, secret, events, created_at, updated_at,
			previous_secret, previous_secret_expires_at, disabled_at, secret_sealed, previous_secret_sealed) VALUES
			('m1', 'test', 'https://shop.example/hook', '', '["payment.captured","refund.succeeded"]', ?1, ?1,
				'', ?2, NULL, x'01', x'02'),
			('m1', 'live', 'https://shop.example/live', '', '[]', ?1, ?1, '', NULL, ?1, x'03', NULL)`,
		`INSERT INTO webhook_deliveries (id, event_id, merchant_id, mode, event_type, status, attempts,
			next_attempt_at, last_attempt_at, last_status_code, last_error, created_at, updated_at) VALUES
			('d-new', 'e-cap', 'm1', 'test', 'payment.captured', 'pending', 0, ?1, NULL, 0, '', ?1, ?1),
			('d-done', 'e-ref', 'm1', 'test', 'refund.succeeded', 'succeeded', 2, ?1, ?1, 200, '', ?1, ?1),
			('d-ping', 'e-ping', 'm1', 'test', 'ping', 'failed', 1, ?1, ?1, 0, 'refused', ?1, ?1)`,
		`INSERT INTO webhook_attempts (delivery_id, number, url, started_at, status_code, latency_us, response,
			error, private_address) VALUES
			('d-done', 1, 'https://shop.example/hook', ?1, 500, 1500, CAST('oops' AS BLOB), 'HTTP 500', NULL),
			('d-done', 2, 'https://shop.example/hook', ?1, 200, 700, x'', '', 0),
			('d-ping', 1, 'https://10.0.0.1/hook', ?1, 0, 20, x'', 'refused', 1)`,
	} {
		if _, err := db.ExecContext(ctx, q, at.UnixMicro(), later.UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path) // applies 00016 and later
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for table, want := range map[string]int{"events": 3, "webhook_endpoints": 2, "webhook_deliveries": 3, "webhook_attempts": 3} {
		var n int
		if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != want {
			t.Errorf("%d rows of %s after the upgrade (%v), want %d", n, table, err, want)
		}
	}
	storetest.CheckUpgradedWebhooks(t, s, at, later)

	// The delivery trigger follows the endpoint's events: a subscribed
	// event gets a delivery, another none.
	if _, err := s.write.ExecContext(ctx, `INSERT INTO events (id, merchant_id, mode, type, payment_id, refund_id, payload, created_at)
		VALUES ('e-new', 'm1', 'test', 'payment.captured', 'p2', '', x'', ?1), ('e-other', 'm1', 'test', 'payment.failed', 'p3', '', x'', ?1)`,
		at.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	var fresh int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM webhook_deliveries WHERE event_id IN ('e-new', 'e-other')`).Scan(&fresh); err != nil || fresh != 1 {
		t.Errorf("%d deliveries of the new events (%v), want 1", fresh, err)
	}

	// The integer of private_address is a boolean now.
	_, err = s.write.ExecContext(ctx, `UPDATE webhook_attempts SET private_address = 2 WHERE delivery_id = 'd-ping'`)
	if err == nil || !strings.Contains(err.Error(), "webhook_attempts_private_address") {
		t.Errorf("private_address = 2: %v, want the check to refuse", err)
	}
}
