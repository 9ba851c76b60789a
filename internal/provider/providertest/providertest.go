// Package providertest is the conformance suite every provider connector
// passes: the cases of the sandbox's test-card table (decisions.md section
// 12), asked of the connector through a Harness that maps each wanted
// outcome onto what its backend (the sandbox itself, a provider's mock or a
// local fake of it) answers.
//
// Adding a connector is writing one Harness and calling Exercise from the
// connector's tests.
package providertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
)

// Outcome is what the next charge with a card must come to.
type Outcome string

// The outcomes of the conformance cases.
const (
	Captured    Outcome = "captured"    // captured at once
	Authorized  Outcome = "authorized"  // authorized, to be captured or voided
	Declined    Outcome = "declined"    // declined with a decline code (Harness.Card gets it)
	Failed      Outcome = "failed"      // the provider errs: ProviderFailed
	Unavailable Outcome = "unavailable" // nothing processed: ProviderUnavailable
	Timeout     Outcome = "timeout"     // received, no answer in time: ProviderUnknownOutcome; an inquiry learns it was captured
	ThreeDS     Outcome = "threeds"     // pending_3ds, then captured when authenticated
)

// DeclineCodes are the decline codes every connector maps.
var DeclineCodes = []string{
	paygate.DeclineGeneric, paygate.DeclineInsufficientFunds,
	paygate.DeclineExpiredCard, paygate.DeclineIncorrectCVC,
}

// Harness builds a provider under test and chooses the outcome of its
// charges.
type Harness struct {
	// New returns the provider under test. It is called once per Exercise;
	// the cases run in parallel against it.
	New func(t *testing.T) paygate.Provider
	// Card returns the card number whose charge comes to the outcome (for
	// Declined, with the decline code), or "" when the backend cannot
	// produce it: the case is then skipped, with a message.
	Card func(o Outcome, declineCode string) string
	// Currency of the charges; "" is EUR.
	Currency string
	// ThreeDSResponse returns the form fields the customer's browser posts
	// to paygate's callback after the challenge of a pending_3ds answer,
	// authenticated or not. Nil skips the completion cases.
	ThreeDSResponse func(t *testing.T, req paygate.ChargeRequest, res paygate.ChargeResult, authenticate bool) map[string]string
	// ChargeTimeout is the deadline of each charge's context; 0 is 10 s. The
	// Timeout outcome must come back as ProviderUnknownOutcome within it.
	ChargeTimeout time.Duration
	// InquiryWait is how long an inquiry may take to learn the outcome of a
	// timed-out charge; 0 is 10 s.
	InquiryWait time.Duration
}

func (h *Harness) currency() string {
	if h.Currency == "" {
		return "EUR"
	}
	return h.Currency
}

// suite is one run of Exercise.
type suite struct {
	h Harness
	p paygate.Provider
}

// Exercise runs the conformance cases against the harness's provider.
func Exercise(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Card == nil {
		t.Fatal("providertest: the harness needs New and Card")
	}
	if h.ChargeTimeout == 0 {
		h.ChargeTimeout = 10 * time.Second
	}
	if h.InquiryWait == 0 {
		h.InquiryWait = 10 * time.Second
	}
	s := &suite{h: h, p: h.New(t)}
	if s.p.ID() == "" {
		t.Fatal("provider has an empty ID")
	}
	t.Run("Captured", s.captured)
	t.Run("Authorized", s.authorized)
	for _, code := range DeclineCodes {
		t.Run("Declined/"+code, func(t *testing.T) { s.declined(t, code) })
	}
	t.Run("Failed", s.failed)
	t.Run("Unavailable", s.unavailable)
	t.Run("Timeout", s.timeout)
	t.Run("ThreeDS", s.threeDS)
	t.Run("CancelledContext", s.cancelled)
	t.Run("InquireUnknown", s.inquireUnknown)
}

