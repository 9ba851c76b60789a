package sandbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

func inquire(t *testing.T, p *Provider, paymentID string) paygate.Inquiry {
	t.Helper()
	ans, err := p.Inquire(context.Background(), paymentID)
	if err != nil {
		t.Fatalf("inquire: %v", err)
	}
	return ans
}

func TestInquiryTellsWhatWasCharged(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		number string
		want   paygate.Inquiry
	}{
		{"Captured", CardVisa, paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{Status: paygate.PaymentCaptured}}},
		{"Authorized", CardAuthorize, paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{Status: paygate.PaymentAuthorized}}},
		{"Declined", CardInsufficientFunds, paygate.Inquiry{Status: paygate.InquiryAnswered, Result: paygate.ChargeResult{
			Status: paygate.PaymentFailed, DeclineCode: paygate.DeclineInsufficientFunds, Message: "Your card has insufficient funds."}}},
		{"Errored", CardProviderError, paygate.Inquiry{Status: paygate.InquiryErrored, Message: msgProviderError}},
		{"FailedOverNeverReceived", CardFailover, paygate.Inquiry{Status: paygate.InquiryUnknown}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := New("sandbox-eu", nil, FirstOf("EUR"))
			req := charge(c.number, "EUR")
			if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryUnknown {
				t.Fatalf("before the charge: %+v", got)
			}
			res, _ := p.Charge(context.Background(), req)
			got := inquire(t, p, req.PaymentID)
			if c.want.Status == paygate.InquiryAnswered {
				c.want.Result.ProviderRef = res.ProviderRef
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c.want) {
				t.Fatalf("inquiry %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestChargeTimeoutCard: card 0705 is received, answered with an unknown
// outcome after TimeoutAfter, and an inquiry reports it captured
// InquiryDelay later.
func TestChargeTimeoutCard(t *testing.T) {
	t.Parallel()
	clk := testenv.NewClock(time.Now())
	p := New("sandbox-eu", nil, WithClock(clk))
	req := charge(CardTimeout, "EUR")
	start := time.Now()
	_, err := p.Charge(context.Background(), req)
	if d := time.Since(start); d < TimeoutAfter || d > TimeoutAfter+time.Second {
		t.Fatalf("answered after %s, want %s", d, TimeoutAfter)
	}
	var co *CardOutcomeError
	if pe := providerErr(t, err); pe.Kind != paygate.ProviderUnknownOutcome || !errors.As(err, &co) {
		t.Fatalf("err %v, want a card's unknown outcome", err)
	}
	clk.Add(TimeoutAfter)
	if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryPending {
		t.Fatalf("at the timeout: %+v", got)
	}
	clk.Add(InquiryDelay - time.Millisecond)
	if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryPending {
		t.Fatalf("just before: %+v", got)
	}
	clk.Add(time.Millisecond)
	if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryAnswered || got.Result.Status != paygate.PaymentCaptured {
		t.Fatalf("%s after the timeout: %+v", InquiryDelay, got)
	}
}

// TestChargeCutOffIsPendingThenAnswered: a caller that stops waiting during
// the latency leaves a charge the provider received and finishes.
func TestChargeCutOffIsPendingThenAnswered(t *testing.T) {
	t.Parallel()
	clk := testenv.NewClock(time.Now())
	p := New("sandbox-eu", nil, WithLatency(time.Hour), WithClock(clk))
	req := charge(CardVisa, "EUR")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Charge(ctx, req); providerErr(t, err).Kind != paygate.ProviderUnknownOutcome {
		t.Fatalf("cut off: %v", err)
	}
	if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryPending {
		t.Fatalf("during processing: %+v", got)
	}
	clk.Add(time.Hour)
	if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryAnswered || got.Result.Status != paygate.PaymentCaptured {
		t.Fatalf("after processing: %+v", got)
	}
}

func TestChargeRepeatGetsFirstAnswer(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", nil)
	first := charge(CardDeclined, "EUR")
	res, err := p.Charge(context.Background(), first)
	if err != nil || res.Status != paygate.PaymentFailed {
		t.Fatalf("first: %+v, %v", res, err)
	}
	again := charge(CardVisa, "EUR")
	again.PaymentID = first.PaymentID
	res2, err := p.Charge(context.Background(), again)
	if err != nil || !reflect.DeepEqual(res2, res) {
		t.Fatalf("repeat: %+v, %v; want %+v", res2, err, res)
	}
}

func TestFailureRate(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", nil, WithFailureRate(1))
	req := charge(CardVisa, "EUR")
	_, err := p.Charge(context.Background(), req)
	var co *CardOutcomeError
	if pe := providerErr(t, err); pe.Kind != paygate.ProviderUnavailable || errors.As(err, &co) {
		t.Fatalf("outage: %v (a simulated outage is not a card's outcome)", err)
	}
	if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryUnknown {
		t.Fatalf("an outage recorded the charge: %+v", got)
	}
	never := New("sandbox-eu", nil, WithFailureRate(0))
	for range 50 {
		if _, err := never.Charge(context.Background(), charge(CardVisa, "EUR")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTestCardErrorsAreCardOutcomes: circuit breakers recognise them.
func TestTestCardErrorsAreCardOutcomes(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", nil, FirstOf("EUR"))
	for _, number := range []string{CardFailover, CardProviderError} {
		_, err := p.Charge(context.Background(), charge(number, "EUR"))
		var co interface{ CardOutcome() bool }
		if !errors.As(err, &co) || !co.CardOutcome() {
			t.Fatalf("%s: %v is not marked as a card's outcome", number[12:], err)
		}
	}
}

// failingLedger cannot be written or read.
type failingLedger struct{}

func (failingLedger) Commit(context.Context, paygate.Unit) error {
	return errors.New("disk full")
}

func (failingLedger) SandboxChargeByPayment(context.Context, string, string) (paygate.SandboxCharge, error) {
	return paygate.SandboxCharge{}, errors.New("disk full")
}

func TestLedgerDown(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", nil, WithLedger(failingLedger{}))
	// The write may have happened: unknown, never a failover.
	if _, err := p.Charge(context.Background(), charge(CardVisa, "EUR")); providerErr(t, err).Kind != paygate.ProviderUnknownOutcome {
		t.Fatalf("charge: %v", err)
	}
	if _, err := p.Inquire(context.Background(), "p"); providerErr(t, err).Kind != paygate.ProviderUnavailable {
		t.Fatalf("inquire: %v", err)
	}
}

// TestLedgerHoldsNoCardData checks every entry of every card.
func TestLedgerHoldsNoCardData(t *testing.T) {
	t.Parallel()
	l := NewMemoryLedger()
	p := New("sandbox-eu", nil, WithLedger(l))
	numbers := []string{CardVisa, CardMastercard, CardAmex, CardAuthorize, CardDeclined, CardProviderError, CardRefundFails}
	for _, n := range numbers {
		if _, err := p.Charge(context.Background(), charge(n, "EUR")); err != nil && !strings.Contains(err.Error(), "could not process") {
			t.Fatal(err)
		}
	}
	if len(l.entries) != len(numbers) {
		t.Fatalf("%d entries for %d charges", len(l.entries), len(numbers))
	}
	for _, e := range l.entries {
		dump := fmt.Sprintf("%+v", e)
		for _, n := range numbers {
			if strings.Contains(dump, n) {
				t.Fatalf("ledger entry holds a card number: %s", dump)
			}
		}
	}
}

// TestOutcomeLedgerWritesNothing: with WithOutcomeLedger a charge answered
// at once writes no entry; it hands the entry back for the gateway to
// commit with the payment's outcome (decisions.md section 22), whatever
// that outcome is, and the entry, once committed, answers inquiries as a
// written one does. Nothing processed, nothing handed back.
func TestOutcomeLedgerWritesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		number string
		want   paygate.SandboxOutcome
		fails  bool
		kind   paygate.ProviderErrorKind // when it fails
	}{
		{"Captured", CardVisa, paygate.SandboxCaptured, false, 0},
		{"Declined", CardDeclined, paygate.SandboxDeclined, false, 0},
		{"ThreeDS", Card3DS, paygate.SandboxPending3DS, false, 0},
		{"Errored", CardProviderError, paygate.SandboxErrored, true, paygate.ProviderFailed},
		{"Unavailable", CardFailover, "", true, paygate.ProviderUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := NewMemoryLedger()
			p := New("sandbox-eu", nil, WithOutcomeLedger(l), FirstOf("EUR"))
			req := charge(c.number, "EUR")
			if !p.RecordsWithOutcome(req) {
				t.Fatal("RecordsWithOutcome is false, yet the charge writes nothing")
			}
			res, err := p.Charge(context.Background(), req)
			if !c.fails && err != nil || c.fails && providerErr(t, err).Kind != c.kind {
				t.Fatalf("charge: %v, want kind %v", err, c.kind)
			}
			if len(l.entries) != 0 {
				t.Fatalf("the charge wrote %d entries itself", len(l.entries))
			}
			if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryUnknown {
				t.Fatalf("before the outcome's commit: %+v, want unknown", got)
			}
			if c.want == "" {
				if len(res.Commit) != 0 {
					t.Fatalf("nothing processed, yet %d writes to commit", len(res.Commit))
				}
				return
			}
			if len(res.Commit) != 1 {
				t.Fatalf("%d writes to commit, want the ledger entry", len(res.Commit))
			}
			e, ok := res.Commit[0].(paygate.SandboxCharge)
			if !ok || e.PaymentID != req.PaymentID || e.ProviderID != "sandbox-eu" || e.Outcome != c.want || e.Amount != req.Amount {
				t.Fatalf("write to commit %+v, want the %s entry of the payment", res.Commit[0], c.want)
			}
			if err := l.Commit(context.Background(), paygate.Unit{Ops: []paygate.Op{e}}); err != nil { // the outcome's unit
				t.Fatal(err)
			}
			// A committed entry answers as written: the errored charge's
			// inquiry reports the error, the others their outcome.
			wantStatus := paygate.InquiryAnswered
			if c.fails {
				wantStatus = paygate.InquiryErrored
			}
			if got := inquire(t, p, req.PaymentID); got.Status != wantStatus {
				t.Fatalf("after the outcome's commit: %+v, want status %v", got, wantStatus)
			}
		})
	}
}

// TestOutcomeLedgerWritesFirstWhenNotAnsweredAtOnce: card 0705 answers an
// unknown outcome, which recovery learns from its entry, and a sandbox with
// a latency holds every charge as a remote provider would while its caller
// waits (and may stop waiting, or die): their charges write the entry
// themselves before they answer, and hand nothing back.
func TestOutcomeLedgerWritesFirstWhenNotAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		number  string
		latency time.Duration
		later   time.Duration // when an inquiry answers captured
	}{
		{"TimeoutCard", CardTimeout, 0, TimeoutAfter + InquiryDelay},
		{"Latency", CardVisa, time.Hour, time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := testenv.NewClock(time.Now())
			l := NewMemoryLedger()
			p := New("sandbox-eu", nil, WithOutcomeLedger(l), WithClock(clk), WithLatency(c.latency))
			req := charge(c.number, "EUR")
			if p.RecordsWithOutcome(req) {
				t.Fatal("RecordsWithOutcome is true, yet the charge writes its entry itself")
			}
			// The caller stops waiting at once: the entry is written before.
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			res, err := p.Charge(ctx, req)
			if providerErr(t, err).Kind != paygate.ProviderUnknownOutcome || len(res.Commit) != 0 {
				t.Fatalf("charge: %+v, %v; want an unknown outcome with nothing to commit", res, err)
			}
			if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryPending {
				t.Fatalf("after the charge: %+v, want pending", got)
			}
			clk.Add(c.later)
			if got := inquire(t, p, req.PaymentID); got.Status != paygate.InquiryAnswered || got.Result.Status != paygate.PaymentCaptured {
				t.Fatalf("later: %+v, want captured", got)
			}
		})
	}
}

