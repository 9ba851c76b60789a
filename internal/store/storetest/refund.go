package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// refundedAmount returns the payment's AmountRefunded as stored.
func refundedAmount(t *testing.T, s paygate.Store, p paygate.Payment) int64 {
	t.Helper()
	got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
	must(t, err)
	return got.AmountRefunded
}

// transitionRefund moves a refund and fails the test on error.
func transitionRefund(t *testing.T, s paygate.Store, r paygate.Refund, from, to paygate.RefundStatus, when time.Time) {
	t.Helper()
	must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
		ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: from, To: to, UpdatedAt: when,
	}, nil))
}

func refundCases() []testCase {
	return []testCase{
		{"EmptyProviderIsThePayments", func(t *testing.T, s paygate.Store) {
			// A refund inserted without its provider names the
			// provider that captured its payment.
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			stored, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if stored.ProviderID == "" {
				t.Fatal("the captured payment names no provider")
			}
			r := refundValue(p, 100, at(time.Hour))
			r.ProviderID = ""
			must(t, createRefund(ctx(t), s, r, nil, nil))
			got, err := s.RefundByID(ctx(t), r.MerchantID, r.Mode, r.ID)
			must(t, err)
			if got.ProviderID != stored.ProviderID {
				t.Errorf("refund provider %q, want the payment's %q", got.ProviderID, stored.ProviderID)
			}
		}},
		{"CreateRoundTrip", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeLive, 1050, "EUR", 1050)
			key := "refund-key"
			f.reserve(t, p.Mode, key, at(time.Hour))
			r := refundValue(p, 550, at(time.Hour))
			r.AmountText = "5.5"
			ev := eventValue(p, paygate.EventRefundCreated, r.ID, at(time.Hour))
			body := []byte(`{"data":{"id":"` + r.ID + `","status":"created"}}`)
			must(t, createRefund(ctx(t), s, r, []paygate.Event{ev}, &paygate.IdempotencyCompletion{
				MerchantID: p.MerchantID, Mode: p.Mode, Key: key, StatusCode: 201, Body: body,
			}))
			got, err := s.RefundByID(ctx(t), p.MerchantID, p.Mode, r.ID)
			must(t, err)
			equal(t, "refund", r, got)
			if n := refundedAmount(t, s, p); n != 550 {
				t.Errorf("payment's AmountRefunded: got %d, want 550", n)
			}
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			equal(t, "events", []paygate.Event{ev}, events)
			rec := f.lookup(t, p.Mode, key, at(2*time.Hour))
			if rec.State != paygate.IdempotencyComplete || rec.StatusCode != 201 || string(rec.Body) != string(body) {
				t.Errorf("idempotency record: got %+v, want complete 201 with the body", rec)
			}
		}},
		{"DuplicateIDConflicts", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			r := refundValue(p, 300, at(time.Hour))
			must(t, createRefund(ctx(t), s, r, nil, nil))
			again := refundValue(p, 200, at(2*time.Hour))
			again.ID = r.ID
			wantIs(t, createRefund(ctx(t), s, again, nil, nil), paygate.ErrConflict)
			if n := refundedAmount(t, s, p); n != 300 {
				t.Errorf("AmountRefunded after a refused duplicate: got %d, want 300", n)
			}
			got, err := s.RefundByID(ctx(t), p.MerchantID, p.Mode, r.ID)
			must(t, err)
			equal(t, "refund after a refused duplicate", r, got)
		}},
		{"NoReason", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			r := refundValue(p, 100, at(time.Hour))
			r.Reason = ""
			must(t, createRefund(ctx(t), s, r, nil, nil))
			got, err := s.RefundByID(ctx(t), p.MerchantID, p.Mode, r.ID)
			must(t, err)
			equal(t, "refund", r, got)
		}},
		{"PaymentNotFound", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			for _, tweak := range []func(*paygate.Refund){
				func(r *paygate.Refund) { r.PaymentID = newID() },
				func(r *paygate.Refund) { r.Mode = paygate.ModeLive },
				func(r *paygate.Refund) { r.MerchantID = other.merchant.ID },
			} {
				r := refundValue(p, 100, at(time.Hour))
				tweak(&r)
				wantNotFound(t, createRefund(ctx(t), s, r, nil, nil))
				_, err := s.RefundByID(ctx(t), r.MerchantID, r.Mode, r.ID)
				wantNotFound(t, err)
			}
			if n := refundedAmount(t, s, p); n != 0 {
				t.Errorf("payment's AmountRefunded: got %d, want 0", n)
			}
		}},
		{"NotCapturedIsRefused", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.newPayment(t, paygate.ModeTest, at(time.Hour))
			must(t, s.Commit(ctx(t), transitionUnit(paygate.PaymentTransition{
				ID: p.ID, MerchantID: p.MerchantID, Mode: p.Mode,
				From: []paygate.PaymentStatus{paygate.PaymentCreated}, To: paygate.PaymentAuthorized,
				ProviderID: "sandbox-eu", UpdatedAt: at(time.Hour),
			}, nil, nil)))
			p.Status = paygate.PaymentAuthorized
			// Not captured wins over a wrong currency.
			r := refundValue(p, 100, at(2*time.Hour))
			r.Amount.Currency = "USD"
			key := "refund-key"
			f.reserve(t, p.Mode, key, at(2*time.Hour))
			err := createRefund(ctx(t), s, r, []paygate.Event{eventValue(p, paygate.EventRefundCreated, r.ID, at(2*time.Hour))},
				&paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: key, StatusCode: 201, Body: []byte(`{}`)})
			wantCode(t, err, paygate.CodeInvalidRequest, "transactionId")
			assertNoRefundWritten(t, f, p, r, key)
		}},
		{"CurrencyMismatchIsRefused", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			// A wrong currency wins over an amount that is too large.
			r := refundValue(p, 5000, at(time.Hour))
			r.Amount.Currency = "GBP"
			key := "refund-key"
			f.reserve(t, p.Mode, key, at(time.Hour))
			err := createRefund(ctx(t), s, r, []paygate.Event{eventValue(p, paygate.EventRefundCreated, r.ID, at(time.Hour))},
				&paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: key, StatusCode: 201, Body: []byte(`{}`)})
			wantCode(t, err, paygate.CodeInvalidRequest, "currency")
			assertNoRefundWritten(t, f, p, r, key)
		}},
		{"AmountOverCapturedIsRefused", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			// Authorized 1000, captured 600: the limit is 600.
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 600)
			r := refundValue(p, 601, at(time.Hour))
			key := "refund-key"
			f.reserve(t, p.Mode, key, at(time.Hour))
			err := createRefund(ctx(t), s, r, []paygate.Event{eventValue(p, paygate.EventRefundCreated, r.ID, at(time.Hour))},
				&paygate.IdempotencyCompletion{MerchantID: p.MerchantID, Mode: p.Mode, Key: key, StatusCode: 201, Body: []byte(`{}`)})
			wantCode(t, err, paygate.CodeInvalidRequest, "amount")
			assertNoRefundWritten(t, f, p, r, key)
			must(t, createRefund(ctx(t), s, refundValue(p, 600, at(time.Hour)), nil, nil))
			if n := refundedAmount(t, s, p); n != 600 {
				t.Errorf("payment's AmountRefunded: got %d, want 600", n)
			}
		}},
		{"CumulativeLimit", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			must(t, createRefund(ctx(t), s, refundValue(p, 400, at(time.Hour)), nil, nil))
			must(t, createRefund(ctx(t), s, refundValue(p, 500, at(2*time.Hour)), nil, nil))
			err := createRefund(ctx(t), s, refundValue(p, 101, at(3*time.Hour)), nil, nil)
			wantCode(t, err, paygate.CodeInvalidRequest, "amount")
			must(t, createRefund(ctx(t), s, refundValue(p, 100, at(4*time.Hour)), nil, nil))
			err = createRefund(ctx(t), s, refundValue(p, 1, at(5*time.Hour)), nil, nil)
			wantCode(t, err, paygate.CodeInvalidRequest, "amount")
			if n := refundedAmount(t, s, p); n != 1000 {
				t.Errorf("payment's AmountRefunded: got %d, want 1000", n)
			}
		}},
		{"FailedRefundGivesAmountBack", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			first := refundValue(p, 1000, at(time.Hour))
			must(t, createRefund(ctx(t), s, first, nil, nil))
			wantCode(t, createRefund(ctx(t), s, refundValue(p, 1, at(2*time.Hour)), nil, nil), paygate.CodeInvalidRequest, "amount")
			transitionRefund(t, s, first, paygate.RefundCreated, paygate.RefundPending, at(3*time.Hour))
			if n := refundedAmount(t, s, p); n != 1000 {
				t.Errorf("AmountRefunded with a pending refund: got %d, want 1000", n)
			}
			transitionRefund(t, s, first, paygate.RefundPending, paygate.RefundFailed, at(4*time.Hour))
			if n := refundedAmount(t, s, p); n != 0 {
				t.Errorf("AmountRefunded after the refund failed: got %d, want 0", n)
			}
			second := refundValue(p, 1000, at(5*time.Hour))
			must(t, createRefund(ctx(t), s, second, nil, nil))
			transitionRefund(t, s, second, paygate.RefundCreated, paygate.RefundSucceeded, at(6*time.Hour))
			if n := refundedAmount(t, s, p); n != 1000 {
				t.Errorf("AmountRefunded after a succeeded refund: got %d, want 1000", n)
			}
			got, err := s.PaymentByID(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if got.Status != paygate.PaymentCaptured {
				t.Errorf("payment status after refunds: got %q, want captured", got.Status)
			}
		}},
		{"ConcurrentRefundsNeverOvershoot", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			const captured, part, n = 1000, 150, 12 // floor(1000/150) = 6 can succeed
			p := f.capturedPayment(t, paygate.ModeTest, captured, "EUR", captured)
			var (
				wg              sync.WaitGroup
				mu              sync.Mutex
				ok, refused     int
				unexpectedError []error
			)
			for i := range n {
				r := refundValue(p, part, at(time.Hour+time.Duration(i)*time.Second))
				wg.Go(func() {
					err := createRefund(ctx(t), s, r, []paygate.Event{eventValue(p, paygate.EventRefundCreated, r.ID, r.CreatedAt)}, nil)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok++
					case asError(err).Code == paygate.CodeInvalidRequest && asError(err).Param == "amount":
						refused++
					default:
						unexpectedError = append(unexpectedError, err)
					}
				})
			}
			wg.Wait()
			for _, err := range unexpectedError {
				t.Errorf("concurrent refund: %v", err)
			}
			if ok+refused+len(unexpectedError) != n {
				t.Errorf("%d refunds answered, want %d", ok+refused+len(unexpectedError), n)
			}
			if ok != captured/part {
				t.Errorf("%d concurrent refunds of %d succeeded against %d captured, want %d", ok, part, captured, captured/part)
			}
			if got := refundedAmount(t, s, p); got != int64(ok*part) || got > captured {
				t.Errorf("AmountRefunded: got %d, want %d (never above %d)", got, ok*part, captured)
			}
			refunds, err := s.RefundsByPayment(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if len(refunds) != ok {
				t.Errorf("%d refunds stored, want %d", len(refunds), ok)
			}
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			if len(events) != ok {
				t.Errorf("%d events stored, want %d", len(events), ok)
			}
		}},
		{"Tenancy", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			r := refundValue(p, 100, at(time.Hour))
			must(t, createRefund(ctx(t), s, r, nil, nil))
			for _, q := range []struct {
				merchant string
				mode     paygate.Mode
				id       string
			}{
				{f.merchant.ID, paygate.ModeLive, r.ID},
				{other.merchant.ID, paygate.ModeTest, r.ID},
				{f.merchant.ID, paygate.ModeTest, newID()},
			} {
				_, err := s.RefundByID(ctx(t), q.merchant, q.mode, q.id)
				wantNotFound(t, err)
				err = commitRefundTransition(ctx(t), s, paygate.RefundTransition{
					ID: q.id, MerchantID: q.merchant, Mode: q.mode,
					From: paygate.RefundCreated, To: paygate.RefundFailed, UpdatedAt: at(2 * time.Hour),
				}, nil)
				wantNotFound(t, err)
			}
			for _, q := range []struct {
				merchant string
				mode     paygate.Mode
				id       string
			}{
				{f.merchant.ID, paygate.ModeLive, p.ID},
				{other.merchant.ID, paygate.ModeTest, p.ID},
				{f.merchant.ID, paygate.ModeTest, newID()},
			} {
				_, err := s.RefundsByPayment(ctx(t), q.merchant, q.mode, q.id)
				wantNotFound(t, err)
			}
			got, err := s.RefundByID(ctx(t), r.MerchantID, r.Mode, r.ID)
			must(t, err)
			equal(t, "refund after foreign transitions", r, got)
			if n := refundedAmount(t, s, p); n != 100 {
				t.Errorf("AmountRefunded: got %d, want 100", n)
			}
		}},
		{"ByPaymentNewestFirst", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			none, err := s.RefundsByPayment(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			if len(none) != 0 {
				t.Fatalf("got %d refunds of a payment without any", len(none))
			}
			r1 := refundValue(p, 100, at(time.Hour))
			r2 := refundValue(p, 200, at(2*time.Hour))
			r3 := refundValue(p, 300, at(3*time.Hour))
			for _, r := range []paygate.Refund{r2, r3, r1} {
				must(t, createRefund(ctx(t), s, r, nil, nil))
			}
			other := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			must(t, createRefund(ctx(t), s, refundValue(other, 100, at(4*time.Hour)), nil, nil))
			got, err := s.RefundsByPayment(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "refunds", []paygate.Refund{r3, r2, r1}, got)
		}},
		{"TransitionWritesFieldsAndEvents", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			r := refundValue(p, 100, at(time.Hour))
			must(t, createRefund(ctx(t), s, r, nil, nil))
			must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
				ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundCreated, To: paygate.RefundPending,
				ProviderRef: "re_123", UpdatedAt: at(2 * time.Hour),
			}, nil))
			ev := eventValue(p, paygate.EventRefundFailed, r.ID, at(3*time.Hour))
			must(t, commitRefundTransition(ctx(t), s, paygate.RefundTransition{
				ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundPending, To: paygate.RefundFailed,
				FailureReason: "issuer refused", ErrorCode: "PROVIDER_ERROR", ErrorMessage: "The card issuer refused the refund.",
				UpdatedAt: at(3 * time.Hour),
			}, []paygate.Event{ev}))
			want := r
			want.Status, want.ProviderRef, want.FailureReason, want.UpdatedAt = paygate.RefundFailed, "re_123", "issuer refused", at(3*time.Hour)
			want.ErrorCode, want.ErrorMessage = "PROVIDER_ERROR", "The card issuer refused the refund."
			got, err := s.RefundByID(ctx(t), r.MerchantID, r.Mode, r.ID)
			must(t, err)
			equal(t, "failed refund", want, got)
			listed, err := s.RefundsByPayment(ctx(t), p.MerchantID, p.Mode, p.ID)
			must(t, err)
			equal(t, "listed failed refund", []paygate.Refund{want}, listed)
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			equal(t, "events", []paygate.Event{ev}, events)
		}},
		{"TransitionFromWrongStatusWritesNothing", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 1000, "EUR", 1000)
			r := refundValue(p, 1000, at(time.Hour))
			must(t, createRefund(ctx(t), s, r, nil, nil))
			err := commitRefundTransition(ctx(t), s, paygate.RefundTransition{
				ID: r.ID, MerchantID: r.MerchantID, Mode: r.Mode, From: paygate.RefundPending, To: paygate.RefundFailed,
				FailureReason: "x", UpdatedAt: at(2 * time.Hour),
			}, []paygate.Event{eventValue(p, paygate.EventRefundFailed, r.ID, at(2*time.Hour))})
			wantIs(t, err, paygate.ErrStateConflict)
			got, err := s.RefundByID(ctx(t), r.MerchantID, r.Mode, r.ID)
			must(t, err)
			equal(t, "refund after a refused transition", r, got)
			events, err := s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
			must(t, err)
			if len(events) != 0 {
				t.Errorf("%d events were inserted by a refused transition", len(events))
			}
			if n := refundedAmount(t, s, p); n != 1000 {
				t.Errorf("AmountRefunded after a refused transition to failed: got %d, want 1000", n)
			}
		}},
		{"ToProcess", func(t *testing.T, s paygate.Store) {
			f := newMerchant(t, s, base)
			other := newMerchant(t, s, base)
			p := f.capturedPayment(t, paygate.ModeTest, 10000, "EUR", 10000)
			q := other.capturedPayment(t, paygate.ModeLive, 10000, "EUR", 10000)
			created := refundValue(p, 100, at(time.Hour+1*time.Second))
			stale := refundValue(p, 100, at(time.Hour+2*time.Second))
			fresh := refundValue(p, 100, at(time.Hour+4*time.Second))
			succeeded := refundValue(p, 100, at(time.Hour))
			failed := refundValue(p, 100, at(time.Hour))
			foreign := refundValue(q, 100, at(time.Hour+12*time.Second))
			for _, r := range []paygate.Refund{foreign, fresh, succeeded, failed, stale, created} {
				must(t, createRefund(ctx(t), s, r, nil, nil))
			}
			transitionRefund(t, s, stale, paygate.RefundCreated, paygate.RefundPending, at(time.Hour+3*time.Second))
			transitionRefund(t, s, fresh, paygate.RefundCreated, paygate.RefundPending, at(time.Hour+11*time.Second))
			transitionRefund(t, s, succeeded, paygate.RefundCreated, paygate.RefundSucceeded, at(time.Hour+time.Second))
			transitionRefund(t, s, failed, paygate.RefundCreated, paygate.RefundFailed, at(time.Hour+time.Second))
			stale.Status, stale.UpdatedAt = paygate.RefundPending, at(time.Hour+3*time.Second)

			got, err := s.RefundsToProcess(ctx(t), at(time.Hour+10*time.Second), 100)
			must(t, err)
			equal(t, "refunds to process", []paygate.Refund{created, stale, foreign}, got)
			got, err = s.RefundsToProcess(ctx(t), at(time.Hour+10*time.Second), 2)
			must(t, err)
			equal(t, "refunds to process, limited", []paygate.Refund{created, stale}, got)
		}},
	}
}

