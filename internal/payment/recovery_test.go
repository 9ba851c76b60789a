package payment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
)

// inquirer is a fake provider that also answers status inquiries.
type inquirer struct {
	*fakeProvider
	mu      sync.Mutex
	answer  paygate.Inquiry
	err     error
	queries atomic.Int32
}

func (q *inquirer) set(a paygate.Inquiry, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.answer, q.err = a, err
}

func (q *inquirer) Inquire(_ context.Context, _ string) (paygate.Inquiry, error) {
	q.queries.Add(1)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.answer, q.err
}

var _ paygate.Inquirer = (*inquirer)(nil)

// crashedPayment inserts a payment as a request does before it calls a
// provider, and leaves it there as a crash would: created, no provider,
// its key in flight. Its lease has passed.
func (f fixture) crashedPayment(t *testing.T, key string) paygate.Payment {
	t.Helper()
	if _, reserved := f.reserve(t, key, "fp-"+key); !reserved {
		t.Fatal("key not reserved")
	}
	now := paygate.SystemClock{}.Now()
	p, err := f.st.CreatePayment(context.Background(), paygate.NewPayment{
		Payment: paygate.Payment{
			ID: id.New(), MerchantID: "m1", Mode: paygate.ModeTest, Status: paygate.PaymentCreated,
			Amount: paygate.Money{Amount: 1000, Currency: "EUR"}, AmountText: "10.00", Method: paygate.MethodCard,
			MerchantRef: "crash-" + key, Metadata: []byte("{}"), IdempotencyKey: key,
			LeaseUntil: now.Add(-time.Second), CreatedAt: now.Add(-paygate.PaymentLease - time.Second), UpdatedAt: now,
		},
		CustomerExternalID: "c1", NewCustomerID: id.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stored returns the payment, its events and its key's record.
func (f fixture) stored(t *testing.T, p paygate.Payment) (paygate.Payment, []paygate.Event, paygate.IdempotencyRecord) {
	t.Helper()
	ctx := context.Background()
	got, err := f.st.PaymentByID(ctx, p.MerchantID, p.Mode, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	all, err := f.st.Events(ctx, paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode})
	if err != nil {
		t.Fatal(err)
	}
	var evs []paygate.Event
	for _, e := range all {
		if e.PaymentID == p.ID {
			evs = append(evs, e)
		}
	}
	rec, reserved := f.reserve(t, p.IdempotencyKey, "fp-other")
	if reserved {
		t.Fatalf("the key %s was free again", p.IdempotencyKey)
	}
	return got, evs, rec
}

func TestRecoveryUnknownOutcome(t *testing.T) {
	t.Parallel()
	a := &inquirer{fakeProvider: &fakeProvider{id: "a", err: unknown}}
	a.set(paygate.Inquiry{Status: paygate.InquiryPending}, nil)
	b := &fakeProvider{id: "b", res: captured}
	f := newFixture(t, time.Second, a, b)
	ans, p := f.create(t)
	if ans.Status != 202 || p.Status != paygate.PaymentCreated || p.ProviderID != "a" || b.calls.Load() != 0 {
		t.Fatalf("create: %d %s, %+v", ans.Status, ans.Body, p)
	}
	ctx := context.Background()
	// The request handed the payment over: no need to wait for its lease.
	rec := f.svc.NewRecovery(time.Second)
	if n := rec.RunOnce(ctx); n != 0 || a.queries.Load() != 1 {
		t.Fatalf("while the provider is processing: finished %d after %d inquiries", n, a.queries.Load())
	}
	if got, _, r := f.stored(t, p); got.Status != paygate.PaymentCreated || r.State != paygate.IdempotencyComplete ||
		r.StatusCode != 202 || string(r.Body) != string(ans.Body) {
		t.Fatalf("still processing: payment %s, key %s %d %s", got.Status, r.State, r.StatusCode, r.Body)
	}
	// Claimed for this run: another node does not ask at the same time.
	if n := f.svc.NewRecovery(time.Second).RunOnce(ctx); n != 0 || a.queries.Load() != 1 {
		t.Fatalf("a claimed payment was asked about again (%d inquiries)", a.queries.Load())
	}

	// Once the claim lapses (before the next run), the payment is asked
	// about again and finished.
	a.set(paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: "ref-a"}}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for rec.RunOnce(ctx) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the payment was not finished once the claim lapsed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, evs, r := f.stored(t, p)
	if got.Status != paygate.PaymentCaptured || got.ProviderID != "a" || got.ProviderRef != "ref-a" || got.AmountCaptured != 1000 {
		t.Fatalf("payment after recovery: %+v", got)
	}
	if len(evs) != 1 || evs[0].Type != paygate.EventPaymentCaptured {
		t.Fatalf("events: %+v", evs)
	}
	// The 202 the client was given stays the key's answer (decisions §15).
	if r.State != paygate.IdempotencyComplete || r.StatusCode != 202 || string(r.Body) != string(ans.Body) {
		t.Fatalf("stored answer %d %s, want the 202 %s", r.StatusCode, r.Body, ans.Body)
	}
	if n := rec.RunOnce(ctx); n != 0 {
		t.Fatalf("a finished payment was recovered again (%d)", n)
	}
}

func TestRecoveryAfterCrash(t *testing.T) {
	t.Parallel()
	declined := paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{
		Status: paygate.PaymentFailed, ProviderRef: "ref-b", DeclineCode: paygate.DeclineInsufficientFunds, Message: "Your card has insufficient funds.",
	}}
	cases := []struct {
		name       string
		a, b       paygate.Inquiry
		wantStatus paygate.PaymentStatus
		wantCode   string
		wantAnswer int
		wantProv   string
	}{
		{"OKDeclinedAtSecond", paygate.Inquiry{Status: paygate.InquiryUnknown}, declined, paygate.PaymentFailed, "CARD_DECLINED", 400, "b"},
		{"OKAuthorizedAtFirst", paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{Status: paygate.PaymentAuthorized, ProviderRef: "r"}},
			paygate.Inquiry{Status: paygate.InquiryUnknown}, paygate.PaymentAuthorized, "", 201, "a"},
		{"OKErrored", paygate.Inquiry{Status: paygate.InquiryErrored, Message: "boom"}, paygate.Inquiry{Status: paygate.InquiryUnknown},
			paygate.PaymentFailed, "PROVIDER_ERROR", 502, "a"},
		{"OKUnknownEverywhere", paygate.Inquiry{Status: paygate.InquiryUnknown}, paygate.Inquiry{Status: paygate.InquiryUnknown},
			paygate.PaymentFailed, "PROVIDER_ERROR", 502, ""},
		{"OKPending3DSNeverShown", paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{Status: paygate.PaymentPending3DS}},
			paygate.Inquiry{Status: paygate.InquiryUnknown}, paygate.PaymentFailed, "PROVIDER_ERROR", 502, "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := &inquirer{fakeProvider: &fakeProvider{id: "a"}}
			b := &inquirer{fakeProvider: &fakeProvider{id: "b"}}
			a.set(c.a, nil)
			b.set(c.b, nil)
			f := newFixture(t, time.Second, a, b)
			p := f.crashedPayment(t, "ik-crash")
			if n := f.svc.NewRecovery(time.Hour).RunOnce(context.Background()); n != 1 {
				t.Fatalf("finished %d, want 1", n)
			}
			got, evs, r := f.stored(t, p)
			if got.Status != c.wantStatus || got.ErrorCode != c.wantCode || got.ProviderID != c.wantProv {
				t.Fatalf("payment %+v; want %s %q by %q", got, c.wantStatus, c.wantCode, c.wantProv)
			}
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1: %+v", len(evs), evs)
			}
			if r.State != paygate.IdempotencyComplete || r.StatusCode != c.wantAnswer {
				t.Fatalf("stored answer %s %d %s, want %d", r.State, r.StatusCode, r.Body, c.wantAnswer)
			}
			var body struct {
				Error *struct {
					Name          string `json:"name"`
					TransactionID string `json:"transactionId"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if (body.Error != nil) != (c.wantCode != "") || (body.Error != nil && (body.Error.Name != c.wantCode || body.Error.TransactionID != p.ID)) {
				t.Fatalf("stored body %s for %s", r.Body, c.wantCode)
			}
		})
	}
}

func TestRecoveryWaits(t *testing.T) {
	t.Parallel()
	t.Run("ForTheLease", func(t *testing.T) {
		t.Parallel()
		a := &inquirer{fakeProvider: &fakeProvider{id: "a"}}
		f := newFixture(t, time.Second, a)
		if _, reserved := f.reserve(t, "ik-young", "fp"); !reserved {
			t.Fatal("not reserved")
		}
		now := paygate.SystemClock{}.Now()
		p, err := f.st.CreatePayment(context.Background(), paygate.NewPayment{
			Payment: paygate.Payment{ID: id.New(), MerchantID: "m1", Mode: paygate.ModeTest, Amount: paygate.Money{Amount: 1, Currency: "EUR"},
				AmountText: "0.01", Method: paygate.MethodCard, IdempotencyKey: "ik-young", LeaseUntil: now.Add(paygate.PaymentLease), CreatedAt: now, UpdatedAt: now},
			CustomerExternalID: "c1", NewCustomerID: id.New(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := f.svc.NewRecovery(time.Hour).RunOnce(context.Background()); n != 0 || a.queries.Load() != 0 {
			t.Fatalf("a payment in its lease was taken over (%d, %d inquiries)", n, a.queries.Load())
		}
		if got, _, _ := f.stored(t, p); got.Status != paygate.PaymentCreated {
			t.Fatalf("status %s", got.Status)
		}
	})
	for name, prov := range map[string]func() paygate.Provider{
		"ForAnInquiryThatFails": func() paygate.Provider {
			q := &inquirer{fakeProvider: &fakeProvider{id: "a"}}
			q.set(paygate.Inquiry{}, unavailable)
			return q
		},
		"ForAProviderThatCannotBeAsked": func() paygate.Provider { return &fakeProvider{id: "a"} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, time.Second, prov())
			p := f.crashedPayment(t, "ik-1")
			if n := f.svc.NewRecovery(time.Hour).RunOnce(context.Background()); n != 0 {
				t.Fatalf("finished %d without an answer", n)
			}
			if got, _, r := f.stored(t, p); got.Status != paygate.PaymentCreated || r.State != paygate.IdempotencyInFlight {
				t.Fatalf("payment %s, key %s", got.Status, r.State)
			}
		})
	}
}

// TestRecoveryNodesFinishOnce runs the job of several nodes (services) on one
// database at once: each payment is finished once, with one event.
func TestRecoveryNodesFinishOnce(t *testing.T) {
	t.Parallel()
	a := &inquirer{fakeProvider: &fakeProvider{id: "a"}}
	a.set(paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: "r"}}, nil)
	f := newFixture(t, time.Second, a)
	var ps []paygate.Payment
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5"} {
		ps = append(ps, f.crashedPayment(t, k))
	}
	table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{a}}})
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*payment.Service, 4)
	for i := range nodes {
		nodes[i] = payment.New(payment.Config{Store: f.st, Router: table, Encoder: httpapi.Encoder{}, Vault: testVault(t)})
	}
	var wg sync.WaitGroup
	var finished atomic.Int32
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			finished.Add(int32(n.NewRecovery(time.Hour).RunOnce(context.Background())))
		}()
	}
	wg.Wait()
	if finished.Load() != int32(len(ps)) {
		t.Fatalf("finished %d, want %d", finished.Load(), len(ps))
	}
	for _, p := range ps {
		got, evs, _ := f.stored(t, p)
		if got.Status != paygate.PaymentCaptured || len(evs) != 1 {
			t.Fatalf("payment %s: %s with %d events", p.ID, got.Status, len(evs))
		}
	}
}

// TestRecoveryBacklog: after an outage more payments are due than one batch
// holds; the job goes on at once instead of waiting an interval per batch.
func TestRecoveryBacklog(t *testing.T) {
	t.Parallel()
	a := &inquirer{fakeProvider: &fakeProvider{id: "a"}}
	a.set(paygate.Inquiry{Status: paygate.InquiryUnknown}, nil)
	f := newFixture(t, time.Second, a)
	const n = payment.RecoveryBatchForTest + 20
	for i := range n {
		f.crashedPayment(t, fmt.Sprintf("k%d", i))
	}
	rec := f.svc.NewRecovery(time.Hour)
	if err := rec.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := f.st.PaymentsToRecover(context.Background(), paygate.SystemClock{}.Now().Add(time.Hour), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d payments still created", len(left), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if q := a.queries.Load(); q != n {
		t.Fatalf("%d inquiries for %d payments", q, n)
	}
}
