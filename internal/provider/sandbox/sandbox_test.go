package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// charge is a charge of the card in the currency. Its payment id derives
// from both, as one payment has one card: the ledger answers a repeated
// charge of a payment with its first outcome.
func charge(number, currency string) paygate.ChargeRequest {
	return paygate.ChargeRequest{
		PaymentID: "pay-" + digest("test", number, currency), MerchantID: "m_1", Mode: paygate.ModeTest,
		Amount: paygate.Money{Amount: 1050, Currency: currency},
		Card: paygate.Card{
			Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2030, CVV: "123", HolderName: "Jane Doe",
		},
	}
}

func providerErr(t *testing.T, err error) *paygate.ProviderError {
	t.Helper()
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *paygate.ProviderError", err, err)
	}
	return pe
}

func TestChargeTestCards(t *testing.T) {
	t.Parallel()
	type want struct {
		status  paygate.PaymentStatus
		decline string
		errKind paygate.ProviderErrorKind
		isErr   bool
		message string
	}
	cases := []struct {
		name   string
		number string
		want   want
	}{
		{"Visa", CardVisa, want{status: paygate.PaymentCaptured}},
		{"Mastercard", CardMastercard, want{status: paygate.PaymentCaptured}},
		{"Amex", CardAmex, want{status: paygate.PaymentCaptured}},
		{"OtherValid", "4111111111111111", want{status: paygate.PaymentCaptured}},
		{"Discover", "6011111111111117", want{status: paygate.PaymentCaptured}},
		{"RefundFails", CardRefundFails, want{status: paygate.PaymentCaptured}},
		{"Authorize", CardAuthorize, want{status: paygate.PaymentAuthorized}},
		{"Declined", CardDeclined, want{status: paygate.PaymentFailed, decline: paygate.DeclineGeneric, message: "Your card was declined."}},
		{"InsufficientFunds", CardInsufficientFunds, want{status: paygate.PaymentFailed, decline: paygate.DeclineInsufficientFunds, message: "insufficient funds"}},
		{"Expired", CardExpired, want{status: paygate.PaymentFailed, decline: paygate.DeclineExpiredCard, message: "expired"}},
		{"IncorrectCVC", CardIncorrectCVC, want{status: paygate.PaymentFailed, decline: paygate.DeclineIncorrectCVC, message: "security code"}},
		{"ProviderError", CardProviderError, want{isErr: true, errKind: paygate.ProviderFailed}},
		// The 3-D Secure cards: threeds_test.go.
		{"Timeout", CardTimeout, want{isErr: true, errKind: paygate.ProviderUnknownOutcome, message: "did not answer in time"}},
		// Not told it heads a route: nothing to fail over to, so captured.
		{"FailoverAlone", CardFailover, want{status: paygate.PaymentCaptured}},
	}
	p := New("sandbox-eu", []string{"EUR", "GBP"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Charge(context.Background(), charge(c.number, "EUR"))
			if c.want.isErr {
				pe := providerErr(t, err)
				if pe.Kind != c.want.errKind || pe.Provider != "sandbox-eu" {
					t.Fatalf("error %+v, want kind %v from sandbox-eu", pe, c.want.errKind)
				}
				if !strings.Contains(pe.Message, c.want.message) {
					t.Fatalf("message %q, want it to contain %q", pe.Message, c.want.message)
				}
				if strings.Contains(err.Error(), c.number) || strings.Contains(err.Error(), c.number[len(c.number)-4:]) {
					t.Fatalf("error names the card: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.want.status || res.DeclineCode != c.want.decline {
				t.Fatalf("result %+v, want status %s decline %q", res, c.want.status, c.want.decline)
			}
			if !strings.HasPrefix(res.ProviderRef, "sbx_") {
				t.Fatalf("provider ref %q", res.ProviderRef)
			}
			if res.ThreeDS != nil {
				t.Fatal("unexpected 3-D Secure action")
			}
			if c.want.decline != "" {
				if !strings.Contains(res.Message, c.want.message) {
					t.Fatalf("message %q, want it to contain %q", res.Message, c.want.message)
				}
				if strings.Contains(res.Message, c.number[len(c.number)-4:]) {
					t.Fatalf("decline message names the card: %q", res.Message)
				}
			} else if res.Message != "" {
				t.Fatalf("message %q on success", res.Message)
			}
		})
	}
}

func TestChargeFailoverFirstOf(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", []string{"EUR", "GBP"}, FirstOf("EUR"))
	_, err := p.Charge(context.Background(), charge(CardFailover, "EUR"))
	if pe := providerErr(t, err); pe.Kind != paygate.ProviderUnavailable {
		t.Fatalf("kind %v, want ProviderUnavailable", pe.Kind)
	}
	// GBP: the provider does not head GBP's route, so it captures.
	res, err := p.Charge(context.Background(), charge(CardFailover, "GBP"))
	if err != nil || res.Status != paygate.PaymentCaptured {
		t.Fatalf("GBP: %+v, %v", res, err)
	}
	// FirstOf only affects the failover card.
	res, err = p.Charge(context.Background(), charge(CardVisa, "EUR"))
	if err != nil || res.Status != paygate.PaymentCaptured {
		t.Fatalf("visa: %+v, %v", res, err)
	}
}

func TestChargeErrCurrencyNotServed(t *testing.T) {
	t.Parallel()
	p := New("sandbox-us", []string{"USD"})
	_, err := p.Charge(context.Background(), charge(CardVisa, "EUR"))
	if pe := providerErr(t, err); pe.Kind != paygate.ProviderUnavailable {
		t.Fatalf("kind %v, want ProviderUnavailable (nothing processed)", pe.Kind)
	}
	g := New("sandbox-global", nil)
	for _, cur := range []string{"EUR", "KWD", "XOF"} {
		if res, err := g.Charge(context.Background(), charge(CardVisa, cur)); err != nil || res.Status != paygate.PaymentCaptured {
			t.Fatalf("global %s: %+v, %v", cur, res, err)
		}
	}
}

func TestChargeErrLiveMode(t *testing.T) {
	t.Parallel()
	req := charge(CardVisa, "EUR")
	req.Mode = paygate.ModeLive
	_, err := New("sandbox-global", nil).Charge(context.Background(), req)
	if pe := providerErr(t, err); pe.Kind != paygate.ProviderFailed {
		t.Fatalf("kind %v, want ProviderFailed", pe.Kind)
	}
}

func TestProviderRef(t *testing.T) {
	t.Parallel()
	p := New("sandbox-eu", nil)
	a, _ := p.Charge(context.Background(), charge(CardVisa, "EUR"))
	b, _ := p.Charge(context.Background(), charge(CardVisa, "EUR"))
	if a.ProviderRef != b.ProviderRef {
		t.Fatalf("a repeated charge of one payment got %q then %q", a.ProviderRef, b.ProviderRef)
	}
	other := charge(CardVisa, "EUR")
	other.PaymentID = "another"
	if c, _ := p.Charge(context.Background(), other); c.ProviderRef == a.ProviderRef {
		t.Fatal("two payments share a reference")
	}
	g, _ := New("sandbox-global", nil).Charge(context.Background(), charge(CardVisa, "EUR"))
	if g.ProviderRef == a.ProviderRef {
		t.Fatal("two providers gave one payment the same reference")
	}
	noID := charge(CardVisa, "EUR")
	noID.PaymentID = ""
	x, _ := p.Charge(context.Background(), noID)
	y, _ := p.Charge(context.Background(), noID)
	if x.ProviderRef == y.ProviderRef {
		t.Fatal("references without a payment id are not random")
	}
	for _, r := range []string{a.ProviderRef, x.ProviderRef} {
		if _, ok := parsePaymentRef(r); !ok {
			t.Fatalf("issued reference %q does not parse", r)
		}
	}
	// The refund fate is the only difference: the reference is made from
	// the provider and payment ids, never from the card.
	rfReq := charge(CardRefundFails, "EUR")
	rfReq.PaymentID = charge(CardVisa, "EUR").PaymentID
	rf, _ := New("sandbox-eu", nil).Charge(context.Background(), rfReq)
	if rf.ProviderRef != a.ProviderRef+"_rf" {
		t.Fatalf("card 5126 reference %q, want %q", rf.ProviderRef, a.ProviderRef+"_rf")
	}
	if f, ok := parsePaymentRef(rf.ProviderRef); !ok || f != fateRefundFails {
		t.Fatalf("card 5126 reference %q parses as %v, %v", rf.ProviderRef, f, ok)
	}
}

func TestRefund(t *testing.T) {
	t.Parallel()
	p := New("sandbox-global", nil)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		number string
		want   paygate.RefundStatus
	}{
		{"OKVisa", CardVisa, paygate.RefundSucceeded},
		{"OKAmex", CardAmex, paygate.RefundSucceeded},
		{"OKAfterCapture", CardAuthorize, paygate.RefundSucceeded},
		{"FailsCard5126", CardRefundFails, paygate.RefundFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Charge(ctx, charge(c.number, "EUR"))
			if err != nil {
				t.Fatal(err)
			}
			op := paygate.PaymentOp{PaymentID: "pay", ProviderRef: res.ProviderRef, Amount: paygate.Money{Amount: 1050, Currency: "EUR"}}
			if res.Status == paygate.PaymentAuthorized {
				if err := p.Capture(ctx, op); err != nil {
					t.Fatal(err)
				}
			}
			req := paygate.RefundRequest{RefundID: "ref_1", PaymentID: "pay", ProviderRef: res.ProviderRef,
				Amount: paygate.Money{Amount: 500, Currency: "EUR"}, Reason: "requested"}
			rr, err := p.Refund(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if rr.Status != c.want {
				t.Fatalf("status %s, want %s", rr.Status, c.want)
			}
			if (rr.FailureReason != "") != (c.want == paygate.RefundFailed) {
				t.Fatalf("failure reason %q with status %s", rr.FailureReason, rr.Status)
			}
			if !strings.HasPrefix(rr.ProviderRef, "sbxr_") {
				t.Fatalf("refund ref %q", rr.ProviderRef)
			}
			// Repeating the refund (same RefundID) gives the same answer.
			again, err := p.Refund(ctx, req)
			if err != nil || again != rr {
				t.Fatalf("repeat: %+v, %v; first %+v", again, err, rr)
			}
			// Every refund of the payment shares its fate.
			req.RefundID = "ref_2"
			second, err := p.Refund(ctx, req)
			if err != nil || second.Status != c.want || second.ProviderRef == rr.ProviderRef {
				t.Fatalf("second refund: %+v, %v", second, err)
			}
		})
	}
}

