package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/provider/score"
)

// The configuration file of these tests knows the sandbox kind.
func init() { provider.Register(sandbox.Connector) }

// attempt is one provider call of the loop below.
type attempt struct {
	provider string
	kind     paygate.ProviderErrorKind // when err
	err      bool
}

// chargeLikePaymentLayer mimics the payment layer: try the route in order,
// moving on only when a provider provably processed nothing.
func chargeLikePaymentLayer(t *testing.T, r paygate.Router, currency, number string) (paygate.ChargeResult, string, []attempt, error) {
	t.Helper()
	var tried []attempt
	var last error
	for _, p := range r.Route(paygate.ModeTest, currency) {
		res, err := p.Charge(context.Background(), paygate.ChargeRequest{
			PaymentID: "pay_" + currency, MerchantID: "m_1", Mode: paygate.ModeTest,
			Amount: paygate.Money{Amount: 1000, Currency: currency},
			Card:   paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2030, CVV: "123", HolderName: "J"},
		})
		if err == nil {
			tried = append(tried, attempt{provider: p.ID()})
			return res, p.ID(), tried, nil
		}
		var pe *paygate.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("%s answered a non-provider error %v", p.ID(), err)
		}
		tried = append(tried, attempt{provider: p.ID(), err: true, kind: pe.Kind})
		last = err
		if pe.Kind != paygate.ProviderUnavailable {
			break
		}
	}
	return paygate.ChargeResult{}, "", tried, last
}

func TestFailoverCard(t *testing.T) {
	t.Parallel()
	tab := builtinTable(t)
	cases := []struct {
		currency string
		first    string
	}{
		{"EUR", sandbox.EU},
		{"CHF", sandbox.EU},
		{"USD", sandbox.US},
		{"JPY", sandbox.APAC},
	}
	for _, c := range cases {
		t.Run(c.currency, func(t *testing.T) {
			t.Parallel()
			res, by, tried, err := chargeLikePaymentLayer(t, tab, c.currency, sandbox.CardFailover)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != paygate.PaymentCaptured || by != sandbox.Global {
				t.Fatalf("%s by %s, want captured by sandbox-global", res.Status, by)
			}
			want := []attempt{{provider: c.first, err: true, kind: paygate.ProviderUnavailable}, {provider: sandbox.Global}}
			if len(tried) != 2 || tried[0] != want[0] || tried[1] != want[1] {
				t.Fatalf("attempts %+v, want %+v", tried, want)
			}
		})
	}
	// A currency sandbox-global serves alone: no next provider, so it
	// captures at once instead of failing the payment.
	t.Run("KWD", func(t *testing.T) {
		t.Parallel()
		res, by, tried, err := chargeLikePaymentLayer(t, tab, "KWD", sandbox.CardFailover)
		if err != nil || res.Status != paygate.PaymentCaptured || by != sandbox.Global || len(tried) != 1 {
			t.Fatalf("KWD: %+v by %s after %+v, %v", res, by, tried, err)
		}
	})
}

// TestFailoverExactlyOnceEveryCurrency checks every regional currency and a
// few global-only ones: at most one provider answers unavailable, and the
// payment is always captured.
func TestFailoverExactlyOnceEveryCurrency(t *testing.T) {
	t.Parallel()
	tab := builtinTable(t)
	currencies := []string{"KWD", "ZAR", "BHD", "XOF"}
	for _, p := range tab.Providers(paygate.ModeTest) {
		currencies = append(currencies, p.(*sandbox.Provider).Currencies()...)
	}
	for _, cur := range currencies {
		res, _, tried, err := chargeLikePaymentLayer(t, tab, cur, sandbox.CardFailover)
		if err != nil || res.Status != paygate.PaymentCaptured {
			t.Fatalf("%s: %+v, %v", cur, res, err)
		}
		route := tab.Route(paygate.ModeTest, cur)
		if wantTries := len(route); len(tried) != wantTries {
			t.Fatalf("%s: %d attempts over a route of %d: %+v", cur, len(tried), wantTries, tried)
		}
	}
}

// TestOtherCardsDoNotFailOver: a provider error or a decline stops at the
// first provider.
func TestOtherCardsDoNotFailOver(t *testing.T) {
	t.Parallel()
	tab := builtinTable(t)
	_, _, tried, err := chargeLikePaymentLayer(t, tab, "EUR", sandbox.CardProviderError)
	if err == nil || len(tried) != 1 || tried[0].kind != paygate.ProviderFailed {
		t.Fatalf("0119: %+v, %v", tried, err)
	}
	res, by, tried, err := chargeLikePaymentLayer(t, tab, "USD", sandbox.CardDeclined)
	if err != nil || res.Status != paygate.PaymentFailed || by != sandbox.US || len(tried) != 1 {
		t.Fatalf("0002: %+v by %s after %+v, %v", res, by, tried, err)
	}
}

