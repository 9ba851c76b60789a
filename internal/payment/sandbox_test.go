package payment_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/store/postgres"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
)

// sandboxFixture is a payment service on one engine with sandbox-eu, which
// keeps its ledger in memory and shares the service's movable clock (so
// that the timeout card's inquiry answers once the test moves the clock).
type sandboxFixture struct {
	st    paygate.Store
	svc   *payment.Service
	clock *testenv.Clock
	prov  *sandbox.Provider
	keyID string
}

// sandboxEngines runs f on SQLite and on PostgreSQL.
func sandboxEngines(t *testing.T, f func(t *testing.T, fx *sandboxFixture)) {
	t.Helper()
	merchantOnEngines(t, func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string) {
		prov := sandbox.New("sandbox-eu", []string{"EUR"}, sandbox.WithClock(clock))
		table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{prov}}})
		if err != nil {
			t.Fatal(err)
		}
		svc := payment.New(payment.Config{
			Store: st, Router: table, Clock: clock, Encoder: httpapi.Encoder{}, Vault: testVault(t),
			ProviderTimeout: 5 * time.Second,
		})
		f(t, &sandboxFixture{st: st, svc: svc, clock: clock, prov: prov, keyID: keyID})
	})
}

// merchantOnEngines runs f, in parallel, on a fresh SQLite and a fresh
// PostgreSQL store, each with merchant "m1" and its test key, and a movable
// clock.
func merchantOnEngines(t *testing.T, f func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string)) {
	t.Helper()
	engines := map[string]func(t *testing.T) paygate.Store{
		"sqlite": func(t *testing.T) paygate.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"postgres": func(t *testing.T) paygate.Store {
			s, err := postgres.Open(t.Context(), testenv.PostgresSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			t.Cleanup(func() { _ = st.Close() })
			clock := testenv.NewClock(time.Date(2031, 3, 14, 15, 9, 26, 0, time.UTC))
			_, key, err := auth.NewKey("key-1", "m1", paygate.ModeTest, paygate.KeySecret, clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: "m1", Name: "Ada's Books", CreatedAt: clock.Now()}, key}}); err != nil {
				t.Fatal(err)
			}
			f(t, st, clock, key.ID)
		})
	}
}

// reservation is the reservation of key that httpapi makes before a use
// case runs, with the fingerprint every request of these tests shares.
func (fx *sandboxFixture) reservation(key string) paygate.IdempotencyReservation {
	return paygate.IdempotencyReservation{
		MerchantID: "m1", Mode: paygate.ModeTest, Key: key, Fingerprint: []byte("fp"), APIKeyID: fx.keyID, Now: fx.clock.Now(),
	}
}

// pay reserves the key as httpapi does and creates a 10.50 EUR payment with
// the card under it.
func (fx *sandboxFixture) pay(t *testing.T, key, number string) payment.Answer {
	t.Helper()
	if _, reserved, err := fx.st.ReserveIdempotency(t.Context(), fx.reservation(key)); err != nil || !reserved {
		t.Fatalf("reserve %s: %v %v", key, reserved, err)
	}
	ans, err := fx.svc.Create(t.Context(), payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: key}, payment.CreateInput{
		Amount: paygate.Money{Amount: 1050, Currency: "EUR"}, AmountText: "10.50", Method: paygate.MethodCard,
		CustomerExternalID: "c1", MerchantRef: key,
		Card: &paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2040, CVV: "123", HolderName: "A"},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return payment.StoredAnswer(ans)
}

// replay is what a retry with the key finds: the record ReserveIdempotency
// returns for a key that is taken (the key must not be free).
func (fx *sandboxFixture) replay(t *testing.T, key string) paygate.IdempotencyRecord {
	t.Helper()
	rec, reserved, err := fx.st.ReserveIdempotency(t.Context(), fx.reservation(key))
	if err != nil || reserved {
		t.Fatalf("retry with %s: reserved %v, %v", key, reserved, err)
	}
	return rec
}

// assertReplays fails unless a retry with key gets status and body, byte
// for byte.
func (fx *sandboxFixture) assertReplays(t *testing.T, key string, status int, body []byte) {
	t.Helper()
	rec := fx.replay(t, key)
	if rec.State != paygate.IdempotencyComplete || rec.StatusCode != status || !bytes.Equal(rec.Body, body) {
		t.Fatalf("retry with %s finds %s %d %s; want the stored %d %s", key, rec.State, rec.StatusCode, rec.Body, status, body)
	}
}
