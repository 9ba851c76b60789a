package sqlite

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/codec"
	"github.com/paygate/paygate/internal/store/storetest"
)

// TestUpgradeKeepsVaultRoutingAndIdempotencyRows upgrades a file holding
// stored cards, idempotency records, 3-D Secure challenges, routing rows and
// recovery claims written before 00017 (a payment never claimed by the
// recovery job had recovery_until 0) and reads each back through the store:
// every row is kept, 0 became NULL and still means never claimed, and
// idempotency_keys refuses a mode PostgreSQL refuses.
func TestUpgradeKeepsVaultRoutingAndIdempotencyRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, db, _ := schemaAt(t, 16)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123000, time.UTC)
	later := at.Add(time.Hour)
	old := at.Add(-2 * paygate.PaymentLease)
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO merchants (id, name, created_at) VALUES ('m1', 'Shop', $1)`, []any{at}},
		{`INSERT INTO customers (id, merchant_id, mode, external_id, created_at, updated_at) VALUES ('c1', 'm1', 'test', 'ext-1', $1, $1)`, []any{at}},
		// Never claimed by the recovery job (0), and claimed until later.
		{`INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text, method,
			lease_until, created_at, updated_at)
		VALUES ('p-never', 'm1', 'test', 'c1', 'created', 1000, 'EUR', '10.00', 'card', $1, $1, $1)`, []any{at}},
		{`INSERT INTO payments (id, merchant_id, mode, customer_id, status, amount, currency, amount_text, method,
			lease_until, created_at, updated_at, recovery_until)
		VALUES ('p-claimed', 'm1', 'test', 'c1', 'created', 1000, 'EUR', '10.00', 'card', $1, $1, $1, $2)`, []any{at, later}},
		// A card saved directly (payment_id ''), one pending for a
		// payment, one deleted.
		{`INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
			holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at)
		VALUES ('card-direct', 'm1', 'test', 'c1', 'active', '', 'visa', '4242', 12, 2030, 'Ada', 'k1', x'01', x'02', 'fp-1', $1, $1)`, []any{at}},
		{`INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
			holder_name, key_id, wrapped_key, ciphertext, fingerprint, created_at, updated_at)
		VALUES ('card-pending', 'm1', 'test', 'c1', 'pending', 'p-never', 'mastercard', '4444', 1, 2031, 'Ada', 'k1', x'03', x'04', 'fp-2', $1, $1)`, []any{at}},
		{`INSERT INTO stored_cards (id, merchant_id, mode, customer_id, state, payment_id, brand, last4, exp_month, exp_year,
			holder_name, created_at, updated_at, deleted_at)
		VALUES ('card-deleted', 'm1', 'test', 'c1', 'deleted', '', 'visa', '1111', 2, 2029, 'Ada', $1, $2, $2)`, []any{at, later}},
		// Idempotency records: in flight without a payment (''), live and
		// abandoned; complete with its payment and answer.
		{`INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, state, payment_id, created_at)
		VALUES ('m1', 'test', 'idem-live', x'0a', 'in_flight', '', $1)`, []any{at}},
		{`INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, state, payment_id, created_at)
		VALUES ('m1', 'test', 'idem-abandoned', x'0b', 'in_flight', '', $1)`, []any{old}},
		{`INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, state, status_code, body, payment_id, created_at)
		VALUES ('m1', 'test', 'idem-done', x'0c', 'complete', 201, CAST('{"id":"p-claimed"}' AS BLOB), 'p-claimed', $1)`, []any{at}},
		{`INSERT INTO threeds_challenges (token_hash, payment_id, merchant_id, mode, created_at, expires_at)
		VALUES (x'aa', 'p-never', 'm1', 'test', $1, $2)`, []any{at, later}},
		{`INSERT INTO threeds_challenges (token_hash, payment_id, merchant_id, mode, created_at, expires_at, claimed_until, consumed_at)
		VALUES (x'bb', 'p-claimed', 'm1', 'test', $1, $2, $2, $2)`, []any{at, later}},
		{`INSERT INTO provider_states (provider_id, drained, updated_at) VALUES ('sandbox', 1, $1)`, []any{at}},
		{`INSERT INTO provider_breakers (node, mode, provider_id, state, since, reported_at)
		VALUES ('node-1', 'test', 'sandbox', 'half-open', $1, $2)`, []any{at, later}},
		{`INSERT INTO sandbox_ledger (provider_id, payment_id, mode, amount, currency, outcome, ready_at, created_at)
		VALUES ('sandbox', 'p-never', 'test', 1000, 'EUR', 'declined', $2, $1)`, []any{at, later}},
	} {
		args := make([]any, len(st.args))
		for i, a := range st.args {
			args[i] = a.(time.Time).UnixMicro()
		}
		if _, err := db.ExecContext(ctx, strings.ReplaceAll(st.q, "$", "?"), args...); err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path) // applies 00017 and later
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	storetest.CheckUpgradedCards(t, s, at)
	deleted, err := codec.ScanStoredCard(s.read.QueryRowContext(ctx,
		`SELECT `+codec.StoredCardColumns+` FROM stored_cards WHERE id = 'card-deleted'`))
	if err != nil || deleted.PaymentID != "" || deleted.Sealed.KeyID != "" || deleted.Sealed.WrappedKey != nil ||
		deleted.DeletedAt == nil || !deleted.DeletedAt.Equal(later) {
		t.Errorf("deleted card after the upgrade: %+v, %v", deleted, err)
	}

	storetest.CheckUpgradedIdempotencyAndRouting(t, s, at, later)
	// The mode check PostgreSQL declares holds here too.
	for _, q := range []string{
		`INSERT INTO idempotency_keys (merchant_id, mode, key, fingerprint, state, created_at) VALUES ('m1', 'prod', 'k', x'', 'in_flight', 1)`,
		`UPDATE idempotency_keys SET mode = 'prod' WHERE key = 'idem-done'`,
	} {
		if _, err := s.write.ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "idempotency_keys_mode_check") {
			t.Errorf("%s: %v, want the check to refuse", q, err)
		}
	}
	var zero int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM payments WHERE recovery_until = 0`).Scan(&zero); err != nil || zero != 0 {
		t.Errorf("%d payments with recovery_until 0 after the upgrade (%v)", zero, err)
	}
}
