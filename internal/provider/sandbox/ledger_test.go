package sandbox

import (
	"context"
	"errors"
	"fmt"
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
	if err != nil || res2 != res {
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

func (failingLedger) RecordSandboxCharge(context.Context, paygate.SandboxCharge) (paygate.SandboxCharge, error) {
	return paygate.SandboxCharge{}, errors.New("disk full")
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
