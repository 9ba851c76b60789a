package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/guard"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/store/postgres"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
)

// guardEngines runs f on a fresh SQLite and a fresh PostgreSQL store.
func guardEngines(t *testing.T, f func(t *testing.T, st paygate.Store)) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var st paygate.Store
			var err error
			if engine == "sqlite" {
				st, err = sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "paygate.db"))
			} else {
				st, err = postgres.Open(t.Context(), testenv.PostgresSchema(t))
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			f(t, st)
		})
	}
}

// guardNode is one gateway node with a card-testing guard on counter.
type guardNode struct {
	benchServer
	mx *metrics.Metrics
}

// newGuardNode wires a node on st as serve does, with the guard on
// counter; its merchant is a new one unless secret names a key of an
// existing one (a second node of one installation).
func newGuardNode(t *testing.T, st paygate.Store, counter guard.Counter, clock paygate.Clock, secret string) guardNode {
	t.Helper()
	mx := metrics.New(nil)
	s := wireServer(t, st, func(c *httpapi.Config) {
		routing, err := provider.LoadConfig("", func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		router, err := routing.Build(provider.BuildOptions{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		vlt, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize))
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewJSONHandler(io.Discard, nil))
		g := guard.New(guard.Config{Settings: st, Counter: counter, Clock: clock, Logger: log, Metrics: mx})
		c.Payments = payment.New(payment.Config{Store: st, Router: router, Encoder: httpapi.Encoder{}, Vault: vlt,
			Clock: clock, Metrics: mx, Guard: g, Logger: log})
	})
	if secret != "" {
		s.secret = secret
	}
	return guardNode{benchServer: s, mx: mx}
}