// newPaymentID returns a fresh payment id, as paygate mints them.
func newPaymentID() string { return id.New() }

func (s *suite) card(t *testing.T, o Outcome, code string) string {
	t.Helper()
	n := s.h.Card(o, code)
	if n == "" {
		t.Skipf("the harness's backend cannot produce outcome %s %s", o, code)
	}
	return n
}

func (s *suite) request(number string) paygate.ChargeRequest {
	return paygate.ChargeRequest{
		PaymentID: newPaymentID(), MerchantID: "m_conformance", Mode: paygate.ModeTest,
		Amount: paygate.Money{Amount: 1050, Currency: s.h.currency()},
		Card: paygate.Card{
			Number: paygate.PAN(number), ExpMonth: 12, ExpYear: time.Now().Year() + 3, CVV: "123", HolderName: "Jane Doe",
		},
		Billing: &paygate.Billing{
			FirstName: "Jane", LastName: "Doe", Email: "jane@example.com",
			Address: "1 Main Street", City: "Berlin", PostalCode: "10115", Country: "DE",
		},
		DeviceFingerprint: "fp_conformance",
		ReturnURL:         "https://merchant.example/return",
	}
}

func (s *suite) charge(t *testing.T, req paygate.ChargeRequest) (paygate.ChargeResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.h.ChargeTimeout)
	defer cancel()
	res, err := s.p.Charge(ctx, req)
	noCardNumber(t, req, err, res.Message)
	return res, err
}

// noCardNumber fails when an error or message carries the card number.
func noCardNumber(t *testing.T, req paygate.ChargeRequest, err error, texts ...string) {
	t.Helper()
	pan := req.Card.Number.Reveal()
	if err != nil {
		texts = append(texts, err.Error())
	}
	for _, s := range texts {
		if pan != "" && strings.Contains(s, pan) {
			t.Fatalf("an error or message contains the card number: %q", s)
		}
	}
}

// providerError returns err as a *paygate.ProviderError of the kind.
func providerError(t *testing.T, err error, kind paygate.ProviderErrorKind) *paygate.ProviderError {
	t.Helper()
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a *paygate.ProviderError", err, err)
	}
	if pe.Kind != kind {
		t.Fatalf("error kind %d (%s), want %d", pe.Kind, pe.Message, kind)
	}
	if pe.Message == "" {
		t.Fatal("provider error without a message")
	}
	return pe
}

func (s *suite) inquirer(t *testing.T) paygate.Inquirer {
	t.Helper()
	in, ok := s.p.(paygate.Inquirer)
	if !ok {
		t.Fatal("the provider does not implement paygate.Inquirer: recovery cannot ask it")
	}
	return in
}

func (s *suite) inquire(t *testing.T, paymentID string) paygate.Inquiry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.h.ChargeTimeout)
	defer cancel()
	q, err := s.inquirer(t).Inquire(ctx, paymentID)
	if err != nil {
		t.Fatalf("inquire: %v", err)
	}
	return q
}

// mustCharge charges a card that must come to a result.
func (s *suite) mustCharge(t *testing.T, o Outcome, code string) (paygate.ChargeRequest, paygate.ChargeResult) {
	t.Helper()
	req := s.request(s.card(t, o, code))
	res, err := s.charge(t, req)
	if err != nil {
		t.Fatalf("charge: %v", err)
	}
	if res.ProviderRef == "" {
		t.Fatal("a charge result without a provider reference")
	}
	return req, res
}

