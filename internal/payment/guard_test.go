package payment_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/testenv"
)

// fakeGuard blocks the cards of block and records what it was told.
type fakeGuard struct {
	mu       sync.Mutex
	block    map[string]paygate.GuardRule // by card fingerprint
	checked  []paygate.GuardAttempt
	declined []paygate.GuardAttempt
}

func (g *fakeGuard) Check(_ context.Context, a paygate.GuardAttempt) paygate.GuardRule {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checked = append(g.checked, a)
	return g.block[a.Card]
}

func (g *fakeGuard) Declined(_ context.Context, a paygate.GuardAttempt) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.declined = append(g.declined, a)
}

// blockedMetrics counts CardTestingBlocked by rule.
type blockedMetrics struct {
	payment.Metrics
	mu      sync.Mutex
	blocked map[string]int
}

func (m *blockedMetrics) PaymentStatus(paygate.Mode, string, paygate.PaymentStatus) {}
func (m *blockedMetrics) CardTestingBlocked(rule string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocked[rule]++
}

// TestGuardInCreate: a blocked attempt calls no provider and is stored in
// one unit as §20 says; only a provider's CARD_DECLINED is reported to the
// guard as a decline, after its commit.
func TestGuardInCreate(t *testing.T) {
	merchantOnEngines(t, func(t *testing.T, st paygate.Store, clock *testenv.Clock, keyID string) {
		prov := sandbox.New("sandbox-eu", []string{"EUR"}, sandbox.WithClock(clock))
		table, err := provider.NewTable(map[paygate.Mode]provider.Routes{paygate.ModeTest: {Default: []paygate.Provider{prov}}})
		if err != nil {
			t.Fatal(err)
		}
		vlt := testVault(t)
		g := &fakeGuard{block: map[string]paygate.GuardRule{
			vlt.Fingerprint(paygate.PAN(sandbox.CardVisa)): paygate.GuardCardIP,
		}}
		mx := &blockedMetrics{blocked: map[string]int{}}
		svc := payment.New(payment.Config{
			Store: st, Router: table, Clock: clock, Encoder: httpapi.Encoder{}, Vault: vlt,
			ProviderTimeout: 5 * time.Second, Guard: g, Metrics: mx,
		})
		fx := &sandboxFixture{st: st, svc: svc, clock: clock, prov: prov, keyID: keyID}
		pay := func(key, number string) (payment.Result, paygate.IdempotencyReservation) {
			t.Helper()
			res := fx.reservation(key)
			out, err := svc.Create(t.Context(), payment.Request{MerchantID: "m1", Mode: paygate.ModeTest, IdempotencyKey: key, Reservation: &res},
				payment.CreateInput{
					Amount: paygate.Money{Amount: 1050, Currency: "EUR"}, AmountText: "10.50", Method: paygate.MethodCard,
					CustomerExternalID: "c1", ClientAddr: "203.0.113.5",
					Card: &paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2040, CVV: "123", HolderName: "A"},
				})
			if err != nil {
				t.Fatalf("create with %s: %v", key, err)
			}
			return out, res
		}

		out, _ := pay("blocked", sandbox.CardVisa)
		if out.Kind != payment.PaymentDeclined || out.Payment.DeclineCode != paygate.DeclineBlocked {
			t.Fatalf("blocked attempt: %+v", out)
		}
		p, err := st.PaymentByID(t.Context(), "m1", paygate.ModeTest, out.Payment.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != paygate.PaymentFailed || p.ErrorCode != string(paygate.CodeCardDeclined) || p.DeclineCode != paygate.DeclineBlocked ||
			p.ProviderID != "" || p.ProviderRef != "" {
			t.Errorf("stored %+v", p)
		}
		if _, err := st.SandboxChargeByPayment(t.Context(), "sandbox-eu", p.ID); !paygate.IsNotFound(err) {
			t.Errorf("the sandbox has a ledger entry of the blocked payment: %v", err)
		}
		ans := payment.StoredAnswer(out)
		if ans.Status != 400 || !strings.Contains(string(ans.Body), `"declineCode":"blocked"`) {
			t.Errorf("answer %d %s", ans.Status, ans.Body)
		}
		fx.assertReplays(t, "blocked", ans.Status, ans.Body)
		evs, err := st.Events(t.Context(), paygate.EventQuery{MerchantID: "m1", Mode: paygate.ModeTest, PaymentID: p.ID})
		if err != nil || len(evs) != 1 || evs[0].Type != paygate.EventPaymentFailed {
			t.Errorf("events %+v %v, want one payment.failed", evs, err)
		}
		if mx.blocked["card_ip"] != 1 {
			t.Errorf("blocked metric %v", mx.blocked)
		}

		pay("declined", sandbox.CardDeclined)
		pay("error", sandbox.CardProviderError)
		pay("captured", sandbox.CardMastercard)
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.checked) != 4 {
			t.Errorf("%d checks, want one per attempt", len(g.checked))
		}
		if len(g.declined) != 1 || g.declined[0].Card != vlt.Fingerprint(paygate.PAN(sandbox.CardDeclined)) ||
			g.declined[0].Addr != "203.0.113.5" || g.declined[0].Customer != "c1" {
			t.Errorf("declines reported %+v, want the one of card 0002", g.declined)
		}
		for _, a := range g.checked {
			if a.Card == sandbox.CardVisa || a.Card == sandbox.CardDeclined || len(a.Card) < 32 {
				t.Errorf("the guard saw %q: a card number, not its keyed fingerprint", a.Card)
			}
		}
	})
}
