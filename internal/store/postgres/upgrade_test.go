package postgres

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestUpgradeKeepsEveryPayment upgrades a database holding payments written
// as the schema before 00016 allowed (every optional text column NULL, and
// every one set) and reads each back through the store: every row is kept,
// NULL reads as "", set values are unchanged, and the one row mapping
// (codec.ScanPayment) reads them.
func TestUpgradeKeepsEveryPayment(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, db, p := schemaAt(t, 15)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123000, time.UTC)
	for _, q := range []string{
		`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', $1)`,
		`INSERT INTO customers (id, merchant_id, mode, external_id, created_at, updated_at) VALUES ('c1', 'm1', 'test', 'ext-1', $1, $1)`,
		// Every optional column NULL, as a payment created without them was.
		`INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text, method,
			lease_until, created_at, updated_at)
		VALUES ('p-null', 'm1', 'test', 'c1', 'created', 1000, 'EUR', '10.00', 'card', $1, $1, $1)`,
		// Every one set.
		`INSERT INTO payments (id, merchant_id, mode, customer_id, provider_id, provider_ref, status, amount, currency,
			amount_text, amount_captured, amount_refunded, method, stored_card_id, merchant_ref, error_code, error_message,
			decline_code, card_brand, card_last4, card_exp_month, card_exp_year, card_holder_name, card_fingerprint,
			billing, return_url, device_fingerprint, metadata, idempotency_key, lease_until, created_at, updated_at)
		VALUES ('p-set', 'm1', 'test', 'c1', 'sandbox', 'ref-1', 'failed', 2500, 'EUR', '25.00', 0, 0, 'stored_card',
			'card-1', 'order-1', 'CARD_DECLINED', 'Declined.', 'insufficient_funds', 'visa', '4242', 12, 2030, 'Ada',
			'fp', '{"firstName":"Ada"}', 'https://shop.example/back', 'dev-1', '{"a":"b"}', 'idem-1', $1, $1, $1)`,
		// A refund with every optional column NULL.
		`UPDATE payments SET status = 'captured', amount_captured = 1000, amount_refunded = 500, updated_at = $1 WHERE id = 'p-null'`,
		`INSERT INTO refunds (id, merchant_id, mode, payment_id, amount, currency, amount_text, status, created_at, updated_at)
		VALUES ('r-null', 'm1', 'test', 'p-null', 500, 'EUR', '5.00', 'created', $1, $1)`,
	} {
		if _, err := db.ExecContext(ctx, q, at); err != nil {
			t.Fatal(err)
		}
	}

	s, err := Open(ctx, url) // applies 00016 and later
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d payments after the upgrade (%v), want 2", n, err)
	}
	r, err := s.RefundByID(ctx, "m1", paygate.ModeTest, "r-null")
	if err != nil || r.Reason != "" || r.ProviderID != "" || r.ErrorCode != "" || r.Amount.Amount != 500 || !r.CreatedAt.Equal(at) {
		t.Errorf("refund without optional values: %+v, %v", r, err)
	}
	empty, err := s.PaymentByID(ctx, "m1", paygate.ModeTest, "p-null")
	if err != nil {
		t.Fatal(err)
	}
	if empty.ProviderID != "" || empty.MerchantRef != "" || empty.IdempotencyKey != "" || empty.Billing != nil ||
		!empty.CreatedAt.Equal(at) || empty.CreatedAt.Location() != time.UTC || string(empty.Metadata) != "{}" {
		t.Errorf("payment without optional values: %+v", empty)
	}
	set, err := s.PaymentByID(ctx, "m1", paygate.ModeTest, "p-set")
	if err != nil {
		t.Fatal(err)
	}
	if set.ProviderID != "sandbox" || set.ProviderRef != "ref-1" || set.StoredCardID != "card-1" || set.MerchantRef != "order-1" ||
		set.ErrorCode != "CARD_DECLINED" || set.ErrorMessage != "Declined." || set.DeclineCode != "insufficient_funds" ||
		set.ReturnURL != "https://shop.example/back" || set.DeviceFingerprint != "dev-1" || set.IdempotencyKey != "idem-1" ||
		set.Billing == nil || set.Billing.FirstName != "Ada" || string(set.Metadata) != `{"a":"b"}` || set.Card.ExpYear != 2030 {
		t.Errorf("payment with every value: %+v", set)
	}
	if byRef, err := s.PaymentByMerchantRef(ctx, "m1", paygate.ModeTest, "order-1"); err != nil || byRef.ID != "p-set" {
		t.Errorf("by reference after the upgrade: %q, %v", byRef.ID, err)
	}
	// The columns are NOT NULL now: a NULL is refused.
	if _, err := s.pool.Exec(ctx, `UPDATE payments SET merchant_ref = NULL WHERE id = 'p-set'`); err == nil {
		t.Error("a NULL merchant_ref was stored after the upgrade")
	}

	// Down to the schema before, and up again: the older releases read
	// NULL as "none" (a created payment with a provider is one whose
	// request was answered, for recovery), so the way down gives the NULLs
	// back, and every row survives both ways.
	if _, err := p.DownTo(ctx, 15); err != nil {
		t.Fatalf("down: %v", err)
	}
	var nulls int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM payments WHERE id = 'p-null'
		AND provider_id IS NULL AND merchant_ref IS NULL AND idempotency_key IS NULL`).Scan(&nulls); err != nil || nulls != 1 {
		t.Errorf("after the way down: %d payments with their NULLs back (%v), want 1", nulls, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	var refs int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM payments
		WHERE (id = 'p-set' AND merchant_ref = 'order-1') OR (id = 'p-null' AND merchant_ref = '')`).Scan(&refs); err != nil || refs != 2 {
		t.Errorf("after down and up: %d payments as they were (%v), want 2", refs, err)
	}
}