func (s *suite) captured(t *testing.T) {
	t.Parallel()
	req, res := s.mustCharge(t, Captured, "")
	if res.Status != paygate.PaymentCaptured {
		t.Fatalf("status %q, want captured", res.Status)
	}
	// The payment id is the idempotency key: a repeated charge is the same.
	again, err := s.charge(t, req)
	if err != nil || again.Status != res.Status || again.ProviderRef != res.ProviderRef {
		t.Fatalf("repeated charge: %+v, %v; want %+v", again, err, res)
	}
	q := s.inquire(t, req.PaymentID)
	if q.Status != paygate.InquiryAnswered || q.Result.Status != paygate.PaymentCaptured || q.Result.ProviderRef != res.ProviderRef {
		t.Fatalf("inquiry %+v, want answered captured %s", q, res.ProviderRef)
	}

	// A partial refund, then the rest; each repeated call refunds once.
	ctx := context.Background()
	for i, amount := range []int64{300, 750} {
		rr := paygate.RefundRequest{
			RefundID: id.New(), PaymentID: req.PaymentID, ProviderRef: res.ProviderRef,
			Amount: paygate.Money{Amount: amount, Currency: req.Amount.Currency}, Reason: "requested_by_customer",
		}
		got, err := s.p.Refund(ctx, rr)
		if err != nil {
			t.Fatalf("refund %d: %v", i, err)
		}
		if got.Status != paygate.RefundSucceeded && got.Status != paygate.RefundPending {
			t.Fatalf("refund %d: status %q, want succeeded or pending", i, got.Status)
		}
		if got.ProviderRef == "" {
			t.Fatalf("refund %d without a provider reference", i)
		}
		again, err := s.p.Refund(ctx, rr)
		if err != nil || again.ProviderRef != got.ProviderRef {
			t.Fatalf("repeated refund %d: %+v, %v; want %+v", i, again, err, got)
		}
	}
}

func (s *suite) authorized(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, then := range []string{"capture", "partial capture", "void"} {
		req, res := s.mustCharge(t, Authorized, "")
		if res.Status != paygate.PaymentAuthorized {
			t.Fatalf("status %q, want authorized", res.Status)
		}
		q := s.inquire(t, req.PaymentID)
		if q.Status != paygate.InquiryAnswered || q.Result.Status != paygate.PaymentAuthorized {
			t.Fatalf("inquiry %+v, want answered authorized", q)
		}
		op := paygate.PaymentOp{PaymentID: req.PaymentID, ProviderRef: res.ProviderRef, Amount: req.Amount}
		var err error
		switch then {
		case "capture":
			err = s.p.Capture(ctx, op)
		case "partial capture":
			op.Amount.Amount = 500
			err = s.p.Capture(ctx, op)
		default:
			err = s.p.Void(ctx, op)
		}
		if err != nil {
			t.Fatalf("%s: %v", then, err)
		}
		noCardNumber(t, req, err)
	}
}

func (s *suite) declined(t *testing.T, code string) {
	t.Parallel()
	req, res := s.mustCharge(t, Declined, code)
	if res.Status != paygate.PaymentFailed || res.DeclineCode != code {
		t.Fatalf("got %s %q, want failed %s", res.Status, res.DeclineCode, code)
	}
	if res.Message == "" {
		t.Fatal("a decline without a message")
	}
	q := s.inquire(t, req.PaymentID)
	if q.Status != paygate.InquiryAnswered || q.Result.Status != paygate.PaymentFailed || q.Result.DeclineCode != code {
		t.Fatalf("inquiry %+v, want answered failed %s", q, code)
	}
}

func (s *suite) failed(t *testing.T) {
	t.Parallel()
	req := s.request(s.card(t, Failed, ""))
	_, err := s.charge(t, req)
	providerError(t, err, paygate.ProviderFailed)
	// Nothing was charged: the provider errored it, or never kept it.
	q := s.inquire(t, req.PaymentID)
	if q.Status != paygate.InquiryErrored && q.Status != paygate.InquiryUnknown {
		t.Fatalf("inquiry %+v, want errored or unknown", q)
	}
	if q.Status == paygate.InquiryErrored && q.Message == "" {
		t.Fatal("an errored inquiry without a message")
	}
}

