package payment_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/store/plan"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/vault"
)

// fakeProvider answers every charge with a fixed result or error and counts
// the calls.
type fakeProvider struct {
	id     string
	res    paygate.ChargeResult
	err    error
	calls  atomic.Int32
	refund func() (paygate.RefundResult, error)
}

func (f *fakeProvider) ID() string { return f.id }
func (f *fakeProvider) Charge(ctx context.Context, _ paygate.ChargeRequest) (paygate.ChargeResult, error) {
	f.calls.Add(1)
	if f.err == context.DeadlineExceeded {
		<-ctx.Done()
		return paygate.ChargeResult{}, ctx.Err()
	}
	return f.res, f.err
}
func (f *fakeProvider) Capture(context.Context, paygate.PaymentOp) error { return nil }
func (f *fakeProvider) Void(context.Context, paygate.PaymentOp) error    { return nil }
func (f *fakeProvider) Refund(context.Context, paygate.RefundRequest) (paygate.RefundResult, error) {
	if f.refund != nil {
		return f.refund()
	}
	return paygate.RefundResult{Status: paygate.RefundSucceeded}, nil
}

var (
	captured    = paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: "ref-1"}
	unavailable = &paygate.ProviderError{Kind: paygate.ProviderUnavailable, Message: "down"}
	unknown     = &paygate.ProviderError{Kind: paygate.ProviderUnknownOutcome, Message: "no answer"}
	failed      = &paygate.ProviderError{Kind: paygate.ProviderFailed, Message: "boom"}
)

type fixture struct {
	st     *sqlite.Store
	router paygate.Router
	svc    *payment.Service
	req    payment.Request
	keyID  string
}

// reserve reserves an idempotency key as httpapi does before a use case.
func (f fixture) reserve(t *testing.T, key, fp string) (paygate.IdempotencyRecord, bool) {
	t.Helper()
	rec, reserved, err := f.st.ReserveIdempotency(context.Background(), paygate.IdempotencyReservation{
		MerchantID: "m1", Mode: paygate.ModeTest, Key: key, Fingerprint: []byte(fp), APIKeyID: f.keyID, Now: paygate.SystemClock{}.Now(),
	})
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	return rec, reserved
}

func newFixture(t *testing.T, timeout time.Duration, route ...paygate.Provider) fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	table, err := provider.NewTable(map[paygate.Mode]provider.Routes{
		paygate.ModeTest: {Default: route},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := paygate.SystemClock{}.Now()
	_, key, err := auth.NewKey("key-1", "m1", paygate.ModeTest, paygate.KeySecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.Merchant{ID: "m1", Name: "M", CreatedAt: now}, key}}); err != nil {
		t.Fatal(err)
	}
	svc := payment.New(payment.Config{
		Store: st, Router: table, Encoder: httpapi.Encoder{}, Vault: testVault(t), ProviderTimeout: timeout,
	})
	return fixture{st: st, router: table, svc: svc, keyID: key.ID, req: payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: "ik-1"}}
}

// create reserves the key, as httpapi does, and runs Create.
func (f fixture) create(t *testing.T) (payment.Answer, paygate.Payment) {
	t.Helper()
	ctx := context.Background()
	if _, reserved := f.reserve(t, f.req.IdempotencyKey, "fp"); !reserved {
		t.Fatal("key not reserved")
	}
	res, err := f.svc.Create(ctx, f.req, payment.CreateInput{
		Amount: paygate.Money{Amount: 1000, Currency: "EUR"}, AmountText: "10.00", Method: paygate.MethodCard,
		CustomerExternalID: "c1", MerchantRef: "ref",
		Card: &paygate.Card{Number: "4242424242424242", ExpMonth: 12, ExpYear: 2040, CVV: "123", HolderName: "A"},
	})
	ans := payment.StoredAnswer(res)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	p, err := f.st.PaymentByMerchantRef(ctx, "m1", paygate.ModeTest, "ref")
	if err != nil {
		t.Fatal(err)
	}
	return ans, p
}

func TestCreateFailover(t *testing.T) {
	t.Parallel()
	t.Run("OK_UnavailableFailsOver", func(t *testing.T) {
		t.Parallel()
		a := &fakeProvider{id: "a", err: unavailable}
		b := &fakeProvider{id: "b", res: captured}
		f := newFixture(t, time.Second, a, b)
		ans, p := f.create(t)
		if ans.Status != 201 || p.Status != paygate.PaymentCaptured || p.ProviderID != "b" || p.AmountCaptured != 1000 {
			t.Fatalf("answer %d, payment %+v", ans.Status, p)
		}
		if a.calls.Load() != 1 || b.calls.Load() != 1 {
			t.Fatalf("calls a=%d b=%d", a.calls.Load(), b.calls.Load())
		}
	})
	t.Run("ErrAllUnavailable", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, time.Second, &fakeProvider{id: "a", err: unavailable}, &fakeProvider{id: "b", err: unavailable})
		ans, p := f.create(t)
		if ans.Status != 502 || p.Status != paygate.PaymentFailed || p.ErrorCode != "PROVIDER_ERROR" {
			t.Fatalf("answer %d %s, payment %+v", ans.Status, ans.Body, p)
		}
	})
	t.Run("ErrFailedDoesNotFailOver", func(t *testing.T) {
		t.Parallel()
		b := &fakeProvider{id: "b", res: captured}
		f := newFixture(t, time.Second, &fakeProvider{id: "a", err: failed}, b)
		ans, p := f.create(t)
		if ans.Status != 502 || p.Status != paygate.PaymentFailed || p.ProviderID != "a" || b.calls.Load() != 0 {
			t.Fatalf("answer %d, payment %+v, b calls %d", ans.Status, p, b.calls.Load())
		}
	})
	for name, err := range map[string]error{"UnknownOutcome": unknown, "Deadline": context.DeadlineExceeded} {
		t.Run("Err"+name+"NeverFailsOver", func(t *testing.T) {
			t.Parallel()
			b := &fakeProvider{id: "b", res: captured}
			f := newFixture(t, 50*time.Millisecond, &fakeProvider{id: "a", err: err}, b)
			ans, p := f.create(t)
			if ans.Status != 202 || p.Status != paygate.PaymentCreated || p.ProviderID != "a" || b.calls.Load() != 0 {
				t.Fatalf("answer %d %s, payment %+v, b calls %d", ans.Status, ans.Body, p, b.calls.Load())
			}
			// The 202 is the key's answer: retries replay it (decisions §15).
			rec, reserved := f.reserve(t, "ik-1", "fp")
			if reserved || rec.State != paygate.IdempotencyComplete || rec.StatusCode != 202 ||
				string(rec.Body) != string(ans.Body) || rec.PaymentID != p.ID {
				t.Fatalf("idempotency after unknown outcome: %+v reserved=%v", rec, reserved)
			}
		})
	}
}

