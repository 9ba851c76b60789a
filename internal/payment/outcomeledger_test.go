package payment_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/testenv"
)

// The test-mode sandbox with its ledger in the gateway's store, as serve
// wires it (decisions.md section 22), without latency: a charge answered at
// once is made before anything is written, and the payment is written once,
// with its outcome and the ledger entry; card 4000000000000705 is stored
// first and writes its entry during the charge.

// cutStore is the store of a process that dies before its next unit
// commits: once cut, no unit commits (the process is gone before the
// commit), and what was written before, with whatever the charge wrote
// itself, is all that remains. It keeps the units it was given, committed
// or not, to name the payments they were about.
type cutStore struct {
	paygate.Store
	cut   atomic.Bool
	mu    sync.Mutex
	units []paygate.Unit
}

var errDied = errors.New("the process died before the unit's commit")

func (c *cutStore) Commit(ctx context.Context, u paygate.Unit) error {
	c.mu.Lock()
	c.units = append(c.units, u)
	c.mu.Unlock()
	if c.cut.Load() {
		return errDied
	}
	return c.Store.Commit(ctx, u)
}

// inserted returns the payment the units inserted (NewPayment) with the
// merchant reference, failing when there is none.
func (c *cutStore) inserted(t *testing.T, ref string) paygate.Payment {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.units {
		for _, op := range u.Ops {
			if np, ok := op.(paygate.NewPayment); ok && np.Payment.MerchantRef == ref {
				return np.Payment
			}
		}
	}
	t.Fatalf("no unit inserted payment %s", ref)
	return paygate.Payment{}
}

// outcomeLedgerFixture is a payment service whose sandbox-eu keeps its
// ledger in st, committing through commits (st, or st cut).
type outcomeLedgerFixture struct {
	st    paygate.Store
	svc   *payment.Service
	clock *testenv.Clock
}

func newOutcomeLedgerFixture(t *testing.T, st, commits paygate.Store, clock *testenv.Clock) outcomeLedgerFixture {
	t.Helper()
	prov := sandbox.New("sandbox-eu", []string{"EUR"}, sandbox.WithOutcomeLedger(st), sandbox.WithClock(clock))
	table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{prov}}})
	if err != nil {
		t.Fatal(err)
	}
	svc := payment.New(payment.Config{
		Store: commits, Router: table, Clock: clock, Encoder: httpapi.Encoder{}, Vault: testVault(t),
		ProviderTimeout: 5 * time.Second,
	})
	return outcomeLedgerFixture{st: st, svc: svc, clock: clock}
}

// create reserves the key and creates a 10.50 EUR payment with the card,
// and returns the payment as stored after the call, with Create's error.
func (fx outcomeLedgerFixture) create(t *testing.T, keyID, key, number string) (paygate.Payment, payment.Answer, error) {
	t.Helper()
	if _, reserved, err := fx.st.ReserveIdempotency(t.Context(), reservationOf(keyID, key, fx.clock.Now())); err != nil || !reserved {
		t.Fatalf("reserve %s: %v %v", key, reserved, err)
	}
	res, cerr := fx.svc.Create(t.Context(), payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: key}, paymentInput(key, number))
	p, err := fx.st.PaymentByMerchantRef(t.Context(), "m1", paygate.ModeTest, key)
	if err != nil {
		t.Fatalf("payment %s: %v", key, err)
	}
	return p, payment.StoredAnswer(res), cerr
}

// createReserving is create with the key reserved by the payment's own
// first write (Request.Reservation), as the API does for a key read ahead.
// It returns Create's error alone: the payment may not be stored.
func (fx outcomeLedgerFixture) createReserving(t *testing.T, keyID, key, number string) error {
	t.Helper()
	r := reservationOf(keyID, key, fx.clock.Now())
	_, err := fx.svc.Create(t.Context(), payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: key, Reservation: &r}, paymentInput(key, number))
	return err
}

// reservationOf is the reservation of key by the API key keyID at now.
func reservationOf(keyID, key string, now time.Time) paygate.IdempotencyReservation {
	return paygate.IdempotencyReservation{MerchantID: "m1", Mode: paygate.ModeTest, Key: key, Fingerprint: []byte("fp"), APIKeyID: keyID, Now: now}
}

