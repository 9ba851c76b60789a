package stripe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// stripe-mock (github.com/stripe/stripe-mock, installed with
// `go install github.com/stripe/stripe-mock@v0.203.0`) validates every
// request against Stripe's OpenAPI description. TestMain starts it on a free
// loopback port when the binary is found (PATH, $GOBIN, $GOPATH/bin,
// ~/go/bin, or PAYGATE_TEST_STRIPE_MOCK).
var (
	mockURL       string
	mockErr       error
	stripeMockLog testenv.Buffer // stripe-mock's output, for error messages
)

func TestMain(m *testing.M) {
	var stop func()
	mockURL, stop, mockErr = startStripeMock()
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

func findStripeMock() (string, error) {
	if p := os.Getenv("PAYGATE_TEST_STRIPE_MOCK"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("GOPATH"); d != "" {
		dirs = append(dirs, filepath.Join(d, "bin"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "stripe-mock")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("stripe-mock is not installed (go install github.com/stripe/stripe-mock@v0.203.0)")
}

func startStripeMock() (string, func(), error) {
	bin, err := findStripeMock()
	if err != nil {
		return "", nil, err
	}
	// Two free loopback ports: stripe-mock also listens for HTTPS, on
	// [::]:12112 unless told otherwise, which would clash between runs.
	var addrs [2]string
	var ls [2]net.Listener
	for i := range ls {
		if ls[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return "", nil, err
		}
		addrs[i] = ls[i].Addr().String()
	}
	for _, l := range ls {
		l.Close()
	}
	addr := addrs[0]
	cmd := exec.Command(bin, "-http-addr", addrs[0], "-https-addr", addrs[1])
	cmd.Stdout, cmd.Stderr = &stripeMockLog, &stripeMockLog
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start stripe-mock: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return "http://" + addr, stop, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("stripe-mock did not listen on %s: %s", addr, stripeMockLog.String())
}

func requireStripeMock(t *testing.T) string {
	t.Helper()
	if mockURL == "" {
		if os.Getenv("PAYGATE_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("stripe-mock is required (PAYGATE_TEST_REQUIRE_SERVICES=1): %v", mockErr)
		}
		t.Skipf("skipping: %v", mockErr)
	}
	return mockURL
}

// recorder records the status of every answer.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.seen = append(r.seen, fmt.Sprintf("%d %s %s", res.StatusCode, req.Method, req.URL.Path))
	r.mu.Unlock()
	return res, nil
}

// TestStripeMockAcceptsEveryRequest sends every kind of request the
// connector makes to stripe-mock, which answers 400 to any request its
// OpenAPI description refuses. stripe-mock answers fixtures, not outcomes:
// what the answers mean is the fake's business (stripe_test.go).
func TestStripeMockAcceptsEveryRequest(t *testing.T) {
	base := requireStripeMock(t)
	rec := &recorder{}
	p, err := New(Config{ID: "stripe-mock", SecretKey: "sk_test_123", BaseURL: base, Timeout: 10 * time.Second,
		HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := charge("4242424242424242", "EUR", 1050)
	req.PaymentID = id.New()
	res, err := p.Charge(ctx, req)
	if err != nil {
		t.Fatalf("charge: %v", err)
	}
	if !strings.HasPrefix(res.ProviderRef, "pi_") {
		t.Fatalf("provider ref %q", res.ProviderRef)
	}
	for _, amt := range []paygate.Money{{Amount: 500, Currency: "JPY"}, {Amount: 1230, Currency: "KWD"}, {Amount: 7, Currency: "ISK"}} {
		r := charge("4242424242424242", amt.Currency, amt.Amount)
		r.PaymentID, r.Billing, r.ThreeDSReturnURL = id.New(), nil, ""
		if _, err := p.Charge(ctx, r); err != nil {
			t.Fatalf("charge %v: %v", amt, err)
		}
	}
	op := paygate.PaymentOp{PaymentID: req.PaymentID, ProviderRef: res.ProviderRef, Amount: req.Amount}
	if err := p.Capture(ctx, op); err != nil {
		t.Fatalf("capture: %v", err)
	}
	if err := p.Void(ctx, op); err != nil {
		t.Fatalf("void: %v", err)
	}
	if _, err := p.Refund(ctx, paygate.RefundRequest{RefundID: id.New(), PaymentID: req.PaymentID, ProviderRef: res.ProviderRef,
		Amount: paygate.Money{Amount: 300, Currency: "EUR"}, Reason: "requested_by_customer"}); err != nil {
		t.Fatalf("refund: %v", err)
	}
	// The completion and the inquiry read; their answers are fixtures.
	_, _ = p.CompleteThreeDS(ctx, paygate.ThreeDSCompletion{PaymentID: req.PaymentID, ProviderRef: res.ProviderRef, Amount: req.Amount})
	if _, err := p.Inquire(ctx, req.PaymentID); err != nil {
		t.Fatalf("inquire: %v", err)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[string]bool{
		"POST /v1/payment_methods": false, "POST /v1/payment_intents": false, "POST /v1/refunds": false,
		"GET /v1/payment_intents/search": false,
	}
	for _, s := range rec.seen {
		if !strings.HasPrefix(s, "200 ") {
			t.Errorf("stripe-mock refused a request: %s", s)
		}
		_, rest, _ := strings.Cut(s, " ")
		if _, ok := want[rest]; ok {
			want[rest] = true
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("no %s was sent", k)
		}
	}
	if len(rec.seen) < 11 {
		t.Errorf("only %d requests: %v", len(rec.seen), rec.seen)
	}
}
