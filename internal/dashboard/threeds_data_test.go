package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

func TestThreeDSSummary(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	consumed := func(d time.Duration) *time.Time { c := t0.Add(d); return &c }
	ch := func(c *time.Time) []paygate.ThreeDSChallenge {
		return []paygate.ThreeDSChallenge{{CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute), ConsumedAt: c}}
	}
	for _, c := range []struct {
		name       string
		p          paygate.Payment
		challenges []paygate.ThreeDSChallenge
		want       string
	}{
		{"None", paygate.Payment{Status: paygate.PaymentCaptured}, nil, "Not challenged."},
		{"Waiting", paygate.Payment{Status: paygate.PaymentPending3DS}, ch(nil), "waiting for the customer"},
		{"Authenticated", paygate.Payment{Status: paygate.PaymentCaptured}, ch(consumed(time.Minute)), "the customer authenticated"},
		{"Failed", paygate.Payment{Status: paygate.PaymentFailed, ErrorCode: string(paygate.CodeAuthenticationFailed)}, ch(consumed(time.Minute)), "did not authenticate"},
		{"Expired", paygate.Payment{Status: paygate.PaymentFailed, ErrorCode: string(paygate.CodeAuthenticationExpired)}, ch(consumed(31 * time.Minute)), "expired"},
		{"RefusedAfter", paygate.Payment{Status: paygate.PaymentFailed, ErrorCode: string(paygate.CodeCardDeclined)}, ch(consumed(time.Minute)), "provider then refused"},
	} {
		if got := threeDSSummary(c.p, c.challenges); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.want)
		}
	}
}

// TestPaymentPageThreeDS reads the challenge from the store: a payment
// waiting for its challenge says so, a plain one says it was not
// challenged, and the timeline shows when the challenge was sent.
func TestPaymentPageThreeDS(t *testing.T) {
	f := newDataFixture(t)
	challenged := f.pay(f.a, sandbox.Card3DS, "25.00", "EUR", "cust-3ds", "")
	plain := f.pay(f.a, "4242424242424242", "25.00", "EUR", "cust-3ds", "")
	a := f.get(f.a.viewer, "/payments/"+challenged)
	if a.code != 200 || !strings.Contains(a.body, "waiting for the customer to complete the challenge") ||
		!strings.Contains(a.body, "3-D Secure challenge sent to the customer") {
		t.Errorf("challenged payment page: %d\n%s", a.code, a.body)
	}
	if a := f.get(f.a.viewer, "/payments/"+plain); a.code != 200 || !strings.Contains(a.body, "Not challenged.") {
		t.Errorf("plain payment page: %d\n%s", a.code, a.body)
	}
}
