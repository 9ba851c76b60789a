package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// raceCases are races the database must settle: many goroutines (standing in
// for many requests on many nodes) doing the same thing at once.
func raceCases() []testCase {
	const n = 12
	return []testCase{
		{"ReplaceExpiredKeyOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			now := at(time.Hour + paygate.IdempotencyTTL)
			wins := countSuccesses(t, n, func(int) (bool, error) {
				_, reserved, err := s.ReserveIdempotency(ctx(t), f.reservation(paygate.ModeTest, "key-1", now))
				return reserved, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent reservations replaced the expired record, want 1", wins, n)
			}
		}},
		{"ReplaceAbandonedKeyOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			f.reserve(t, paygate.ModeTest, "key-1", at(time.Hour))
			now := at(time.Hour + paygate.PaymentLease + time.Minute)
			wins := countSuccesses(t, n, func(int) (bool, error) {
				_, reserved, err := s.ReserveIdempotency(ctx(t), f.reservation(paygate.ModeTest, "key-1", now))
				return reserved, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent reservations replaced the abandoned record, want 1", wins, n)
			}
		}},
		{"TransitionPaymentOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			wins := countSuccesses(t, n, func(i int) (bool, error) {
				err := s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
					ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
					From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentCaptured,
					ProviderRef: fmt.Sprintf("attempt-%d", i), AmountCaptured: ptr(p.Amount.Amount),
					UpdatedAt: at(2 * time.Hour),
				}, []paygate.Event{eventValue(p, paygate.EventPaymentCaptured, "", at(2*time.Hour))}, nil))
				if errors.Is(err, paygate.ErrStateConflict) {
					return false, nil
				}
				return err == nil, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent transitions succeeded, want 1", wins, n)
			}
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			if len(events) != 1 {
				t.Errorf("%d events written, want 1", len(events))
			}
		}},
		{"FailRefundOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			r := refundValue(p, 400, at(time.Hour))
			must(t, createRefund(ctx(t), s, r, nil, nil))
			wins := countSuccesses(t, n, func(int) (bool, error) {
				err := commitRefundTransition(ctx(t), s, paygate.RefundTransition{
					ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundCreated, To: paygate.RefundFailed,
					UpdatedAt: at(2 * time.Hour),
				}, nil)
				if errors.Is(err, paygate.ErrStateConflict) {
					return false, nil
				}
				return err == nil, err
			})
			if wins != 1 {
				t.Fatalf("%d of %d concurrent transitions succeeded, want 1", wins, n)
			}
			if got := refundedAmount(t, s, p); got != 0 {
				t.Errorf("AmountRefunded: got %d, want 0 (the amount given back exactly once)", got)
			}
		}},
		{"UpsertCustomerOnce", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			ids := make([]string, n)
			countSuccesses(t, n, func(i int) (bool, error) {
				c, err := s.UpsertCustomer(ctx(t), paygate.CustomerUpsert{
					NewID: newID(), MerchantID: f.merchant.ID, Mode: paygate.ModeTest, ExternalID: "cust-1", Now: base,
				})
				ids[i] = c.ID
				return err == nil, err
			})
			for i := range ids {
				if ids[i] != ids[0] {
					t.Fatalf("concurrent upserts of one external id made customers %s and %s", ids[0], ids[i])
				}
			}
		}},
		{"CreatePaymentsForNewCustomer", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			values := make([]paygate.Payment, n)
			for i := range values {
				values[i] = f.paymentValue(paygate.ModeTest, at(time.Hour))
				f.reserve(t, paygate.ModeTest, values[i].IdempotencyKey, at(time.Hour))
			}
			customers := make([]string, n)
			countSuccesses(t, n, func(i int) (bool, error) {
				p, err := s.CreatePayment(ctx(t), paygate.NewPayment{Payment: values[i], CustomerExternalID: "new-cust", NewCustomerID: newID()})
				customers[i] = p.CustomerID
				return err == nil, err
			})
			for i := range customers {
				if customers[i] != customers[0] {
					t.Fatalf("concurrent payments of one new external id made customers %s and %s", customers[0], customers[i])
				}
			}
		}},
	}
}

// countSuccesses runs fn concurrently n times and returns how many calls
// reported success; any error fails the test.
func countSuccesses(t *testing.T, n int, fn func(i int) (bool, error)) int {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			ok, err := fn(i)
			errs[i] = err
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	return wins
}