// paymentInput is a 10.50 EUR payment with the card whose reference is
// the idempotency key.
func paymentInput(key, number string) payment.CreateInput {
	return payment.CreateInput{
		Amount: paygate.Money{Amount: 1050, Currency: "EUR"}, AmountText: "10.50", Method: paygate.MethodCard,
		CustomerExternalID: "c1", MerchantRef: key,
		Card: &paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2040, CVV: "123", HolderName: "A"},
	}
}

// wantNothingOf fails unless neither the payment nor a ledger entry of it
// is stored: the sandbox never saw it, nothing was charged.
func (fx outcomeLedgerFixture) wantNothingOf(t *testing.T, p paygate.Payment) {
	t.Helper()
	if _, err := fx.st.PaymentByID(t.Context(), "m1", paygate.ModeTest, p.ID); !paygate.IsNotFound(err) {
		t.Errorf("payment %s: read %v, want NOT_FOUND", p.MerchantRef, err)
	}
	if e := fx.entry(t, p); e != nil {
		t.Errorf("payment %s: the ledger holds %+v without the payment", p.MerchantRef, e)
	}
}

// entry returns the sandbox-eu ledger entry of the payment, or nil.
func (fx outcomeLedgerFixture) entry(t *testing.T, p paygate.Payment) *paygate.SandboxCharge {
	t.Helper()
	c, err := fx.st.SandboxChargeByPayment(t.Context(), "sandbox-eu", p.ID)
	if paygate.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestOutcomeLedgerCommitsWithTheOutcome: every outcome, a challenge's
// included, is stored with its ledger entry.
func TestOutcomeLedgerCommitsWithTheOutcome(t *testing.T) {
	t.Parallel()
	merchantOnEngines(t, func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string) {
		fx := newOutcomeLedgerFixture(t, st, st, clock)
		for _, c := range []struct {
			number  string
			status  paygate.PaymentStatus
			outcome paygate.SandboxOutcome
			answer  int
		}{
			{sandbox.CardVisa, paygate.PaymentCaptured, paygate.SandboxCaptured, 201},
			{sandbox.CardAuthorize, paygate.PaymentAuthorized, paygate.SandboxAuthorized, 201},
			{sandbox.CardDeclined, paygate.PaymentFailed, paygate.SandboxDeclined, 400},
			{sandbox.CardProviderError, paygate.PaymentFailed, paygate.SandboxErrored, 502},
			{sandbox.Card3DS, paygate.PaymentPending3DS, paygate.SandboxPending3DS, 201},
		} {
			p, ans, err := fx.create(t, keyID, "k-"+c.number, c.number)
			if err != nil || p.Status != c.status || ans.Status != c.answer {
				t.Fatalf("card %s: %s, answer %d, %v; want %s, %d", c.number, p.Status, ans.Status, err, c.status, c.answer)
			}
			e := fx.entry(t, p)
			if e == nil || e.Outcome != c.outcome || e.ProviderRef != p.ProviderRef {
				t.Fatalf("card %s: ledger entry %+v, want %s with the payment's reference %q", c.number, e, c.outcome, p.ProviderRef)
			}
			if c.status == paygate.PaymentPending3DS {
				cs, err := st.ThreeDSChallenges(t.Context(), paygate.ThreeDSChallengeQuery{MerchantID: "m1", Mode: paygate.ModeTest, PaymentID: p.ID})
				if err != nil || len(cs) != 1 {
					t.Fatalf("challenges of the pending_3ds payment: %d, %v", len(cs), err)
				}
			}
		}
	})
}

