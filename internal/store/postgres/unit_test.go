package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// TestCommitIsOneRoundTrip checks that a unit of every kind of operation,
// once the connection has prepared its statements, is one round trip,
// whether it commits or is refused.
func TestCommitIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	s, u := openTest(t)
	f := seedMerchant(t, s)
	counter := testenv.CountRoundTrips(t, u)
	counted, err := Open(t.Context(), counter.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = counted.Close() })

	unit := func(p paygate.Payment, from paygate.PaymentStatus) paygate.Unit {
		when := epoch.Add(time.Minute)
		ev := paygate.Event{ID: uuid(), MerchantID: p.MerchantID, Mode: p.Mode, Type: paygate.EventPaymentCaptured,
			PaymentID: p.ID, Payload: []byte(`{}`), CreatedAt: when}
		again := ev
		again.ID = uuid()
		return paygate.Unit{Ops: []paygate.Op{
			paygate.SandboxCharge{ProviderID: "sandbox-eu", PaymentID: p.ID, Mode: p.Mode, Amount: p.Amount,
				Outcome: paygate.SandboxCaptured, ProviderRef: "ref", ReadyAt: when, CreatedAt: when},
			paygate.PaymentTransition{ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{from}, To: paygate.PaymentCaptured, AmountCaptured: &p.Amount.Amount, UpdatedAt: when},
			ev,
			paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: []byte(`{}`)},
			again,
			paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: p.IdempotencyKey, StatusCode: 201, Body: []byte(`{}`)},
		}}
	}
	// The first unit prepares the connection's statements.
	if err := counted.Commit(t.Context(), unit(f.payment(t, s, 100), paygate.PaymentCreated)); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	// The counter's own check: two units are two round trips.
	first, second := unit(f.payment(t, s, 100), paygate.PaymentCreated), unit(f.payment(t, s, 100), paygate.PaymentCreated)
	counter.Start()
	err = errors.Join(counted.Commit(t.Context(), first), counted.Commit(t.Context(), second))
	if got := counter.Stop(); got != 2 || err != nil {
		t.Fatalf("two units: %d round trips (%v), want 2", got, err)
	}
	for _, c := range []struct {
		name string
		from paygate.PaymentStatus
	}{{"committed", paygate.PaymentCreated}, {"refused", paygate.PaymentAuthorized}} {
		u := unit(f.payment(t, s, 100), c.from)
		counter.Start()
		err := counted.Commit(t.Context(), u)
		if got := counter.Stop(); got != 1 {
			t.Errorf("%s unit: %d round trips, want 1", c.name, got)
		}
		if c.from == paygate.PaymentCreated && err != nil {
			t.Errorf("%s unit: %v", c.name, err)
		}
		if c.from != paygate.PaymentCreated && !errors.Is(err, paygate.ErrStateConflict) {
			t.Errorf("%s unit: %v, want ErrStateConflict", c.name, err)
		}
	}
}
