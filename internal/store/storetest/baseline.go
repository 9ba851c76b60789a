package storetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/baseline"
)

// CheckBaseline checks that b's BaselinePayment writes what a successful
// payment writes: a captured payment with its customer, its event and a
// completed idempotency record, under concurrency and with payments that
// share a customer. s is the same store, read through the ordinary
// contract. Both engines run it.
func CheckBaseline(t *testing.T, s paygate.Store, b baseline.Store) {
	t.Helper()
	ctx := t.Context()
	m := paygate.Merchant{ID: "8f0c5b1e-3a4d-4e6f-9a7b-0c1d2e3f4a5b", Name: "Bench", CreatedAt: paygate.Normalize(time.Now())}
	if err := createMerchant(ctx, s, m, nil); err != nil {
		t.Fatalf("create merchant: %v", err)
	}
	// n and n+baseline.Customers share a customer; both run at once.
	var ns []int64
	for i := range int64(20) {
		ns = append(ns, i, i+baseline.Customers)
	}
	errs := make(chan error, len(ns))
	for _, n := range ns {
		go func() { errs <- b.BaselinePayment(ctx, m.ID, paygate.ModeTest, n) }()
	}
	for range ns {
		if err := <-errs; err != nil {
			t.Fatalf("BaselinePayment: %v", err)
		}
	}
	events, err := s.Events(ctx, paygate.EventQuery{MerchantID: m.ID, Mode: paygate.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != len(ns) {
		t.Fatalf("%d events, want %d", len(events), len(ns))
	}
	customers := map[string]string{}
	for _, n := range ns {
		ref := "order-" + strconv.FormatInt(n, 10)
		p, err := s.PaymentByMerchantRef(ctx, m.ID, paygate.ModeTest, ref)
		if err != nil {
			t.Fatalf("payment %s: %v", ref, err)
		}
		if p.Status != paygate.PaymentCaptured || p.AmountCaptured != p.Amount.Amount || p.Billing == nil {
			t.Errorf("payment %s: status %s captured %d billing %v", ref, p.Status, p.AmountCaptured, p.Billing)
		}
		c := n % baseline.Customers
		if prev, ok := customers[strconv.FormatInt(c, 10)]; ok && prev != p.CustomerID {
			t.Errorf("payments of customer %d have customers %s and %s", c, prev, p.CustomerID)
		}
		customers[strconv.FormatInt(c, 10)] = p.CustomerID
		rec, reserved, err := s.ReserveIdempotency(ctx, paygate.IdempotencyReservation{
			MerchantID: m.ID, Mode: paygate.ModeTest, Key: p.IdempotencyKey, Fingerprint: []byte("other"), Now: p.CreatedAt,
		})
		if err != nil || reserved {
			t.Fatalf("idempotency record of %s: reserved %v, %v", ref, reserved, err)
		}
		if rec.State != paygate.IdempotencyComplete || rec.StatusCode != 201 || rec.PaymentID != p.ID || len(rec.Body) < 150 {
			t.Errorf("idempotency record of %s: %s %d payment %q body %d bytes", ref, rec.State, rec.StatusCode, rec.PaymentID, len(rec.Body))
		}
	}
}