// TestRefundThroughRouter: the refund goes to the provider that captured
// the payment, found by id, and card 5126's refund fails there.
func TestRefundThroughRouter(t *testing.T) {
	t.Parallel()
	tab := builtinTable(t)
	for number, want := range map[string]paygate.RefundStatus{
		sandbox.CardVisa:        paygate.RefundSucceeded,
		sandbox.CardRefundFails: paygate.RefundFailed,
	} {
		res, by, _, err := chargeLikePaymentLayer(t, tab, "GBP", number)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := tab.Provider(paygate.ModeTest, by)
		if !ok {
			t.Fatalf("provider %s not found", by)
		}
		rr, err := p.Refund(context.Background(), paygate.RefundRequest{
			RefundID: "r1", PaymentID: "pay_GBP", ProviderRef: res.ProviderRef, Amount: paygate.Money{Amount: 1000, Currency: "GBP"},
		})
		if err != nil || rr.Status != want {
			t.Fatalf("refund of %s payment: %+v, %v; want %s", by, rr, err, want)
		}
	}
}

// builtinTable is the table serve builds without a configuration file.
func builtinTable(t *testing.T) *provider.Table {
	t.Helper()
	tab, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: sandbox.Routes()})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestFailoverCardFollowsTheScores: on a success_rate route the first
// provider tried is whichever the scores put first, not the configured
// head; card 0259 is unavailable there and captured by the next, whichever
// provider the scores favour. A priority route is unchanged.
func TestFailoverCardFollowsTheScores(t *testing.T) {
	t.Parallel()
	cfg, err := provider.ParseConfig("paygate.yaml", []byte(`
providers:
  - {id: sb-a, kind: sandbox}
  - {id: sb-b, kind: sandbox}
routes:
  test:
    EUR: {providers: [sb-a, sb-b], strategy: success_rate, window: 50, explore: 5, minSamples: 10}
    default: [sb-a, sb-b]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	router, err := cfg.Build(provider.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := score.Group{Mode: paygate.ModeTest, Currency: "EUR", Brand: "visa"}
	n := 0
	pay := func(currency string) (first string, tried []string, by string) {
		t.Helper()
		n++
		for _, p := range router.RouteCard(paygate.ModeTest, currency, "visa") {
			tried = append(tried, p.ID())
			_, err := p.Charge(context.Background(), paygate.ChargeRequest{
				PaymentID: fmt.Sprintf("pay_%d", n), MerchantID: "m_1", Mode: paygate.ModeTest,
				Amount: paygate.Money{Amount: 1000, Currency: currency},
				Card:   paygate.Card{Number: paygate.PAN(sandbox.CardFailover), ExpMonth: 12, ExpYear: 2040, CVV: "123"},
			})
			var pe *paygate.ProviderError
			if err == nil {
				return tried[0], tried, p.ID()
			}
			if !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnavailable {
				t.Fatalf("%s: %v", p.ID(), err)
			}
		}
		return tried[0], tried, ""
	}
	for _, favoured := range []string{"sb-b", "sb-a"} {
		// The favoured provider approves everything, the other nothing.
		for range 50 {
			router.Scorer().Record(context.Background(), g, favoured, 50, score.Approved)
			other := "sb-a"
			if favoured == "sb-a" {
				other = "sb-b"
			}
			router.Scorer().Record(context.Background(), g, other, 50, score.Failed)
		}
		// (Each capture by the next provider counts for it: 30 payments
		// leave the favoured one ahead.)
		firsts := map[string]int{}
		for range 30 {
			first, tried, by := pay("EUR")
			firsts[first]++
			if len(tried) != 2 || by != tried[1] {
				t.Fatalf("favouring %s: tried %v, captured by %q; want the first unavailable and the next to capture", favoured, tried, by)
			}
		}
		if firsts[favoured] < 25 {
			t.Fatalf("favouring %s, first tried: %v", favoured, firsts)
		}
	}
	// A priority route: the configured head is unavailable, the next captures.
	for range 10 {
		if _, tried, by := pay("USD"); len(tried) != 2 || tried[0] != "sb-a" || by != "sb-b" {
			t.Fatalf("priority route: tried %v, captured by %q", tried, by)
		}
	}
}