// TestRecordsWithOutcomeOnlyWithTheOutcomeLedger: a sandbox that keeps its
// ledger elsewhere (WithLedger, or in memory) writes every entry during the
// charge, and says so before the call.
func TestRecordsWithOutcomeOnlyWithTheOutcomeLedger(t *testing.T) {
	t.Parallel()
	l := NewMemoryLedger()
	req := charge(CardVisa, "EUR")
	for name, p := range map[string]*Provider{
		"WithLedger": New("sandbox-eu", nil, WithLedger(l)),
		"InMemory":   New("sandbox-eu", nil),
	} {
		if p.RecordsWithOutcome(req) {
			t.Errorf("%s: RecordsWithOutcome is true", name)
		}
		res, err := p.Charge(context.Background(), req)
		if err != nil || len(res.Commit) != 0 {
			t.Errorf("%s: charge %+v, %v; want captured with nothing to commit", name, res, err)
		}
	}
	if _, err := l.SandboxChargeByPayment(context.Background(), "sandbox-eu", req.PaymentID); err != nil {
		t.Errorf("WithLedger: the charge wrote no entry: %v", err)
	}
	noID := req
	noID.PaymentID = ""
	if New("sandbox-eu", nil, WithOutcomeLedger(l)).RecordsWithOutcome(noID) {
		t.Error("RecordsWithOutcome is true for a charge without a payment id, which hands nothing back")
	}
}
