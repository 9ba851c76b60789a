package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/auth"
	"github.com/paygate/paygate/internal/httpapi"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/payment"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/connector"
	"github.com/paygate/paygate/internal/provider/connectors"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/ratelimit"
	"github.com/paygate/paygate/internal/store/baseline"
	"github.com/paygate/paygate/internal/store/postgres"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
	"github.com/paygate/paygate/internal/vault"
)

// These benchmarks drive the real handler in process, wired as serve wires
// it (store, sandbox providers keeping their ledger in the store, webhook
// wake-ups, JSON logs at info), without the network: the inner loop for
// profiling the gateway's own cost per request.
//
//	go test ./internal/httpapi/ -run '^$' -bench 'Server/sqlite/create' -benchmem -cpuprofile cpu.out
//
// RunParallel runs 32 clients (GOMAXPROCS × parallelism), as the load tool
// does.

const benchClients = 32

// benchServer is a wired handler and a test-mode secret key of its
// merchant.
type benchServer struct {
	handler http.Handler
	secret  string
	store   paygate.Store
}

// newBenchServer wires the handler on a fresh store of the engine; wrap,
// when given, wraps the store everything uses.
func newBenchServer(b testing.TB, engine string, wrap ...func(paygate.Store) paygate.Store) benchServer {
	b.Helper()
	ctx := b.Context()
	var st paygate.Store
	switch engine {
	case "sqlite":
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "paygate.db"))
		if err != nil {
			b.Fatalf("open sqlite: %v", err)
		}
		st = s
	case "postgres":
		s, err := postgres.Open(ctx, testenv.PostgresSchema(b)+"&pool_max_conns="+strconv.Itoa(benchClients))
		if err != nil {
			b.Fatalf("open postgres: %v", err)
		}
		st = s
	}
	b.Cleanup(func() { _ = st.Close() })
	for _, w := range wrap {
		st = w(st)
	}

	return wireServer(b, st)
}

// wireServer wires the handler as serve does on the store, with one
// merchant and its test secret key; mutate changes the configuration first
// (limits, trusted proxies, logger). The rate limits are out of reach
// unless mutate sets them.
// The bench builds its routes as serve does, from the registered connectors.
func init() { provider.Register(connectors.All...) }

