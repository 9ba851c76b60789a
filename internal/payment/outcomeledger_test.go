package payment_test

import (
	"context"
	"errors"
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
// wires it (decisions.md section 22), without latency: the ledger entry of a
// charge commits in the unit of the payment's outcome, except card
// 4000000000000705's, which the charge writes itself.

// cutStore is the store of a process that dies between a payment's two
// round trips: once cut, no unit commits (the process is gone before the
// outcome's commit), and the payment's insert and whatever the charge wrote
// itself are all that remain.
type cutStore struct {
	paygate.Store
	cut atomic.Bool
}

var errDied = errors.New("the process died before the outcome's commit")

func (c *cutStore) Commit(ctx context.Context, u paygate.Unit) error {
	if c.cut.Load() {
		return errDied
	}
	return c.Store.Commit(ctx, u)
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
	r := paygate.IdempotencyReservation{MerchantID: "m1", Mode: paygate.ModeTest, Key: key, Fingerprint: []byte("fp"), APIKeyID: keyID, Now: fx.clock.Now()}
	if _, reserved, err := fx.st.ReserveIdempotency(t.Context(), r); err != nil || !reserved {
		t.Fatalf("reserve %s: %v %v", key, reserved, err)
	}
	res, cerr := fx.svc.Create(t.Context(), payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: key}, payment.CreateInput{
		Amount: paygate.Money{Amount: 1050, Currency: "EUR"}, AmountText: "10.50", Method: paygate.MethodCard,
		CustomerExternalID: "c1", MerchantRef: key,
		Card: &paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2040, CVV: "123", HolderName: "A"},
	})
	p, err := fx.st.PaymentByMerchantRef(t.Context(), "m1", paygate.ModeTest, key)
	if err != nil {
		t.Fatalf("payment %s: %v", key, err)
	}
	return p, payment.StoredAnswer(res), cerr
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

// TestOutcomeLedgerCutBetweenRoundTrips: a process that dies after the
// payment's insert and the charge, before the outcome's commit, leaves a
// created payment and no ledger entry; recovery asks the sandbox, which
// never saw it, and fails it with PROVIDER_ERROR, nothing charged, storing
// the 502 under the key. Card 4000000000000705 wrote its entry during the
// charge: recovery finds it and captures the payment.
func TestOutcomeLedgerCutBetweenRoundTrips(t *testing.T) {
	t.Parallel()
	merchantOnEngines(t, func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string) {
		cut := &cutStore{Store: st}
		cut.cut.Store(true)
		dying := newOutcomeLedgerFixture(t, st, cut, clock)
		visa, _, err := dying.create(t, keyID, "k-visa", sandbox.CardVisa)
		if !errors.Is(err, errDied) || visa.Status != paygate.PaymentCreated || visa.ProviderID != "" {
			t.Fatalf("visa cut: %s by %q, %v", visa.Status, visa.ProviderID, err)
		}
		if e := dying.entry(t, visa); e != nil {
			t.Fatalf("visa cut: the ledger holds %+v without the outcome", e)
		}
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
		if n := fx.svc.NewRecovery(time.Second).RunOnce(t.Context()); n != 2 {
			t.Fatalf("recovery finished %d payments, want 2", n)
		}
		got, err := st.PaymentByID(t.Context(), "m1", paygate.ModeTest, visa.ID)
		if err != nil || got.Status != paygate.PaymentFailed || got.ErrorCode != string(paygate.CodeProviderError) || got.ProviderID != "" {
			t.Fatalf("visa recovered: %s %s by %q, %v; want failed PROVIDER_ERROR by none", got.Status, got.ErrorCode, got.ProviderID, err)
		}
		if e := fx.entry(t, got); e != nil {
			t.Fatalf("visa recovered: the ledger holds %+v: it was charged", e)
		}
		rec, reserved, err := st.ReserveIdempotency(t.Context(), paygate.IdempotencyReservation{
			MerchantID: "m1", Mode: paygate.ModeTest, Key: "k-visa", Fingerprint: []byte("fp"), APIKeyID: keyID, Now: clock.Now()})
		if err != nil || reserved || rec.State != paygate.IdempotencyComplete || rec.StatusCode != 502 {
			t.Fatalf("visa's key after recovery: %+v (reserved %v, %v), want the 502", rec, reserved, err)
		}
		got, err = st.PaymentByID(t.Context(), "m1", paygate.ModeTest, timeout.ID)
		if err != nil || got.Status != paygate.PaymentCaptured || got.ProviderID != "sandbox-eu" {
			t.Fatalf("timeout card recovered: %s by %q, %v; want captured by sandbox-eu", got.Status, got.ProviderID, err)
		}
	})
}