// asError returns err as a *paygate.Error, or an empty one.
func asError(err error) *paygate.Error {
	var e *paygate.Error
	if errors.As(err, &e) {
		return e
	}
	return &paygate.Error{}
}

// assertNoRefundWritten checks that a refused refund unit left no refund,
// no event, no idempotency answer and no refunded amount behind.
func assertNoRefundWritten(t *testing.T, f fixture, p paygate.Payment, r paygate.Refund, key string) {
	t.Helper()
	_, err := f.s.RefundByID(ctx(t), p.MerchantID, p.Mode, r.ID)
	wantNotFound(t, err)
	events, err := f.s.Events(ctx(t), paygate.EventQuery{MerchantID: p.MerchantID, Mode: p.Mode, Limit: 100})
	must(t, err)
	for _, e := range events {
		if e.RefundID == r.ID {
			t.Errorf("a refused refund inserted event %s", e.Type)
		}
	}
	rec := f.lookup(t, p.Mode, key, r.CreatedAt.Add(time.Second))
	if rec.State != paygate.IdempotencyInFlight {
		t.Errorf("a refused refund completed its idempotency record")
	}
	if n := refundedAmount(t, f.s, p); n != 0 {
		t.Errorf("AmountRefunded after a refused refund: got %d, want 0", n)
	}
}
