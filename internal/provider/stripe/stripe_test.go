package stripe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/providertest"
)

func newFakeProvider(t *testing.T, f *fake, timeout time.Duration) *Provider {
	t.Helper()
	p, err := New(Config{ID: "stripe-test", SecretKey: f.key, BaseURL: f.srv.URL, Currencies: []string{"EUR", "JPY", "KWD", "ISK"}, Timeout: timeout, SearchLag: -1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConformance runs the shared provider conformance suite against the
// connector talking to the local fake.
func TestConformance(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	cards := map[providertest.Outcome]string{
		providertest.Captured: "4242424242424242", providertest.Authorized: "4000000000000077",
		providertest.Failed: "4000000000000119", providertest.Unavailable: "4000000000000259",
		providertest.Timeout: "4000000000000705", providertest.ThreeDS: "4000000000003220",
	}
	declines := map[string]string{
		paygate.DeclineGeneric: "4000000000000002", paygate.DeclineInsufficientFunds: "4000000000009995",
		paygate.DeclineExpiredCard: "4000000000000069", paygate.DeclineIncorrectCVC: "4000000000000127",
	}
	providertest.Exercise(t, providertest.Harness{
		New: func(t *testing.T) paygate.Provider { return newFakeProvider(t, f, time.Second) },
		Card: func(o providertest.Outcome, code string) string {
			if o == providertest.Declined {
				return declines[code]
			}
			return cards[o]
		},
		ThreeDSResponse: func(t *testing.T, req paygate.ChargeRequest, res paygate.ChargeResult, authenticate bool) map[string]string {
			f.authenticate(res.ProviderRef, authenticate)
			// What Stripe appends to the return URL.
			return map[string]string{"payment_intent": res.ProviderRef, "payment_intent_client_secret": res.ProviderRef + "_secret_fake", "source_type": "card"}
		},
		ChargeTimeout: 5 * time.Second,
	})
}

func charge(number, currency string, amount int64) paygate.ChargeRequest {
	return paygate.ChargeRequest{
		PaymentID: "0193a0b0-0000-7000-8000-000000000001", MerchantID: "m_1", Mode: paygate.ModeLive,
		Amount:            paygate.Money{Amount: amount, Currency: currency},
		Card:              paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2030, CVV: "123", HolderName: "Jane Doe"},
		Billing:           &paygate.Billing{Email: "jane@example.com", Address: "1 Main St", City: "Berlin", PostalCode: "10115", Country: "DE"},
		DeviceFingerprint: "fp_1",
		ThreeDSReturnURL:  "https://pay.example/v1/3ds/callback/tok",
	}
}

func TestRequestShape(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newFakeProvider(t, f, time.Second)
	req := charge("4242424242424242", "EUR", 1050)
	req.PaymentID = "0193a0b0-0000-7000-8000-0000000000aa"
	if _, err := p.Charge(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.forms) != 2 || f.requests[0] != "POST /v1/payment_methods" || f.requests[1] != "POST /v1/payment_intents" {
		t.Fatalf("requests %v", f.requests)
	}
	pm, pi := f.forms[0], f.forms[1]
	for k, want := range map[string]string{
		"type": "card", "card[number]": "4242424242424242", "card[exp_month]": "12", "card[exp_year]": "2030", "card[cvc]": "123",
		"billing_details[name]": "Jane Doe", "billing_details[email]": "jane@example.com",
		"billing_details[address][line1]": "1 Main St", "billing_details[address][country]": "DE",
	} {
		if got := pm.Get(k); got != want {
			t.Errorf("payment method %s = %q, want %q", k, got, want)
		}
	}
	for k, want := range map[string]string{
		"amount": "1050", "currency": "eur", "confirm": "true", "metadata[paygate_payment_id]": req.PaymentID,
		"return_url": req.ThreeDSReturnURL, "payment_method_types[0]": "card",
	} {
		if got := pi.Get(k); got != want {
			t.Errorf("intent %s = %q, want %q", k, got, want)
		}
	}
	for k := range pi {
		if strings.HasPrefix(k, "metadata[") && k != "metadata[paygate_payment_id]" {
			t.Errorf("metadata forwarded: %s", k)
		}
		if strings.Contains(k, "card[") {
			t.Errorf("card data in the intent: %s", k)
		}
	}
}

func TestAmounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cur  string
		in   int64
		want int64
		err  bool
	}{
		{"EUR", 1050, 1050, false}, {"JPY", 500, 500, false}, {"ISK", 500, 50000, false},
		{"KWD", 1230, 1230, false}, {"KWD", 1234, 0, true}, {"XXX", 1, 0, true},
	}
	for _, c := range cases {
		got, cur, err := stripeAmount(paygate.Money{Amount: c.in, Currency: c.cur})
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s %d: %d, %v; want %d (error %v)", c.cur, c.in, got, err, c.want, c.err)
		}
		if err == nil && cur != strings.ToLower(c.cur) {
			t.Errorf("currency %q", cur)
		}
	}
}

func kind(t *testing.T, err error) paygate.ProviderErrorKind {
	t.Helper()
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a ProviderError", err)
	}
	return pe.Kind
}