func TestRefundWorkerRetriesProviderErrors(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	prov := &fakeProvider{id: "a", res: captured, refund: func() (paygate.RefundResult, error) {
		if fail.Load() {
			return paygate.RefundResult{}, failed
		}
		return paygate.RefundResult{Status: paygate.RefundSucceeded}, nil
	}}
	f := newFixture(t, time.Second, prov)
	_, p := f.create(t)
	ctx := context.Background()
	f.req.IdempotencyKey = "ik-2"
	f.reserve(t, "ik-2", "x")
	res, err := f.svc.Refund(ctx, f.req, payment.RefundInput{PaymentID: p.ID, Amount: paygate.Money{Amount: 500, Currency: "EUR"}, AmountText: "5.00"})
	ans := payment.StoredAnswer(res)
	if err != nil || ans.Status != 201 {
		t.Fatalf("refund: %v %d", err, ans.Status)
	}
	// staleAfter 0: a pending refund is retried on every run.
	w := f.svc.NewRefundWorker(time.Hour, 0)
	if n := w.RunOnce(ctx); n != 0 {
		t.Fatalf("a failing provider finished %d refunds", n)
	}
	refunds, err := f.st.RefundsByPayment(ctx, "m1", paygate.ModeTest, p.ID)
	if err != nil || len(refunds) != 1 || refunds[0].Status != paygate.RefundPending {
		t.Fatalf("after provider error: %+v %v", refunds, err)
	}
	fail.Store(false)
	if n := w.RunOnce(ctx); n != 1 {
		t.Fatalf("retry finished %d refunds, want 1", n)
	}
	r, _ := f.st.RefundByID(ctx, "m1", paygate.ModeTest, refunds[0].ID)
	if r.Status != paygate.RefundSucceeded {
		t.Fatalf("status %s", r.Status)
	}
}

// ledgerProvider is a fakeProvider that keeps its ledger in the gateway's
// database, as the sandboxes do.
type ledgerProvider struct{ *fakeProvider }

func (ledgerProvider) LedgerInGateway() bool { return true }

// deferStore records, for every payment insert, whether the engines may
// commit it lazily (plan.LazyCreate of what the store was given).
type deferStore struct {
	*sqlite.Store
	deferred []bool
}

func (d *deferStore) CreatePayment(ctx context.Context, np paygate.NewPayment) (paygate.Payment, error) {
	d.deferred = append(d.deferred, plan.LazyCreate(np))
	return d.Store.CreatePayment(ctx, np)
}

// The insert before the charge skips its own flush only when every provider
// of the route records the charge in the gateway's database after it; a
// remote provider anywhere in the route keeps it durable before the call.
func TestCreateRouteGoesWithInsert(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		route []paygate.Provider
		want  bool
	}{
		{"OK_AllLedgersInGateway", []paygate.Provider{ledgerProvider{&fakeProvider{id: "a", res: captured}}, ledgerProvider{&fakeProvider{id: "b", res: captured}}}, true},
		{"OK_RemoteProvider", []paygate.Provider{&fakeProvider{id: "a", res: captured}}, false},
		{"OK_RemoteAfterLedger", []paygate.Provider{ledgerProvider{&fakeProvider{id: "a", err: unavailable}}, &fakeProvider{id: "b", res: captured}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, time.Second, tc.route...)
			ds := &deferStore{Store: f.st}
			f.svc = payment.New(payment.Config{
				Store: ds, Router: f.router, Encoder: httpapi.Encoder{}, Vault: testVault(t), ProviderTimeout: time.Second,
			})
			ans, p := f.create(t)
			if ans.Status != 201 || p.Status != paygate.PaymentCaptured {
				t.Fatalf("answer %d, payment %s", ans.Status, p.Status)
			}
			if len(ds.deferred) != 1 || ds.deferred[0] != tc.want {
				t.Fatalf("lazy inserts: %v, want [%v]", ds.deferred, tc.want)
			}
		})
	}
}

// testVault is a card vault under a fixed master key.
func testVault(t testing.TB) *vault.Vault {
	t.Helper()
	v, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
