package sqlite

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestUpgradeKeepsEveryPayment upgrades a file holding payments and refunds
// written before 00014 and reads them back through the store: every row is
// kept and reads as it was written, and the checks PostgreSQL declares
// (payment and refund status, the refund limit) hold from then on.
func TestUpgradeKeepsEveryPayment(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, db, _ := schemaAt(t, 13)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123000, time.UTC)
	us := at.UnixMicro()
	for _, q := range []string{
		`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', ?)`,
		`INSERT INTO customers (id, merchant_id, mode, external_id, created_at, updated_at) VALUES ('c1', 'm1', 'test', 'ext-1', ?1, ?1)`,
		`INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text, method,
			lease_until, created_at, updated_at)
		VALUES ('p-plain', 'm1', 'test', 'c1', 'created', 1000, 'EUR', '10.00', 'card', ?1, ?1, ?1)`,
		`INSERT INTO payments (id, merchant_id, mode, customer_id, provider_id, provider_ref, status, amount, currency,
			amount_text, amount_captured, amount_refunded, method, merchant_ref, billing, metadata, lease_until, created_at, updated_at)
		VALUES ('p-refunded', 'm1', 'test', 'c1', 'sandbox', 'ref-1', 'captured', 2500, 'EUR', '25.00', 2500, 1000, 'card',
			'order-1', '{"firstName":"Ada"}', '{"a":"b"}', ?1, ?1, ?1)`,
		`INSERT INTO refunds (id, merchant_id, mode, payment_id, amount, currency, amount_text, status, created_at, updated_at)
		VALUES ('r1', 'm1', 'test', 'p-refunded', 1000, 'EUR', '10.00', 'succeeded', ?1, ?1)`,
	} {
		if _, err := db.ExecContext(ctx, q, us); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path) // applies 00014 and later
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	plain, err := s.PaymentByID(ctx, "m1", paygate.ModeTest, "p-plain")
	if err != nil {
		t.Fatal(err)
	}
	if plain.ProviderID != "" || plain.Billing != nil || !plain.CreatedAt.Equal(at) || plain.CreatedAt.Location() != time.UTC {
		t.Errorf("plain payment: %+v", plain)
	}
	refunded, err := s.PaymentByID(ctx, "m1", paygate.ModeTest, "p-refunded")
	if err != nil {
		t.Fatal(err)
	}
	if refunded.AmountRefunded != 1000 || refunded.MerchantRef != "order-1" || refunded.Billing == nil ||
		refunded.Billing.FirstName != "Ada" || string(refunded.Metadata) != `{"a":"b"}` {
		t.Errorf("refunded payment: %+v", refunded)
	}
	if r, err := s.RefundByID(ctx, "m1", paygate.ModeTest, "r1"); err != nil || r.Status != paygate.RefundSucceeded {
		t.Errorf("refund after the upgrade: %+v, %v", r, err)
	}

	w := s.write
	for name, q := range map[string]string{
		"payments_status":       `UPDATE payments SET status = 'lost' WHERE id = 'p-plain'`,
		"payments_refund_limit": `UPDATE payments SET amount_refunded = 2600 WHERE id = 'p-refunded'`,
		"refunds_status":        `UPDATE refunds SET status = 'gone' WHERE id = 'r1'`,
	} {
		_, err := w.ExecContext(ctx, q)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want the check to refuse", name, err)
		}
	}
}
