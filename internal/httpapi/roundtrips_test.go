package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/store/postgres"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
)

// TestPaymentRoundTripsOnPostgres counts, on the wire, the round trips a
// test-mode payment makes to PostgreSQL through the real handler and
// wiring (decisions.md section 22). A sandbox answers at once, before
// anything is written, so a payment is one round trip: the key's
// authentication (known on this node, so the unit verifies it) with the
// reservation, the customer, the payment in its outcome, its events, its
// answer and the sandbox's ledger entry, in one unit. So is a 3-D Secure
// payment (its challenge in the unit) and one that fails over from
// sandbox-eu to sandbox-global. Card 4000000000000705 is stored before its
// charge, which writes the sandbox's entry itself: two round trips or
// more. A replay and a GET are one each. A proxy between the store and the
// database counts them (testenv.RoundTrips).
func TestPaymentRoundTripsOnPostgres(t *testing.T) {
	t.Parallel()
	p := testenv.CountRoundTrips(t, testenv.PostgresSchema(t))
	st, err := postgres.Open(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := wireServer(t, st)

	// The first payment and GET prepare the connection's statements.
	warm := s.create(t, 1, "warm-"+id.New())
	if w := s.do(http.MethodGet, "/v1/payments/"+warm, s.secret, "", nil); w.Code != http.StatusOK {
		t.Fatalf("get: %d %s", w.Code, w.Body.String())
	}
	key := "counted-" + id.New()
	p.Start()
	paymentID := s.create(t, 2, key)
	if got := p.Stop(); got != 1 {
		t.Errorf("a captured test-mode payment: %d round trips, want 1", got)
	}
	p.Start()
	if w := s.do(http.MethodPost, "/v1/payments", s.secret, key, benchBody(2)); w.Code != http.StatusCreated {
		t.Fatalf("replay: %d %s", w.Code, w.Body.String())
	}
	if got := p.Stop(); got != 1 {
		t.Errorf("a replay: %d round trips, want 1", got)
	}
	p.Start()
	if w := s.do(http.MethodGet, "/v1/payments/"+paymentID, s.secret, "", nil); w.Code != http.StatusOK {
		t.Fatalf("get: %d %s", w.Code, w.Body.String())
	}
	if got := p.Stop(); got != 1 {
		t.Errorf("a GET: %d round trips, want 1", got)
	}

	for _, c := range []struct {
		name, number string
		code         int
		status       string
		atLeast      int // round trips
		atMost       int
	}{
		{"ThreeDS", sandbox.Card3DS, http.StatusCreated, "pending_3ds", 1, 1},
		{"Failover", sandbox.CardFailover, http.StatusCreated, "captured", 1, 1},
		{"Declined", sandbox.CardDeclined, http.StatusBadRequest, "failed", 1, 1},
		{"Timeout", sandbox.CardTimeout, http.StatusAccepted, "created", 2, 10},
	} {
		// Each card once unmeasured, to prepare its statements.
		if w := s.do(http.MethodPost, "/v1/payments", s.secret, "warm-"+id.New(), cardBody(3, c.number)); w.Code != c.code {
			t.Fatalf("%s: %d %s", c.name, w.Code, w.Body.String())
		}
		p.Start()
		w := s.do(http.MethodPost, "/v1/payments", s.secret, "counted-"+id.New(), cardBody(4, c.number))
		got := p.Stop()
		if w.Code != c.code {
			t.Fatalf("%s: %d %s", c.name, w.Code, w.Body.String())
		}
		t.Logf("%s: %d round trips", c.name, got)
		if got < c.atLeast || got > c.atMost {
			t.Errorf("%s: %d round trips, want %d to %d", c.name, got, c.atLeast, c.atMost)
		}
		if c.code == http.StatusBadRequest {
			continue
		}
		var out struct {
			Data struct{ Status, Provider string } `json:"data"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Data.Status != c.status {
			t.Errorf("%s: answer %s, want status %s", c.name, w.Body.String(), c.status)
		}
		if c.name == "Failover" && out.Data.Provider != sandbox.Global {
			t.Errorf("failover: captured by %q, want %s", out.Data.Provider, sandbox.Global)
		}
	}
}

// cardBody is benchBody with another card number.
func cardBody(n int64, number string) []byte {
	return bytes.Replace(benchBody(n), []byte(sandbox.CardVisa), []byte(number), 1)
}

// TestOneKeyConcurrentlyOnePayment: 20 concurrent requests with one
// idempotency key and one body, on each engine, whether the API key is new
// to the node (its record read with it) or known (the unit verifies it):
// one payment, one 201 that is not a replay, and every other request a
// replay of that answer, byte for byte, or a 409. On PostgreSQL the later
// units wait on the key's unique index for the first, then find its
// answer.
func TestOneKeyConcurrentlyOnePayment(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			s := newBenchServer(t, engine)
			for _, r := range []struct {
				name string
				ref  int64
			}{{"new-api-key", 1}, {"known-api-key", 2}} {
				const n = 20
				round, key, ref := r.name, "race-"+id.New(), r.ref
				codes := make([]int, n)
				bodies := make([][]byte, n)
				replayed := make([]bool, n)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range n {
					wg.Go(func() {
						<-start
						w := s.do(http.MethodPost, "/v1/payments", s.secret, key, benchBody(ref))
						codes[i], bodies[i], replayed[i] = w.Code, w.Body.Bytes(), w.Header().Get("Idempotent-Replayed") == "true"
					})
				}
				close(start)
				wg.Wait()
				var first []byte
				for i := range n {
					if codes[i] == http.StatusCreated && !replayed[i] {
						if first != nil {
							t.Fatalf("%s: two requests with one key created a payment", round)
						}
						first = bodies[i]
					}
				}
				if first == nil {
					t.Fatalf("%s: no request created the payment: %v", round, codes)
				}
				conflicts := 0
				for i := range n {
					if codes[i] == http.StatusConflict {
						conflicts++
					}
					switch {
					case codes[i] == http.StatusCreated && !bytes.Equal(bodies[i], first):
						t.Errorf("%s: request %d answered %s, want the first answer %s", round, i, bodies[i], first)
					case codes[i] == http.StatusConflict && !bytes.Contains(bodies[i], []byte("DUPLICATE_REQUEST")):
						t.Errorf("%s: request %d: 409 %s", round, i, bodies[i])
					case codes[i] != http.StatusCreated && codes[i] != http.StatusConflict:
						t.Errorf("%s: request %d: %d %s", round, i, codes[i], bodies[i])
					}
				}
				t.Logf("%s: one payment, %d replays, %d conflicts", round, n-1-conflicts, conflicts)
				k, err := paygate.OneAPIKey(s.store.APIKeys(t.Context(), paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
				if err != nil {
					t.Fatal(err)
				}
				ps, err := s.store.ListPayments(t.Context(), paygate.PaymentQuery{
					MerchantID: k.MerchantID, Mode: paygate.ModeTest, MerchantRef: "order-" + strconv.FormatInt(ref, 10),
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(ps) != 1 {
					t.Errorf("%s: %d payments stored, want 1", round, len(ps))
				}
			}
		})
	}
}

// TestBreakerOpenAndFailoverInOneUnit: with sandbox-eu down (every charge
// unavailable, a simulated outage), EUR payments fail over to
// sandbox-global, first through the open-circuit breaker's failures and
// then with the breaker open (sandbox-eu no longer called): every payment
// is captured by sandbox-global in one unit with sandbox-global's ledger
// entry, and sandbox-eu has none.
func TestBreakerOpenAndFailoverInOneUnit(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			cfgPath := filepath.Join(t.TempDir(), "providers.yaml")
			config := `
providers:
  - {id: sandbox-eu, kind: sandbox, currencies: [EUR], sandbox: {failureRate: 1}}
  - {id: sandbox-global, kind: sandbox}
routes:
  test:
    EUR: [sandbox-eu, sandbox-global]
    default: [sandbox-global]
`
			if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			s := newBenchServer(t, engine)
			routing, err := provider.LoadConfig(cfgPath, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			router, err := routing.Build(provider.BuildOptions{Store: s.store})
			if err != nil {
				t.Fatal(err)
			}
			s = rewire(t, s, router)
			for i := range provider.DefaultBreakerFailures + 3 {
				w := s.do(http.MethodPost, "/v1/payments", s.secret, "eu-down-"+id.New(), benchBody(int64(100+i)))
				var out struct {
					Data struct{ ID, Status, Provider string } `json:"data"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != http.StatusCreated ||
					out.Data.Status != "captured" || out.Data.Provider != sandbox.Global {
					t.Fatalf("payment %d: %d %s, want captured by %s", i, w.Code, w.Body.String(), sandbox.Global)
				}
				if _, err := s.store.SandboxChargeByPayment(t.Context(), sandbox.Global, out.Data.ID); err != nil {
					t.Errorf("payment %d: %s's ledger entry: %v", i, sandbox.Global, err)
				}
				if _, err := s.store.SandboxChargeByPayment(t.Context(), sandbox.EU, out.Data.ID); !paygate.IsNotFound(err) {
					t.Errorf("payment %d: %s's ledger entry read %v, want none", i, sandbox.EU, err)
				}
			}
			var open bool
			for _, st := range router.Statuses() {
				if st.Mode == paygate.ModeTest && st.ID == sandbox.EU {
					open = st.Breaker == paygate.BreakerOpen
				}
			}
			if !open {
				t.Errorf("the breaker of %s is not open after its failures", sandbox.EU)
			}
		})
	}
}

// rewire returns s with a payment service on the router instead of the
// built-in routes.
func rewire(t *testing.T, s benchServer, router paygate.Router) benchServer {
	t.Helper()
	return wireServer(t, s.store, func(c *httpapi.Config) {
		vlt, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize))
		if err != nil {
			t.Fatal(err)
		}
		c.Payments = payment.New(payment.Config{Store: s.store, Router: router, Encoder: httpapi.Encoder{}, Vault: vlt})
	})
}