// TestOutcomeLedgerCutBeforeTheUnit: a process that dies after the charge
// of a card answered at once, before the payment's one unit commits,
// leaves nothing: no payment, no ledger entry (nothing charged), and the
// key its request reserved is free again once the request's lease has run
// out. Card 4000000000000705 was stored before its charge and wrote its
// entry during it: the cut leaves the created payment and its entry, and
// recovery finds it and captures it.
func TestOutcomeLedgerCutBeforeTheUnit(t *testing.T) {
	t.Parallel()
	merchantOnEngines(t, func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string) {
		cut := &cutStore{Store: st}
		cut.cut.Store(true)
		dying := newOutcomeLedgerFixture(t, st, cut, clock)
		if _, _, err := st.ReserveIdempotency(t.Context(), reservationOf(keyID, "k-visa", clock.Now())); err != nil {
			t.Fatal(err)
		}
		_, err := dying.svc.Create(t.Context(), payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: "k-visa"}, paymentInput("k-visa", sandbox.CardVisa))
		if !errors.Is(err, errDied) {
			t.Fatalf("visa cut: %v", err)
		}
		visa := cut.inserted(t, "k-visa")
		if visa.Status != paygate.PaymentCaptured {
			t.Fatalf("visa cut: the unit inserted it %s, want captured", visa.Status)
		}
		dying.wantNothingOf(t, visa)

		timeout, _, err := dying.create(t, keyID, "k-timeout", sandbox.CardTimeout)
		if !errors.Is(err, errDied) || timeout.Status != paygate.PaymentCreated {
			t.Fatalf("timeout card cut: %s, %v", timeout.Status, err)
		}
		if e := dying.entry(t, timeout); e == nil || e.Outcome != paygate.SandboxCaptured {
			t.Fatalf("timeout card cut: ledger entry %+v, want its own captured entry", e)
		}

		// The restarted process: the leases have run out, and the
		// timeout card's inquiry answers.
		clock.Add(paygate.PaymentLease + sandbox.TimeoutAfter + sandbox.InquiryDelay)
		fx := newOutcomeLedgerFixture(t, st, st, clock)
		if n := fx.svc.NewRecovery(time.Second).RunOnce(t.Context()); n != 1 {
			t.Fatalf("recovery finished %d payments, want 1", n)
		}
		got, err := st.PaymentByID(t.Context(), "m1", paygate.ModeTest, timeout.ID)
		if err != nil || got.Status != paygate.PaymentCaptured || got.ProviderID != "sandbox-eu" {
			t.Fatalf("timeout card recovered: %s by %q, %v; want captured by sandbox-eu", got.Status, got.ProviderID, err)
		}
		fx.wantNothingOf(t, visa)
		// The visa's request left its key in flight without a payment:
		// abandoned now, and a retry starts afresh.
		if _, reserved, err := st.ReserveIdempotency(t.Context(), reservationOf(keyID, "k-visa", clock.Now())); err != nil || !reserved {
			t.Fatalf("visa's key after the lease: reserved %v, %v; want it free", reserved, err)
		}
	})
}

// TestOutcomeLedgerRefusedUnitChargesNothing: a payment whose one unit is
// refused after the sandbox answered (its API key revoked meanwhile, its
// idempotency key answered by a concurrent request) leaves no payment and
// no ledger entry: the sandbox's entry was only ever in that unit.
func TestOutcomeLedgerRefusedUnitChargesNothing(t *testing.T) {
	t.Parallel()
	merchantOnEngines(t, func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string) {
		units := &cutStore{Store: st}
		fx := newOutcomeLedgerFixture(t, st, units, clock)

		// Another request with the key committed its answer first.
		if _, _, err := st.ReserveIdempotency(t.Context(), reservationOf(keyID, "k-taken", clock.Now())); err != nil {
			t.Fatal(err)
		}
		first := paygate.IdempotencyCompletion{MerchantID: "m1", Mode: paygate.ModeTest, Key: "k-taken", StatusCode: 201, Body: []byte(`{"first":1}`)}
		if err := st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{first}}); err != nil {
			t.Fatal(err)
		}
		err := fx.createReserving(t, keyID, "k-taken", sandbox.CardVisa)
		var taken *paygate.KeyTakenError
		if !errors.As(err, &taken) || string(taken.Record.Body) != `{"first":1}` {
			t.Fatalf("taken key: %v, want the first request's record", err)
		}
		fx.wantNothingOf(t, units.inserted(t, "k-taken"))

		revoke := paygate.APIKeyRevocation{ID: keyID, At: clock.Now()}
		if err := st.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{revoke}}); err != nil {
			t.Fatal(err)
		}
		clock.Add(time.Second)
		for _, number := range []string{sandbox.CardVisa, sandbox.CardDeclined, sandbox.Card3DS} {
			key := "k-revoked-" + number
			err = fx.createReserving(t, keyID, key, number)
			if paygate.ErrorCode(err) != paygate.CodeUnauthorized || !errors.Is(err, payment.ErrNotReserved) {
				t.Fatalf("card %s with a revoked key: %v, want UNAUTHORIZED before any reservation", number, err)
			}
			fx.wantNothingOf(t, units.inserted(t, key))
		}
	})
}