func wireServer(b testing.TB, st paygate.Store, mutate ...func(*httpapi.Config)) benchServer {
	b.Helper()
	ctx := b.Context()
	now := time.Now()
	m := paygate.Merchant{ID: id.New(), Name: "Bench", CreatedAt: paygate.Normalize(now)}
	secret, key, err := auth.NewKey(id.New(), m.ID, paygate.ModeTest, paygate.KeySecret, now)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{m, key}}); err != nil {
		b.Fatalf("create merchant: %v", err)
	}
	routing, err := provider.LoadConfig("", func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	router, err := routing.Build(provider.BuildOptions{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	vlt, err := vault.New(bytes.Repeat([]byte{7}, vault.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	payments := payment.New(payment.Config{
		Store:   st,
		Router:  router,
		Encoder: httpapi.Encoder{},
		Logger:  log,
		Vault:   vlt,
	})
	cfg := httpapi.Config{
		Store: st, Payments: payments, Auth: &auth.Authenticator{Store: st},
		Limiter: ratelimit.NewMemory(), Logger: log,
		RateLimitTest: 1 << 30, RateLimitLive: 1 << 30, RateLimitUnauthenticated: 1 << 30,
		Endpoints: provider.Endpoints(connector.Services{Payments: payments, Logger: log}),
	}
	for _, f := range mutate {
		f(&cfg)
	}
	return benchServer{handler: httpapi.New(cfg), secret: secret, store: st}
}

// benchBody is a realistic payment request: card, billing, metadata.
func benchBody(n int64) []byte {
	return []byte(`{"amount":"42.00","currency":"EUR","customerId":"customer-` + strconv.FormatInt(n%500, 10) +
		`","card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","cvv":"123","holderName":"Ada Lovelace"},` +
		`"billing":{"firstName":"Ada","lastName":"Lovelace","email":"ada@example.com","phone":"+441632960001",` +
		`"country":"GB","address":"12 Analytical Row","city":"London","postalCode":"N1 9GU"},` +
		`"merchantRef":"order-` + strconv.FormatInt(n, 10) + `","metadata":{"orderId":"order-` + strconv.FormatInt(n, 10) +
		`","channel":"web","cart":"3 items"}}`)
}

func (s benchServer) do(method, path, key, idemKey string, body []byte) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequestWithContext(context.Background(), method, path, rd)
	req.RemoteAddr = "127.0.0.1:50000"
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, req)
	return w
}

// create makes one payment and returns its id.
func (s benchServer) create(b testing.TB, n int64, idemKey string) string {
	w := s.do(http.MethodPost, "/v1/payments", s.secret, idemKey, benchBody(n))
	if w.Code != http.StatusCreated {
		b.Fatalf("create payment: %d %s", w.Code, w.Body.String())
	}
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Data.ID == "" {
		b.Fatalf("create payment answer %s: %v", w.Body.String(), err)
	}
	return out.Data.ID
}

func BenchmarkServer(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			if engine == "postgres" {
				testenv.PostgresSchema(b) // skips (or fails when required) without PostgreSQL
			}
			s := newBenchServer(b, engine)
			var seq atomic.Int64
			b.Run("create", func(b *testing.B) {
				b.SetParallelism(max(1, benchClients/gomaxprocs()))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						n := seq.Add(1)
						w := s.do(http.MethodPost, "/v1/payments", s.secret, fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), n), benchBody(n))
						if w.Code != http.StatusCreated {
							b.Errorf("create payment: %d %s", w.Code, w.Body.String())
							return
						}
					}
				})
			})
			idemKey := "bench-replay-" + id.New()
			paymentID := s.create(b, seq.Add(1), idemKey)
			replayBody := benchBody(seq.Load())
			b.Run("replay", func(b *testing.B) {
				b.SetParallelism(max(1, benchClients/gomaxprocs()))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if w := s.do(http.MethodPost, "/v1/payments", s.secret, idemKey, replayBody); w.Code != http.StatusCreated {
							b.Errorf("replay: %d %s", w.Code, w.Body.String())
							return
						}
					}
				})
			})
			b.Run("get", func(b *testing.B) {
				b.SetParallelism(max(1, benchClients/gomaxprocs()))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if w := s.do(http.MethodGet, "/v1/payments/"+paymentID, s.secret, "", nil); w.Code != http.StatusOK {
							b.Errorf("get: %d %s", w.Code, w.Body.String())
							return
						}
					}
				})
			})
			// A well-formed key that does not exist: the store is asked.
			wrong := s.secret[:len(s.secret)-1] + map[bool]string{true: "b", false: "a"}[s.secret[len(s.secret)-1] == 'a']
			b.Run("unauthorized", func(b *testing.B) {
				b.SetParallelism(max(1, benchClients/gomaxprocs()))
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if w := s.do(http.MethodGet, "/v1/payments/"+paymentID, wrong, "", nil); w.Code != http.StatusUnauthorized {
							b.Errorf("unauthorized: %d %s", w.Code, w.Body.String())
							return
						}
					}
				})
			})
			if bs, ok := s.store.(baseline.Store); ok {
				m, err := merchantOf(b, s)
				if err != nil {
					b.Fatal(err)
				}
				b.Run("baseline", func(b *testing.B) {
					b.SetParallelism(max(1, benchClients/gomaxprocs()))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := bs.BaselinePayment(context.Background(), m, paygate.ModeTest, seq.Add(1)); err != nil {
								b.Errorf("baseline: %v", err)
								return
							}
						}
					})
				})
				// The payment's round trips alone: the store calls a
				// captured sandbox payment makes with a key this node
				// knows, in their order and transactions (one unit: the
				// key's verification with the reservation, the payment
				// inserted with its outcome, its event and answer, and
				// the provider's ledger entry), without HTTP, decoding
				// or the payment service. Against baseline it
				// prices the transaction structure; against create, the
				// gateway's own code.
				key, err := paygate.OneAPIKey(s.store.APIKeys(b.Context(), paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
				if err != nil {
					b.Fatal(err)
				}
				b.Run("roundtrips", func(b *testing.B) {
					b.SetParallelism(max(1, benchClients/gomaxprocs()))
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := storePayment(b.Context(), s.store, key, seq.Add(1)); err != nil {
								b.Errorf("round trips: %v", err)
								return
							}
						}
					})
				})
			}
		})
	}
}

// storePayment makes the store calls of one captured sandbox payment with
// a known key, in the order and transactions the gateway makes them: the
// sandbox answered before anything was written, so the payment is one
// unit (decisions.md section 22).
func storePayment(ctx context.Context, st paygate.Store, key paygate.APIKey, n int64) error {
	w := baseline.NewWrites(key.MerchantID, key.Mode, n, id.New(), id.New(), id.New(), time.Now())
	w.Reservation.APIKeyID = key.ID
	np := w.Payment
	np.Reservation = &w.Reservation
	np.Route = []paygate.Provider{sandbox.New("sandbox-eu", nil)}
	p := &np.Payment
	p.Status, p.ProviderID, p.ProviderRef = w.Transition.To, w.Transition.ProviderID, w.Transition.ProviderRef
	p.AmountCaptured = *w.Transition.AmountCaptured
	entry := paygate.SandboxCharge{ // the sandbox's, committed with the outcome
		ProviderID: p.ProviderID, PaymentID: p.ID, Mode: p.Mode, Amount: p.Amount,
		Outcome: paygate.SandboxCaptured, ProviderRef: p.ProviderRef,
		ReadyAt: p.CreatedAt, CreatedAt: p.CreatedAt,
	}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{np, w.Event, w.Done, entry}}); err != nil {
		return fmt.Errorf("payment: %w", err)
	}
	return nil
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }

// merchantOf returns the merchant of the server's key.
func merchantOf(b *testing.B, s benchServer) (string, error) {
	k, err := paygate.OneAPIKey(s.store.APIKeys(b.Context(), paygate.APIKeyQuery{Hash: auth.Hash(s.secret)}))
	if err != nil {
		return "", fmt.Errorf("look up the bench key: %w", err)
	}
	return k.MerchantID, nil
}