// merchantOf returns the merchant of the node's key.
func (n guardNode) merchantOf(t *testing.T) paygate.APIKey {
	t.Helper()
	k, err := paygate.OneAPIKey(n.store.APIKeys(t.Context(), paygate.APIKeyQuery{Hash: auth.Hash(n.secret)}))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// enableGuard switches every rule of the key's merchant on in test mode
// with the live defaults, but ip_cards at 3 distinct cards (the sandbox
// has four declining cards).
func enableGuard(t *testing.T, st paygate.Store, k paygate.APIKey) {
	t.Helper()
	var u paygate.Unit
	for _, r := range paygate.DefaultGuardSettings(k.MerchantID, paygate.ModeLive).Rules {
		if r.Rule == paygate.GuardIPCards {
			r.Threshold = 3
		}
		u.Add(paygate.GuardChange{MerchantID: k.MerchantID, Mode: paygate.ModeTest, Settings: r, At: paygate.SystemClock{}.Now()})
	}
	if err := st.Commit(t.Context(), u); err != nil {
		t.Fatal(err)
	}
}

// guardAnswer is what a test reads of a payment's answer.
type guardAnswer struct {
	code int
	id   string
	// status of data, and error name and declineCode
	status, name, decline string
}

func (n guardNode) pay(t *testing.T, addr, number, customer string) guardAnswer {
	t.Helper()
	body := `{"amount":"12.00","currency":"EUR","customerId":"` + customer + `",` +
		`"card":{"number":"` + number + `","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"Ada Lovelace"}}`
	req := httptest.NewRequest(http.MethodPost, "/v1/payments", bytes.NewReader([]byte(body)))
	req.RemoteAddr = addr + ":40000"
	req.Header.Set("X-API-Key", n.secret)
	req.Header.Set("Idempotency-Key", id.New())
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	n.handler.ServeHTTP(w, req)
	var env struct {
		Data struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
		Error struct {
			Name          string `json:"name"`
			DeclineCode   string `json:"declineCode"`
			TransactionID string `json:"transactionId"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
		t.Fatalf("answer %d %s: %v", w.Code, w.Body, err)
	}
	a := guardAnswer{code: w.Code, id: env.Data.ID, status: env.Data.Status, name: env.Error.Name, decline: env.Error.DeclineCode}
	if a.id == "" {
		a.id = env.Error.TransactionID
	}
	return a
}

// wantDeclined fails unless the answer is a provider's decline.
func wantDeclined(t *testing.T, a guardAnswer, what string) {
	t.Helper()
	if a.code != http.StatusBadRequest || a.name != "CARD_DECLINED" || a.decline == paygate.DeclineBlocked || a.decline == "" {
		t.Fatalf("%s: %+v, want a decline by the provider", what, a)
	}
}

// wantBlocked fails unless the answer is a block (decisions §20), and
// checks what was stored: failed with CARD_DECLINED and declineCode
// blocked, a payment.failed event, and no provider's ledger entry.
func wantBlocked(t *testing.T, n guardNode, a guardAnswer, what string) {
	t.Helper()
	if a.code != http.StatusBadRequest || a.name != "CARD_DECLINED" || a.decline != paygate.DeclineBlocked {
		t.Fatalf("%s: %+v, want 400 CARD_DECLINED blocked", what, a)
	}
	k := n.merchantOf(t)
	p, err := n.store.PaymentByID(t.Context(), k.MerchantID, k.Mode, a.id)
	if err != nil {
		t.Fatalf("%s: the blocked payment %q: %v", what, a.id, err)
	}
	if p.Status != paygate.PaymentFailed || p.ErrorCode != string(paygate.CodeCardDeclined) || p.DeclineCode != paygate.DeclineBlocked || p.ProviderID != "" {
		t.Errorf("%s: stored %s %s %s provider %q", what, p.Status, p.ErrorCode, p.DeclineCode, p.ProviderID)
	}
	evs, err := n.store.Events(t.Context(), paygate.EventQuery{MerchantID: k.MerchantID, Mode: k.Mode, PaymentID: a.id})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != paygate.EventPaymentFailed {
		t.Errorf("%s: events %+v, want one payment.failed", what, evs)
	}
	for _, prov := range []string{sandbox.EU, sandbox.Global} {
		if _, err := n.store.SandboxChargeByPayment(t.Context(), prov, a.id); !paygate.IsNotFound(err) {
			t.Errorf("%s: %s has a ledger entry of the blocked payment (%v): a provider was called", what, prov, err)
		}
	}
}

// blockedCount reads paygate_card_testing_blocked_total{rule}.
func blockedCount(t *testing.T, mx *metrics.Metrics, rule paygate.GuardRule) float64 {
	t.Helper()
	fams, err := mx.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "paygate_card_testing_blocked_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "rule" && l.GetValue() == string(rule) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no paygate_card_testing_blocked_total{rule=%q}", rule)
	return 0
}

// TestCardTestingGuard plays an attack on one node of each engine: the
// attacker is blocked as §20 says, provider errors and blocked attempts
// do not count, and a legitimate customer is not affected.
func TestCardTestingGuard(t *testing.T) {
	t.Parallel()
	guardEngines(t, func(t *testing.T, st paygate.Store) {
		clock := testenv.NewClock(time.Now())
		n := newGuardNode(t, st, guard.NewMemory(), clock, "")
		k := n.merchantOf(t)

		// Off by default in test mode: a card declined ten times is
		// still sent to the provider.
		for i := range 10 {
			wantDeclined(t, n.pay(t, "198.51.100.1", sandbox.CardDeclined, "off"), "guard off, attempt "+strconv.Itoa(i))
		}
		enableGuard(t, st, k)

		// card_ip: three declines of one card from one address reach the
		// provider; the next attempt is blocked.
		for i := range 3 {
			wantDeclined(t, n.pay(t, "203.0.113.9", sandbox.CardInsufficientFunds, "mallory"), "card_ip decline "+strconv.Itoa(i))
		}
		for i := range 5 {
			wantBlocked(t, n, n.pay(t, "203.0.113.9", sandbox.CardInsufficientFunds, "mallory"), "card_ip attempt "+strconv.Itoa(i))
		}
		if got := blockedCount(t, n.mx, paygate.GuardCardIP); got != 5 {
			t.Errorf("blocked{card_ip} = %v, want 5", got)
		}
		// The five blocked attempts did not count for the card (3 of 5):
		// from another address it still reaches the provider, twice.
		wantDeclined(t, n.pay(t, "203.0.113.10", sandbox.CardInsufficientFunds, "mallory-2"), "card from another address")
		wantDeclined(t, n.pay(t, "203.0.113.11", sandbox.CardInsufficientFunds, "mallory-3"), "card from a third address")
		wantBlocked(t, n, n.pay(t, "203.0.113.12", sandbox.CardInsufficientFunds, "mallory-4"), "card, sixth attempt")
		if got := blockedCount(t, n.mx, paygate.GuardCard); got != 1 {
			t.Errorf("blocked{card} = %v, want 1", got)
		}

		// ip_cards (3 distinct cards here): a third declining card from
		// one address, then any card from it is blocked.
		wantDeclined(t, n.pay(t, "192.0.2.77", sandbox.CardDeclined, "eve"), "ip_cards card 1")
		wantDeclined(t, n.pay(t, "192.0.2.77", sandbox.CardExpired, "eve"), "ip_cards card 2")
		wantDeclined(t, n.pay(t, "192.0.2.77", sandbox.CardIncorrectCVC, "eve"), "ip_cards card 3")
		wantBlocked(t, n, n.pay(t, "192.0.2.77", sandbox.CardVisa, "eve"), "ip_cards, a fourth card")

		// Provider errors never count: a customer who retried through an
		// outage is not blocked.
		for i := range 12 {
			a := n.pay(t, "198.51.100.50", sandbox.CardProviderError, "outage")
			if a.name != "PROVIDER_ERROR" || a.decline != "" {
				t.Fatalf("provider error %d: %+v", i, a)
			}
		}
		if a := n.pay(t, "198.51.100.50", sandbox.CardVisa, "outage"); a.code != http.StatusCreated || a.status != "captured" {
			t.Errorf("after an outage: %+v, want captured", a)
		}

		// Legitimate customers, including one whose card was declined
		// twice, are unaffected.
		for i := range 20 {
			addr := "100.64.0." + strconv.Itoa(i+1)
			if i%5 == 0 {
				wantDeclined(t, n.pay(t, addr, sandbox.CardDeclined, "legit-"+strconv.Itoa(i)), "legitimate decline")
			}
			if a := n.pay(t, addr, sandbox.CardVisa, "legit-"+strconv.Itoa(i)); a.code != http.StatusCreated {
				t.Errorf("legitimate payment %d: %+v", i, a)
			}
		}

		// The block lasts Block (1h): then the card may be tried again.
		clock.Add(time.Hour)
		wantDeclined(t, n.pay(t, "203.0.113.9", sandbox.CardInsufficientFunds, "mallory"), "card_ip after its block")
	})
}

// TestCardTestingGuardAcrossNodes: two nodes on one database and one Redis
// block an attack spread over both as one node would.
func TestCardTestingGuardAcrossNodes(t *testing.T) {
	t.Parallel()
	redisURL := testenv.RedisURL(t)
	guardEngines(t, func(t *testing.T, st paygate.Store) {
		clock := testenv.NewClock(time.Now())
		counter := func() guard.Counter {
			c, closeClient, err := guard.Open(redisURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = closeClient() })
			return c
		}
		a := newGuardNode(t, st, counter(), clock, "")
		b := newGuardNode(t, st, counter(), clock, a.secret)
		enableGuard(t, st, a.merchantOf(t))

		// card_ip: declines on a, b, a; the next attempt, on b, is
		// blocked, and on a too.
		wantDeclined(t, a.pay(t, "203.0.113.20", sandbox.CardDeclined, "m"), "decline 1 on a")
		wantDeclined(t, b.pay(t, "203.0.113.20", sandbox.CardDeclined, "m"), "decline 2 on b")
		wantDeclined(t, a.pay(t, "203.0.113.20", sandbox.CardDeclined, "m"), "decline 3 on a")
		wantBlocked(t, b, b.pay(t, "203.0.113.20", sandbox.CardDeclined, "m"), "attempt 4 on b")
		wantBlocked(t, a, a.pay(t, "203.0.113.20", sandbox.CardDeclined, "m"), "attempt 5 on a")

		// ip_cards across nodes: three distinct cards, alternating.
		wantDeclined(t, b.pay(t, "203.0.113.21", sandbox.CardExpired, "n"), "card 1 on b")
		wantDeclined(t, a.pay(t, "203.0.113.21", sandbox.CardIncorrectCVC, "n"), "card 2 on a")
		wantDeclined(t, b.pay(t, "203.0.113.21", sandbox.CardInsufficientFunds, "n"), "card 3 on b")
		wantBlocked(t, a, a.pay(t, "203.0.113.21", sandbox.CardVisa, "n"), "card 4 on a")

		// A legitimate payment on either node goes through.
		if r := b.pay(t, "100.64.1.1", sandbox.CardVisa, "ok"); r.code != http.StatusCreated {
			t.Errorf("legitimate payment on b: %+v", r)
		}
		if got := blockedCount(t, a.mx, paygate.GuardCardIP) + blockedCount(t, b.mx, paygate.GuardCardIP); got != 2 {
			t.Errorf("blocked{card_ip} over both nodes = %v, want 2", got)
		}
	})
}

// TestGuardRoundTripsOnPostgres counts what the guard costs the database:
// nothing, once the store's listener of settings changes is up (the
// settings are then cached until a change is notified): a captured sandbox
// payment stays one round trip, as without the guard
// (TestPaymentRoundTripsOnPostgres), and a blocked attempt is one unit.
func TestGuardRoundTripsOnPostgres(t *testing.T) {
	t.Parallel()
	p := testenv.CountRoundTrips(t, testenv.PostgresSchema(t))
	st, err := postgres.Open(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	n := newGuardNode(t, st, guard.NewMemory(), paygate.SystemClock{}, "")
	enableGuard(t, st, n.merchantOf(t))

	if a := n.pay(t, "198.51.100.9", sandbox.CardVisa, "warm"); a.code != http.StatusCreated {
		t.Fatalf("warm: %+v", a)
	}
	for i := range 3 {
		wantDeclined(t, n.pay(t, "198.51.100.9", sandbox.CardDeclined, "warm"), "warm decline "+strconv.Itoa(i))
	}
	// Wait for the settings to be served from the cache: its listener
	// connects in the background.
	merchant := n.merchantOf(t).MerchantID
	for i := 0; ; i++ {
		p.Start()
		if _, err := st.GuardSettings(t.Context(), merchant, paygate.ModeTest); err != nil {
			t.Fatal(err)
		}
		if p.Stop() == 0 {
			break
		}
		if i == 3000 {
			t.Fatal("the guard's settings are still read from the database after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Start()
	if a := n.pay(t, "198.51.100.10", sandbox.CardVisa, "counted"); a.code != http.StatusCreated {
		t.Fatalf("payment: %+v", a)
	}
	if got := p.Stop(); got != 1 {
		t.Errorf("a captured payment with the guard on: %d round trips, want 1", got)
	}
	p.Start()
	a := n.pay(t, "198.51.100.9", sandbox.CardDeclined, "warm")
	if got := p.Stop(); got != 1 {
		t.Errorf("a blocked attempt: %d round trips, want 1", got)
	}
	wantBlocked(t, n, a, "counted block")
}
