package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store"
)

// writeConfig writes an operator configuration file and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "paygate.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// providersTable is what `paygate providers --json` prints.
type providersTable struct {
	Config string `json:"config"`
	Modes  []struct {
		Mode   string `json:"mode"`
		Routes []struct {
			Currency  string   `json:"currency"`
			Providers []string `json:"providers"`
			Available []string `json:"available"`
		} `json:"routes"`
		Providers []struct {
			ID         string   `json:"id"`
			Kind       string   `json:"kind"`
			Currencies []string `json:"currencies"`
			Timeout    string   `json:"timeout"`
			State      string   `json:"state"`
			Drained    bool     `json:"drained"`
			ChangedAt  *string  `json:"changedAt"`
			Breakers   []struct {
				Node  string `json:"node"`
				State string `json:"state"`
				Since string `json:"since"`
			} `json:"breakers"`
		} `json:"providers"`
	} `json:"modes"`
}

// route returns a mode's route of a currency ("default" for the default).
func (p providersTable) route(mode, currency string) (configured, available []string, ok bool) {
	for _, m := range p.Modes {
		if m.Mode != mode {
			continue
		}
		for _, r := range m.Routes {
			if r.Currency == currency {
				return r.Providers, r.Available, true
			}
		}
	}
	return nil, nil, false
}

// state returns a provider's state and breaker states in a mode.
func (p providersTable) state(mode, id string) (state string, breakers []string) {
	for _, m := range p.Modes {
		if m.Mode != mode {
			continue
		}
		for _, pr := range m.Providers {
			if pr.ID == id {
				for _, b := range pr.Breakers {
					breakers = append(breakers, b.State)
				}
				return pr.State, breakers
			}
		}
	}
	return "", nil
}

func providersJSON(t *testing.T, args ...string) providersTable {
	t.Helper()
	var out providersTable
	mustCLI(t, &out, append([]string{"providers", "--json"}, args...)...)
	return out
}

// payEUR makes a captured EUR payment and returns who processed it.
func payEUR(t *testing.T, g *gateway, key string) string {
	t.Helper()
	r := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "10.00", "EUR"))
	expect(t, r, http.StatusCreated)
	p, _ := r.Data()["provider"].(string)
	return p
}

