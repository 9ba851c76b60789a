package postgres

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
	"github.com/paygate/paygate/internal/store/storetest"
)

// TestUpgradeKeepsVaultRoutingAndIdempotencyRows upgrades a database
// holding stored cards, idempotency records, 3-D Secure challenges, routing
// rows and recovery claims written as the schema before 00019 allowed (a
// card and a record without a payment had a NULL payment_id) and reads each
// back through the store: every row is kept, NULL reads as "", and an
// in-flight record without a payment is still told abandoned from live.
func TestUpgradeKeepsVaultRoutingAndIdempotencyRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, db, _ := schemaAt(t, 18)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123000, time.UTC)
	later := at.Add(time.Hour)
	old := at.Add(-2 * paygate.PaymentLease)
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', $1)`, []any{at}},
		{`INSERT INTO customers (id, merchant_id, mode, external_id, created_at, updated_at) VALUES ('c1', 'm1', 'test', 'ext-1', $1, $1)`, []any{at}},
		// Never claimed by the recovery job (NULL), and claimed until later.
		{`INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text, method,
			lease_until, created_at, updated_at)
		VALUES ('p-never', 'm1', 'test', 'c1', 'created', 1000, 'EUR', '10.00', 'card', $1, $1, $1)`, []any{at}},
		{`INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text, method,
			lease_until, created_at, updated_at, recovery_until)
		VALUES ('p-claimed', 'm1', 'test', 'c1', 'created', 1000, 'EUR', '10.00', 'card', $1, $1, $1, $2)`, []any{at, later}},
		// A card saved directly (payment_id NULL), one pending for a
		// payment, one deleted.
		{`INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
			holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at)
		VALUES ('card-direct', 'm1', 'test', 'c1', 'active', NULL, 'visa', '4242', 12, 2030, 'Ada', 'k1', '\x01', '\x02', 'fp-1', $1, $1)`, []any{at}},
		{`INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
			holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at)
		VALUES ('card-pending', 'm1', 'test', 'c1', 'pending', 'p-never', 'mastercard', '4444', 1, 2031, 'Ada', 'k1', '\x03', '\x04', 'fp-2', $1, $1)`, []any{at}},
		{`INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
			holder_name, created_at, updated_at, deleted_at)
		VALUES ('card-deleted', 'm1', 'test', 'c1', 'deleted', NULL, 'visa', '1111', 2, 2029, 'Ada', $1, $2, $2)`, []any{at, later}},
		// Idempotency records: in flight without a payment (NULL), live and
		// abandoned; complete with its payment and answer.
		{`INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, state, payment_id, created_at)
		VALUES ('m1', 'test', 'idem-live', '\x0a', 'in_flight', NULL, $1)`, []any{at}},
		{`INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, state, payment_id, created_at)
		VALUES ('m1', 'test', 'idem-abandoned', '\x0b', 'in_flight', NULL, $1)`, []any{old}},
		{`INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, state, status_code, body, payment_id, created_at)
		VALUES ('m1', 'test', 'idem-done', '\x0c', 'complete', 201, '{"id":"p-claimed"}', 'p-claimed', $1)`, []any{at}},
		{`INSERT INTO threeds_challenges (token_hash, payment_id, merchant_id, mode, created_at, expires_at)
		VALUES ('\xaa', 'p-never', 'm1', 'test', $1, $2)`, []any{at, later}},
		{`INSERT INTO threeds_challenges (token_hash, payment_id, merchant_id, mode, created_at, expires_at, claimed_until, consumed_at)
		VALUES ('\xbb', 'p-claimed', 'm1', 'test', $1, $2, $2, $2)`, []any{at, later}},
		{`INSERT INTO provider_states (provider_id, drained, updated_at) VALUES ('sandbox', true, $1)`, []any{at}},
		{`INSERT INTO provider_breakers (node, mode, provider_id, state, since, reported_at)
		VALUES ('node-1', 'test', 'sandbox', 'half-open', $1, $2)`, []any{at, later}},
		{`INSERT INTO sandbox_ledger (provider_id, payment_id, mode, amount, currency, outcome, ready_at, created_at)
		VALUES ('sandbox', 'p-never', 'test', 1000, 'EUR', 'declined', $2, $1)`, []any{at, later}},
	} {
		if _, err := db.ExecContext(ctx, st.q, st.args...); err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
	}

	s, err := Open(ctx, url) // applies 00019 and later
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	storetest.CheckUpgradedCards(t, s, at)
	deleted, err := codec.ScanStoredCard(s.pool.QueryRow(ctx,
		`SELECT `+codec.StoredCardColumns+` FROM stored_cards WHERE id = 'card-deleted'`))
	if err != nil || deleted.PaymentID != "" || deleted.Sealed.KeyID != "" || deleted.Sealed.WrappedKey != nil ||
		deleted.DeletedAt == nil || !deleted.DeletedAt.Equal(later) {
		t.Errorf("deleted card after the upgrade: %+v, %v", deleted, err)
	}

	storetest.CheckUpgradedIdempotencyAndRouting(t, s, at, later)
	// payment_id is NOT NULL now: a NULL is refused.
	for _, q := range []string{
		`UPDATE stored_cards SET payment_id = NULL WHERE id = 'card-pending'`,
		`UPDATE idempotency_keys SET payment_id = NULL WHERE key = 'idem-done'`,
	} {
		if _, err := s.pool.Exec(ctx, q); err == nil {
			t.Errorf("%s: stored after the upgrade", q)
		}
	}
}