func TestErrUnknownReference(t *testing.T) {
	t.Parallel()
	p := New("sandbox-global", nil)
	ctx := context.Background()
	valid := "sbx_" + strings.Repeat("ab", 16)
	for _, ref := range []string{"", "pi_123", "sbx_", "sbx_xyz", valid + "x", "sbx_" + strings.Repeat("zz", 16), valid + "_rf_rf"} {
		if _, err := p.Refund(ctx, paygate.RefundRequest{RefundID: "r", ProviderRef: ref}); providerErr(t, err).Kind != paygate.ProviderFailed {
			t.Fatalf("refund of %q: %v", ref, err)
		}
		if err := p.Capture(ctx, paygate.PaymentOp{ProviderRef: ref}); providerErr(t, err).Kind != paygate.ProviderFailed {
			t.Fatalf("capture of %q: %v", ref, err)
		}
		if err := p.Void(ctx, paygate.PaymentOp{ProviderRef: ref}); providerErr(t, err).Kind != paygate.ProviderFailed {
			t.Fatalf("void of %q: %v", ref, err)
		}
	}
	for _, ref := range []string{valid, valid + "_rf"} {
		if err := p.Void(ctx, paygate.PaymentOp{ProviderRef: ref}); err != nil {
			t.Fatalf("void of %q: %v", ref, err)
		}
	}
}

func TestContextCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := New("sandbox-global", nil)
	ref := "sbx_" + strings.Repeat("ab", 16)
	_, err := p.Charge(ctx, charge(CardVisa, "EUR"))
	if providerErr(t, err).Kind != paygate.ProviderUnavailable {
		t.Fatalf("charge: %v", err)
	}
	if err := p.Capture(ctx, paygate.PaymentOp{ProviderRef: ref}); providerErr(t, err).Kind != paygate.ProviderUnavailable {
		t.Fatalf("capture: %v", err)
	}
	if err := p.Void(ctx, paygate.PaymentOp{ProviderRef: ref}); providerErr(t, err).Kind != paygate.ProviderUnavailable {
		t.Fatalf("void: %v", err)
	}
	if _, err := p.Refund(ctx, paygate.RefundRequest{ProviderRef: ref}); providerErr(t, err).Kind != paygate.ProviderUnavailable {
		t.Fatalf("refund: %v", err)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	p := New("sandbox-global", nil, WithLatency(50*time.Millisecond))
	start := time.Now()
	if _, err := p.Charge(context.Background(), charge(CardVisa, "EUR")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("answered after %v, want at least the latency", d)
	}

	// The charge was received before the wait: a deadline during it is an
	// unknown outcome, and a real timeout (not a card's doing).
	slow := New("sandbox-global", nil, WithLatency(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := slow.Charge(ctx, charge(CardVisa, "EUR"))
	if providerErr(t, err).Kind != paygate.ProviderUnknownOutcome {
		t.Fatalf("cancelled during latency: %v", err)
	}
	var co *CardOutcomeError
	if errors.As(err, &co) {
		t.Fatal("a timeout is marked as a card's outcome")
	}
}

func TestCurrencies(t *testing.T) {
	t.Parallel()
	p := New("sandbox-us", []string{"usd", "CAD"})
	if got := p.Currencies(); len(got) != 2 || got[0] != "CAD" || got[1] != "USD" {
		t.Fatalf("Currencies = %v", got)
	}
	if !p.Serves("USD") || p.Serves("EUR") {
		t.Fatal("Serves is wrong")
	}
	if New("g", nil).Currencies() != nil || !New("g", nil).Serves("KWD") {
		t.Fatal("a nil list must serve every currency")
	}
}

func BenchmarkCharge(b *testing.B) {
	p := New("sandbox-eu", []string{"EUR"})
	req := charge(CardVisa, "EUR")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Charge(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