// TestConfigErrorsNameTheLine: a bad configuration stops serve (and the
// providers command) with the file and line of the mistake.
func TestConfigErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, content, want string
	}{
		{"UnknownProviderInRoute", "providers:\n  - id: eu\n    kind: sandbox\nroutes:\n  test:\n    EUR: [eu, sandbox-xx]\n",
			`:6: routes.test.EUR: unknown provider "sandbox-xx"`},
		{"UnknownKey", "providers:\n  - id: eu\n    kind: sandbox\n    latncy: 1s\n", `:4: unknown key "latncy" in a provider`},
		{"CredentialNotSet", "providers:\n  - id: eu\n    kind: sandbox\n    credentials:\n      apiKey: PAYGATE_E2E_UNSET_KEY\nroutes:\n  test:\n    default: [eu]\n",
			":5: credential \"apiKey\": environment variable PAYGATE_E2E_UNSET_KEY is not set"},
		{"Syntax", "providers:\n  - id: eu\n    kind: [sandbox\n  - id: x\n", ":2: did not find expected ',' or ']'"},
	}
	db := "sqlite:" + filepath.Join(t.TempDir(), "paygate.db")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, c.content)
			for _, args := range [][]string{
				{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--config", path},
				{"providers", "--database-url", db, "--config", path},
			} {
				_, stderr, code := cli(t, nil, args...)
				if code != 1 || !strings.Contains(stderr, path+c.want) {
					t.Fatalf("%s: exit %d, stderr %q; want 1 and %q", args[0], code, stderr, path+c.want)
				}
				if n := strings.Count(strings.TrimSpace(lastLine(stderr)), "\n"); n != 0 {
					t.Fatalf("not one line: %q", stderr)
				}
			}
		})
	}
	// The environment names the file too.
	path := writeConfig(t, cases[0].content)
	_, stderr, code := cli(t, []string{"PAYGATE_CONFIG=" + path}, "providers", "--database-url", db)
	if code != 1 || !strings.Contains(stderr, path+cases[0].want) {
		t.Fatalf("PAYGATE_CONFIG: exit %d, %q", code, stderr)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// TestProvidersCommand: the effective table and each provider's state, with
// and without a file, while serve runs.
func TestProvidersCommand(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		builtin := providersJSON(t, "--database-url", db)
		if builtin.Config != "built-in" || len(builtin.Modes) != 2 {
			t.Fatalf("built-in table: %+v", builtin)
		}
		for cur, want := range map[string][]string{
			"EUR": {"sandbox-eu", "sandbox-global"}, "USD": {"sandbox-us", "sandbox-global"},
			"JPY": {"sandbox-apac", "sandbox-global"}, "default": {"sandbox-global"},
		} {
			if got, avail, _ := builtin.route("test", cur); !slices.Equal(got, want) || !slices.Equal(avail, want) {
				t.Fatalf("test %s: %v / %v, want %v", cur, got, avail, want)
			}
		}
		if got, _, _ := builtin.route("live", "default"); len(got) != 0 {
			t.Fatalf("live default route: %v", got)
		}
		if st, _ := builtin.state("test", "sandbox-eu"); st != "available" {
			t.Fatalf("sandbox-eu: %s", st)
		}

		cfg := writeConfig(t, `
providers:
  - id: eu-fast
    kind: sandbox
    currencies: [EUR]
    timeout: 2s
  - id: world
    kind: sandbox
routes:
  test:
    EUR: [eu-fast, world]
    default: [world]
`)
		m := createMerchant(t, db, "Providers Ltd")
		g := startGateway(t, db, "--config", cfg)
		if by := payEUR(t, g, m.TestSecretKey); by != "eu-fast" {
			t.Fatalf("EUR captured by %q", by)
		}
		tab := providersJSON(t, "--database-url", db, "--config", cfg)
		if tab.Config != cfg {
			t.Fatalf("config %q", tab.Config)
		}
		if got, _, _ := tab.route("test", "EUR"); !slices.Equal(got, []string{"eu-fast", "world"}) {
			t.Fatalf("EUR route %v", got)
		}
		if _, _, ok := tab.route("test", "USD"); ok {
			t.Fatal("USD has a route of its own")
		}
		// The running node reports its breakers.
		st, breakers := tab.state("test", "eu-fast")
		if st != "available" || !slices.Equal(breakers, []string{"closed"}) {
			t.Fatalf("eu-fast: %s %v", st, breakers)
		}

		out, stderr, code := cli(t, nil, "providers", "drain", "--provider", "eu-fast", "--json", "--database-url", db, "--config", cfg)
		var drained struct {
			Provider  string `json:"provider"`
			Drained   bool   `json:"drained"`
			ChangedAt string `json:"changedAt"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &drained) != nil || drained.Provider != "eu-fast" || !drained.Drained ||
			strings.Count(out, "\n") != 1 {
			t.Fatalf("drain: exit %d, %q, %q", code, out, stderr)
		}
		tab = providersJSON(t, "--database-url", db, "--config", cfg)
		if _, avail, _ := tab.route("test", "EUR"); !slices.Equal(avail, []string{"world"}) {
			t.Fatalf("EUR available while drained: %v", avail)
		}
		if st, _ := tab.state("test", "eu-fast"); st != "drained" {
			t.Fatalf("state %s", st)
		}
		// An id the table does not have is refused; so is a missing one.
		if _, stderr, code := cli(t, nil, "providers", "drain", "--provider", "sandbox-eu", "--database-url", db, "--config", cfg); code != 1 || !strings.Contains(stderr, `no provider "sandbox-eu"`) {
			t.Fatalf("unknown provider: exit %d, %q", code, stderr)
		}
		if _, _, code := cli(t, nil, "providers", "restore", "--database-url", db); code != 2 {
			t.Fatalf("restore without --provider: exit %d", code)
		}
	})
}

// TestDrainAndRestoreWhileServing: an operator drains a provider with the
// command line while serve runs; within a second payments go to the next
// provider, and a restore brings it back as fast. The drained provider
// still refunds what it captured.
func TestDrainAndRestoreWhileServing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db, m, g := startWithMerchant(t, e, "Drain Ltd", "--rate-limit-test", "1000")
		key := m.TestSecretKey
		first := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4242424242424242", "20.00", "EUR"))
		expect(t, first, http.StatusCreated)
		if first.Data()["provider"] != "sandbox-eu" {
			t.Fatalf("before the drain: %s", first.Raw)
		}

		mustCLI(t, nil, "providers", "drain", "--provider", "sandbox-eu", "--database-url", db)
		drainedAt := time.Now()
		eventually(t, time.Second, "payments to leave the drained sandbox-eu", func() bool {
			return payEUR(t, g, key) == "sandbox-global"
		})
		t.Logf("drain in force after %s", time.Since(drainedAt))
		for range 3 {
			if by := payEUR(t, g, key); by != "sandbox-global" {
				t.Fatalf("a payment went to %s while sandbox-eu is drained", by)
			}
		}
		// 0259 heads to the drained provider no more: the next one captures.
		r := g.call(http.MethodPost, "/v1/payments", key, paymentBody("4000000000000259", "3.00", "EUR"))
		expect(t, r, http.StatusCreated)
		if r.Data()["provider"] != "sandbox-global" || r.Data()["status"] != "captured" {
			t.Fatalf("0259 while drained: %s", r.Raw)
		}
		// The payment sandbox-eu captured is refunded by sandbox-eu.
		id := first.Data()["id"].(string)
		rf := g.call(http.MethodPost, "/v1/refunds", key, map[string]any{"transactionId": id, "amount": "5.00", "currency": "EUR"})
		expect(t, rf, http.StatusCreated)
		refundID := rf.Data()["id"].(string)
		eventually(t, 10*time.Second, "the refund through the drained provider", func() bool {
			got := g.call(http.MethodGet, "/v1/refunds/"+refundID, key, nil)
			return got.Data()["status"] == "succeeded"
		})

		mustCLI(t, nil, "providers", "restore", "--provider", "sandbox-eu", "--database-url", db)
		eventually(t, time.Second, "payments to return to sandbox-eu", func() bool {
			return payEUR(t, g, key) == "sandbox-eu"
		})
	})
}

// TestBreakerMovesTraffic: a provider that keeps failing (the sandbox's
// failure rate) is taken out of its routes by its breaker; payments go on
// being captured by the next provider, and the node reports the open
// breaker.
func TestBreakerMovesTraffic(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		cfg := writeConfig(t, `
providers:
  - id: sandbox-eu
    kind: sandbox
    currencies: [EUR]
    sandbox: {failureRate: 1}
    breaker: {failures: 3, openFor: 1h}
  - id: sandbox-global
    kind: sandbox
routes:
  test:
    EUR: [sandbox-eu, sandbox-global]
    default: [sandbox-global]
`)
		m := createMerchant(t, db, "Breaker Ltd")
		g := startGateway(t, db, "--config", cfg)
		for i := range 6 {
			if by := payEUR(t, g, m.TestSecretKey); by != "sandbox-global" {
				t.Fatalf("payment %d captured by %q", i, by)
			}
		}
		var tab providersTable
		eventually(t, 5*time.Second, "the open breaker in the providers table", func() bool {
			tab = providersJSON(t, "--database-url", db, "--config", cfg)
			st, _ := tab.state("test", "sandbox-eu")
			return st == "open"
		})
		if _, avail, _ := tab.route("test", "EUR"); !slices.Equal(avail, []string{"sandbox-global"}) {
			t.Fatalf("EUR available: %v", avail)
		}
		// Only three attempts reached sandbox-eu: the log names each failover.
		if n := strings.Count(g.Logs(), `"provider":"sandbox-eu","kind":"unavailable"`); n != 3 {
			t.Fatalf("%d failed attempts at sandbox-eu, want 3 (the breaker opens after 3)\n%s", n, g.Logs())
		}
		if !strings.Contains(g.Logs(), "provider circuit breaker changed state") {
			t.Fatal("the breaker change is not logged")
		}
	})
}

// TestNoFailoverAfterTimeout: a provider that does not answer in time may
// have charged the card: the payment stays with it (202, created), never
// goes to the next provider, and recovery finishes it from the provider's
// own answer.
func TestNoFailoverAfterTimeout(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.url(t)
		cfg := writeConfig(t, `
providers:
  - id: sandbox-eu
    kind: sandbox
    currencies: [EUR]
    timeout: 1s
    sandbox: {latency: 3s}
  - id: sandbox-global
    kind: sandbox
routes:
  test:
    EUR: [sandbox-eu, sandbox-global]
    default: [sandbox-global]
`)
		m := createMerchant(t, db, "Slow Ltd")
		g := startGateway(t, db, "--config", cfg, "--recovery-interval", "1s", "--rate-limit-test", "100000")
		key := m.TestSecretKey
		body := paymentBody("4242424242424242", "42.00", "EUR")
		body["merchantRef"] = "slow-1"
		start := time.Now()
		r := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "slow-1")
		expect(t, r, http.StatusAccepted)
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Fatalf("answered after %s; the provider timeout is 1s", d)
		}
		if r.Data()["status"] != "created" || r.Data()["provider"] != "sandbox-eu" {
			t.Fatalf("202 body: %s", r.Raw)
		}
		id := r.Data()["id"].(string)
		// The 202 is the key's answer (decisions §15).
		retry := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "slow-1")
		expect(t, retry, http.StatusAccepted)
		if !bytes.Equal(retry.Raw, r.Raw) || retry.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry before recovery: %s", retry.Raw)
		}
		eventually(t, 10*time.Second, "recovery to capture the payment", func() bool {
			return g.call(http.MethodGet, "/v1/payments/"+id, key, nil).Data()["status"] == "captured"
		})
		p := g.call(http.MethodGet, "/v1/payments/"+id, key, nil).Data()
		if p["providerId"] != "sandbox-eu" {
			t.Fatalf("captured by %v, want sandbox-eu (no failover after a timeout)", p["providerId"])
		}
		final := g.call(http.MethodPost, "/v1/payments", key, body, "Idempotency-Key", "slow-1")
		expect(t, final, http.StatusAccepted)
		if !bytes.Equal(final.Raw, r.Raw) || final.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after recovery: %s", final.Raw)
		}
		evs := events(t, db, m.MerchantID, paygate.ModeTest)
		if n := countEvents(evs, paygate.EventPaymentCaptured, id); n != 1 || len(paymentEvents(evs, id)) != 1 {
			t.Fatalf("events of the payment: %d captured, %d in all", n, len(paymentEvents(evs, id)))
		}
		// sandbox-global never saw it.
		if ledgerOf(t, db, "sandbox-global", id) {
			t.Fatal("the payment was sent to sandbox-global too")
		}
	})
}

// paymentEvents returns the events of one payment.
func paymentEvents(evs []paygate.Event, paymentID string) []paygate.Event {
	var out []paygate.Event
	for _, e := range evs {
		if e.PaymentID == paymentID && e.RefundID == "" {
			out = append(out, e)
		}
	}
	return out
}

// ledgerOf reports whether the sandbox's ledger has the payment.
func ledgerOf(t *testing.T, dbURL, providerID, paymentID string) bool {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.SandboxChargeByPayment(ctx, providerID, paymentID)
	if paygate.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}