func (s *suite) unavailable(t *testing.T) {
	t.Parallel()
	req := s.request(s.card(t, Unavailable, ""))
	_, err := s.charge(t, req)
	providerError(t, err, paygate.ProviderUnavailable)
	if q := s.inquire(t, req.PaymentID); q.Status != paygate.InquiryUnknown {
		t.Fatalf("inquiry %+v, want unknown (nothing was processed)", q)
	}
}

func (s *suite) timeout(t *testing.T) {
	t.Parallel()
	req := s.request(s.card(t, Timeout, ""))
	_, err := s.charge(t, req)
	providerError(t, err, paygate.ProviderUnknownOutcome)
	deadline := time.Now().Add(s.h.InquiryWait)
	for {
		q := s.inquire(t, req.PaymentID)
		switch q.Status {
		case paygate.InquiryAnswered:
			if q.Result.Status != paygate.PaymentCaptured || q.Result.ProviderRef == "" {
				t.Fatalf("inquiry %+v, want captured", q)
			}
			return
		case paygate.InquiryPending:
		default:
			t.Fatalf("inquiry %+v, want pending, then captured", q)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the inquiry still says pending after %s", s.h.InquiryWait)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (s *suite) threeDS(t *testing.T) {
	t.Parallel()
	for _, authenticate := range []bool{true, false} {
		req, res := s.mustCharge(t, ThreeDS, "")
		if res.Status != paygate.PaymentPending3DS {
			t.Fatalf("status %q, want pending_3ds", res.Status)
		}
		if res.ThreeDS == nil || res.ThreeDS.RedirectURL == "" {
			t.Fatalf("pending_3ds without a challenge to show: %+v", res.ThreeDS)
		}
		if q := s.inquire(t, req.PaymentID); q.Status != paygate.InquiryAnswered || q.Result.Status != paygate.PaymentPending3DS {
			t.Fatalf("inquiry %+v, want answered pending_3ds", q)
		}
		tp, ok := s.p.(paygate.ThreeDSProvider)
		if !ok {
			t.Fatal("the provider answers pending_3ds but is no paygate.ThreeDSProvider")
		}
		if s.h.ThreeDSResponse == nil {
			t.Skip("the harness cannot complete a challenge")
		}
		comp := paygate.ThreeDSCompletion{
			PaymentID: req.PaymentID, ProviderRef: res.ProviderRef, Amount: req.Amount,
			Response: s.h.ThreeDSResponse(t, req, res, authenticate),
		}
		got, err := tp.CompleteThreeDS(context.Background(), comp)
		if err != nil {
			t.Fatalf("complete (authenticate %v): %v", authenticate, err)
		}
		noCardNumber(t, req, nil, got.Message)
		if got.Authenticated != authenticate {
			t.Fatalf("authenticated %v, want %v", got.Authenticated, authenticate)
		}
		if authenticate && (got.Status != paygate.PaymentCaptured || got.ProviderRef == "") {
			t.Fatalf("completion %+v, want captured with a reference", got)
		}
		again, err := tp.CompleteThreeDS(context.Background(), comp)
		if err != nil || again.Authenticated != got.Authenticated || again.Status != got.Status || again.ProviderRef != got.ProviderRef {
			t.Fatalf("repeated completion %+v, %v; want %+v", again, err, got)
		}
	}
}

func (s *suite) cancelled(t *testing.T) {
	t.Parallel()
	req := s.request(s.card(t, Captured, ""))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.p.Charge(ctx, req)
	providerError(t, err, paygate.ProviderUnavailable)
	if q := s.inquire(t, req.PaymentID); q.Status != paygate.InquiryUnknown {
		t.Fatalf("inquiry %+v, want unknown (nothing was sent)", q)
	}
}

func (s *suite) inquireUnknown(t *testing.T) {
	t.Parallel()
	if q := s.inquire(t, newPaymentID()); q.Status != paygate.InquiryUnknown {
		t.Fatalf("inquiry of a payment never charged: %+v, want unknown", q)
	}
}