func TestErrorsClassified(t *testing.T) {
	t.Parallel()
	// Connection refused: nothing sent.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, _ := New(Config{ID: "s", SecretKey: "sk", BaseURL: "http://" + addr, Timeout: time.Second})
	_, err = p.Charge(context.Background(), charge("4242424242424242", "EUR", 100))
	if k := kind(t, err); k != paygate.ProviderUnavailable {
		t.Fatalf("connection refused: kind %d", k)
	}

	// 5xx on the intent: unknown outcome. Rate limit: unavailable.
	for status, want := range map[int]paygate.ProviderErrorKind{
		500: paygate.ProviderUnknownOutcome, 503: paygate.ProviderUnknownOutcome,
		429: paygate.ProviderUnavailable, 400: paygate.ProviderFailed, 401: paygate.ProviderFailed,
	} {
		srv := newStatusServer(t, status)
		p, _ := New(Config{ID: "s", SecretKey: "sk_test_fake", BaseURL: srv, Timeout: time.Second})
		req := charge("4242424242424242", "EUR", 100)
		_, err := p.Charge(context.Background(), req)
		if k := kind(t, err); k != want {
			t.Errorf("HTTP %d: kind %d, want %d (%v)", status, k, want, err)
		}
		if strings.Contains(err.Error(), "4242424242424242") {
			t.Errorf("HTTP %d: the error names the card: %v", status, err)
		}
	}
}

// newStatusServer answers payment methods and then every intent with the
// status (and a Stripe-shaped error that echoes a card number).
func newStatusServer(t *testing.T, status int) string {
	f := newFake(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/payment_methods" {
			f.serve(w, r)
			return
		}
		writeJSON(w, status, stripeError("api_error", "", "", "Something about card 4242424242424242 went wrong.", nil))
	})
	f.srv.Config.Handler = h
	return f.srv.URL
}

func TestTimeoutIsUnknown(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newFakeProvider(t, f, 200*time.Millisecond)
	_, err := p.Charge(context.Background(), charge("4000000000000705", "EUR", 100))
	if k := kind(t, err); k != paygate.ProviderUnknownOutcome {
		t.Fatalf("kind %d", k)
	}
}

func TestInquireYoungPaymentIsPending(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p, _ := New(Config{ID: "s", SecretKey: f.key, BaseURL: f.srv.URL})
	q, err := p.Inquire(context.Background(), id.New())
	if err != nil || q.Status != paygate.InquiryPending {
		t.Fatalf("young: %+v, %v; want pending", q, err)
	}
	q, err = p.Inquire(context.Background(), "0193a0b0-0000-7000-8000-000000000001") // 2024
	if err != nil || q.Status != paygate.InquiryUnknown {
		t.Fatalf("old: %+v, %v; want unknown", q, err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{SecretKey: "k"}, {ID: "x"}, {ID: "x", SecretKey: "k", BaseURL: "ftp://x"}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		} else if strings.Contains(err.Error(), "k\"") {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

func TestDeclineCodes(t *testing.T) {
	t.Parallel()
	cases := map[[2]string]string{
		{"card_declined", "generic_decline"}:    paygate.DeclineGeneric,
		{"card_declined", "insufficient_funds"}: paygate.DeclineInsufficientFunds,
		{"expired_card", ""}:                    paygate.DeclineExpiredCard,
		{"incorrect_cvc", ""}:                   paygate.DeclineIncorrectCVC,
		{"invalid_cvc", ""}:                     paygate.DeclineIncorrectCVC,
		{"card_declined", "lost_card"}:          paygate.DeclineGeneric,
		{"card_declined", "do_not_honor"}:       paygate.DeclineGeneric,
		{"processing_error", ""}:                paygate.DeclineGeneric,
	}
	for in, want := range cases {
		if got := declineCode(&apiError{Code: in[0], DeclineCode: in[1]}); got != want {
			t.Errorf("%v: %s, want %s", in, got, want)
		}
	}
	if declineCode(nil) != paygate.DeclineGeneric {
		t.Error("nil error")
	}
}

func TestCompleteThreeDSRefusesAnotherIntent(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newFakeProvider(t, f, time.Second)
	req := charge("4000000000003220", "EUR", 100)
	res, err := p.Charge(context.Background(), req)
	if err != nil || res.Status != paygate.PaymentPending3DS || !strings.HasPrefix(res.ThreeDS.RedirectURL, f.srv.URL) {
		t.Fatalf("charge: %+v, %v", res, err)
	}
	comp := paygate.ThreeDSCompletion{PaymentID: req.PaymentID, ProviderRef: res.ProviderRef, Amount: req.Amount,
		Response: map[string]string{"payment_intent": "pi_other"}}
	if _, err := p.CompleteThreeDS(context.Background(), comp); kind(t, err) != paygate.ProviderFailed {
		t.Fatalf("foreign intent: %v", err)
	}
	// Not completed yet: the customer may try again.
	comp.Response = nil
	if _, err := p.CompleteThreeDS(context.Background(), comp); kind(t, err) != paygate.ProviderUnavailable {
		t.Fatalf("not completed: %v", err)
	}
	// Another payment's completion with this intent.
	f.authenticate(res.ProviderRef, true)
	comp.PaymentID = "0193a0b0-0000-7000-8000-0000000000ff"
	if _, err := p.CompleteThreeDS(context.Background(), comp); kind(t, err) != paygate.ProviderFailed {
		t.Fatalf("another payment: %v", err)
	}
}

func TestRefundFailed(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newFakeProvider(t, f, time.Second)
	req := charge("4242424242424242", "EUR", 1000)
	res, err := p.Charge(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": "re_1", "object": "refund", "status": "failed", "failure_reason": "expired_or_canceled_card"})
	})
	got, err := p.Refund(context.Background(), paygate.RefundRequest{RefundID: "r1", PaymentID: req.PaymentID, ProviderRef: res.ProviderRef, Amount: req.Amount})
	if err != nil || got.Status != paygate.RefundFailed || !strings.Contains(got.FailureReason, "expired or canceled card") {
		t.Fatalf("refund: %+v, %v", got, err)
	}
}
