package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paygate/paygate/webhook"
)

// hook is one request a receiver got.
type hook struct {
	ID     string // webhook-id
	Header http.Header
	Body   []byte
	At     time.Time
	Status int // what the receiver answered
}

// payload decodes the body.
func (h hook) payload(t *testing.T) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(h.Body, &p); err != nil {
		t.Fatalf("webhook body %q is not JSON: %v", h.Body, err)
	}
	return p
}

// receiver is a merchant's webhook endpoint on loopback. It records every
// request and answers with what answer returns for the n-th request (from
// 1) of a webhook-id.
type receiver struct {
	t   *testing.T
	srv *http.Server
	url string

	mu     sync.Mutex
	hooks  []hook
	counts map[string]int
	answer func(id string, n int) int
	closed bool // the test is over: nothing more is reported
}

// newReceiver starts a receiver that answers 204 until told otherwise.
func newReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, url: "http://" + ln.Addr().String() + "/hooks", counts: map[string]int{}}
	r.answer = func(string, int) int { return http.StatusNoContent }
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = r.srv.Close()
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
	})
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get(webhook.HeaderID)
	r.mu.Lock()
	r.counts[id]++
	status := r.answer(id, r.counts[id])
	r.hooks = append(r.hooks, hook{ID: id, Header: req.Header.Clone(), Body: body, At: time.Now(), Status: status})
	// Every delivery is checked against the document's webhooks, as
	// every API exchange is (conformance_test.go).
	if err := checker.CheckWebhook(req.Header, body); err != nil && !r.closed {
		r.t.Errorf("webhook delivery does not conform to docs/openapi.json: %v\n%s", err, body)
	}
	r.mu.Unlock()
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "answered %d", status)
}

// setAnswer changes how the receiver answers from now on.
func (r *receiver) setAnswer(f func(id string, n int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = f
}

// all returns every request so far.
func (r *receiver) all() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hook(nil), r.hooks...)
}

// byID returns the requests of one webhook-id.
func (r *receiver) byID(id string) []hook {
	var out []hook
	for _, h := range r.all() {
		if h.ID == id {
			out = append(out, h)
		}
	}
	return out
}

// succeeded returns, per webhook-id, the first request answered 2xx.
func (r *receiver) succeeded() map[string]hook {
	out := map[string]hook{}
	for _, h := range r.all() {
		if _, ok := out[h.ID]; !ok && h.Status >= 200 && h.Status < 300 {
			out[h.ID] = h
		}
	}
	return out
}

// verify fails the test unless h carries a valid signature under secret
// and its webhook-id is the body's id.
func verify(t *testing.T, h hook, secret string) map[string]any {
	t.Helper()
	if err := webhook.Verify(secret, h.Header, h.Body); err != nil {
		t.Fatalf("webhook %s: signature: %v (%s)", h.ID, err, h.Header.Get(webhook.HeaderSignature))
	}
	p := h.payload(t)
	if p["id"] != h.ID {
		t.Fatalf("webhook-id %q, body id %v", h.ID, p["id"])
	}
	return p
}

// setWebhook runs webhook set and returns the secret.
func setWebhook(t *testing.T, dbURL, merchantID, mode, url string, args ...string) string {
	t.Helper()
	var w struct {
		URL    string `json:"url"`
		Secret string `json:"secret"`
	}
	mustCLI(t, &w, append([]string{"webhook", "set", "--merchant", merchantID, "--mode", mode, "--url", url,
		"--json", "--database-url", dbURL}, args...)...)
	if !strings.HasPrefix(w.Secret, webhook.SecretPrefix) || w.URL != url {
		t.Fatalf("webhook set printed %+v", w)
	}
	return w.Secret
}

// testEndpoint starts a receiver and makes it the merchant's test-mode
// webhook endpoint; it returns the receiver and the endpoint's secret.
func testEndpoint(t *testing.T, dbURL, merchantID string) (*receiver, string) {
	t.Helper()
	rcv := newReceiver(t)
	return rcv, setWebhook(t, dbURL, merchantID, "test", rcv.url)
}

// delivery is a delivery as `webhook deliveries --json` prints it.
type delivery struct {
	ID             string  `json:"id"`
	EventID        string  `json:"eventId"`
	Event          string  `json:"event"`
	MerchantID     string  `json:"merchantId"`
	Mode           string  `json:"mode"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	NextAttemptAt  *string `json:"nextAttemptAt"`
	LastAttemptAt  *string `json:"lastAttemptAt"`
	LastStatusCode *int    `json:"lastStatusCode"`
	LastError      string  `json:"lastError"`
	CreatedAt      string  `json:"createdAt"`
	UpdatedAt      string  `json:"updatedAt"`
	History        []struct {
		Attempt    int     `json:"attempt"`
		At         string  `json:"at"`
		URL        string  `json:"url"`
		StatusCode *int    `json:"statusCode"`
		LatencyMs  float64 `json:"latencyMs"`
		Response   string  `json:"response"`
		Error      string  `json:"error"`
	} `json:"history"`
}

// deliveries runs webhook deliveries --json with the extra flags.
func deliveries(t *testing.T, dbURL, merchantID string, args ...string) []delivery {
	t.Helper()
	var out []delivery
	mustCLI(t, &out, append([]string{"webhook", "deliveries", "--merchant", merchantID, "--limit", "0", "--json",
		"--database-url", dbURL}, args...)...)
	return out
}

// Kill ends the server with SIGKILL, as a crash would: no shutdown, no
// draining, claims left as they are.
func (g *gateway) Kill() {
	g.t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		g.t.Fatalf("kill paygate: %v", err)
	}
	select {
	case err := <-g.exited:
		g.exited <- err
	case <-time.After(30 * time.Second):
		g.t.Fatal("paygate did not die within 30s of SIGKILL")
	}
}

// pay creates a payment and returns its id (from data, or from the error
// of a declined payment).
func (g *gateway) pay(key, number, amount, currency string) string {
	g.t.Helper()
	r := g.call(http.MethodPost, "/v1/payments", key, paymentBody(number, amount, currency))
	if r.Status == http.StatusCreated {
		return r.Data()["id"].(string)
	}
	if e := r.Err(); e != nil {
		if id, ok := e["transactionId"].(string); ok {
			return id
		}
	}
	g.t.Fatalf("payment %s %s %s: %d %s", number, amount, currency, r.Status, r.Raw)
	return ""
}
