package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/store/sqlite"
	"github.com/paygate/paygate/internal/testenv"
	swh "github.com/paygate/paygate/webhook"
)

const (
	secretA = "whsec_c2VjcmV0IEEgb2YgdGhlIGRpc3BhdGNoZXIgdGVzdA=="
	secretB = "whsec_c2VjcmV0IEIgb2YgdGhlIGRpc3BhdGNoZXIgdGVzdA=="
)

// fakeStore hands out the claims it was given, once, and records finishes.
type fakeStore struct {
	mu       sync.Mutex
	claims   []paygate.ClaimedDelivery
	requests []paygate.DeliveryClaim
	finishes []paygate.DeliveryFinish
}

func (f *fakeStore) ClaimDeliveries(_ context.Context, c paygate.DeliveryClaim) ([]paygate.ClaimedDelivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, c)
	n := min(c.Limit, len(f.claims))
	out := f.claims[:n]
	f.claims = f.claims[n:]
	for i := range out {
		out[i].Lease = c.Lease
	}
	return out, nil
}

func (f *fakeStore) Commit(_ context.Context, u paygate.Unit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range u.Ops {
		f.finishes = append(f.finishes, op.(paygate.DeliveryFinish))
	}
	return nil
}

func (f *fakeStore) only(t *testing.T) paygate.DeliveryFinish {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.finishes) != 1 {
		t.Fatalf("%d finishes, want 1: %+v", len(f.finishes), f.finishes)
	}
	return f.finishes[0]
}

// receiver is a loopback HTTP server that records what it gets and
// answers with answer.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
}

func newReceiver(t *testing.T, answer http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, req)
		r.bodies = append(r.bodies, body)
		r.mu.Unlock()
		answer(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *receiver) request(i int) (*http.Request, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[i], r.bodies[i]
}

func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// claimed returns a claim of attempt n of a delivery of a new event to url
// in mode, signed with secret.
func claimed(url string, mode paygate.Mode, n int, secret string) paygate.ClaimedDelivery {
	now := paygate.SystemClock{}.Now()
	ev := PaymentEvent(paygate.EventPaymentCaptured, paygate.Payment{
		ID: id.New(), MerchantID: id.New(), Mode: mode, Status: paygate.PaymentCaptured,
		Amount: paygate.Money{Amount: 1050, Currency: "EUR"},
	}, 1050, now)
	return paygate.ClaimedDelivery{
		Delivery: paygate.Delivery{
			ID: id.New(), EventID: ev.ID, MerchantID: ev.MerchantID, Mode: mode, EventType: ev.Type,
			Status: paygate.DeliveryPending, Attempts: n, CreatedAt: now, UpdatedAt: now,
		},
		Payload: ev.Payload,
		Endpoint: &paygate.WebhookEndpointState{WebhookEndpoint: paygate.WebhookEndpoint{
			MerchantID: ev.MerchantID, Mode: mode, URL: url, Secret: secret, CreatedAt: now, UpdatedAt: now,
		}},
	}
}

func identity(d time.Duration) time.Duration { return d }

// dispatch runs one round of a dispatcher over the claims and returns the
// store and the log.
func dispatch(t *testing.T, cfg Config, claims ...paygate.ClaimedDelivery) (*fakeStore, *testenv.Buffer) {
	t.Helper()
	st := &fakeStore{claims: claims}
	logs := &testenv.Buffer{}
	cfg.Store = st
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	if cfg.Jitter == nil {
		cfg.Jitter = identity
	}
	if n := NewDispatcher(cfg).RunOnce(t.Context()); n != len(claims) {
		t.Fatalf("RunOnce attempted %d, want %d", n, len(claims))
	}
	return st, logs
}

func TestDispatcherSignsAndSucceeds(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 3000)
	rcv := newReceiver(t, answer(http.StatusOK, long))
	c := claimed(rcv.srv.URL+"/hooks?token=merchant-secret-token", paygate.ModeTest, 1, secretA)
	before := time.Now()
	st, logs := dispatch(t, Config{}, c)

	if rcv.count() != 1 {
		t.Fatalf("receiver got %d requests, want 1", rcv.count())
	}
	req, body := rcv.request(0)
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s with content type %q", req.Method, req.Header.Get("Content-Type"))
	}
	if !bytes.Equal(body, c.Payload) {
		t.Errorf("body %s, want the event's payload %s", body, c.Payload)
	}
	if got := req.Header.Get(swh.HeaderID); got != c.Delivery.EventID {
		t.Errorf("webhook-id %q, want the event id %q", got, c.Delivery.EventID)
	}
	if err := swh.Verify(secretA, req.Header, body); err != nil {
		t.Errorf("signature does not verify: %v (%s)", err, req.Header.Get(swh.HeaderSignature))
	}
	if n := len(strings.Fields(req.Header.Get(swh.HeaderSignature))); n != 1 {
		t.Errorf("%d signatures without a rotation, want 1", n)
	}

	fin := st.only(t)
	if fin.Status != paygate.DeliverySucceeded || fin.DeliveryID != c.Delivery.ID || fin.Lease != st.requests[0].Lease || fin.Lease == "" || fin.DisableEndpoint {
		t.Errorf("finish %+v, want succeeded under the claim's lease", fin)
	}
	a := fin.Attempt
	if a == nil {
		t.Fatal("no attempt recorded")
	}
	if a.Number != 1 || a.StatusCode != 200 || a.Error != "" || a.URL != c.Endpoint.URL || a.DeliveryID != c.Delivery.ID {
		t.Errorf("attempt %+v", a)
	}
	if len(a.Response) != 1024 || string(a.Response) != long[:1024] {
		t.Errorf("recorded %d bytes of the answer, want its first 1024", len(a.Response))
	}
	if a.Latency <= 0 || a.Latency > time.Since(before) || a.StartedAt.Before(before.Add(-time.Second)) {
		t.Errorf("latency %s, started %s", a.Latency, a.StartedAt)
	}

	// One log line per attempt, without the payload, the secret or the
	// URL's query.
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1:\n%s", len(lines), logs)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["event_id"] != c.Delivery.EventID || rec["endpoint_host"] != "127.0.0.1" || rec["status"] != float64(200) || rec["latency_ms"] == nil {
		t.Errorf("log line %s", lines[0])
	}
	for _, secret := range []string{string(c.Payload), secretA, strings.TrimPrefix(secretA, "whsec_"), "merchant-secret-token", `"amount"`} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

func TestDispatcherRotationSignsWithBoth(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer(http.StatusNoContent, ""))
	valid, expired := claimed(rcv.srv.URL, paygate.ModeTest, 1, secretB), claimed(rcv.srv.URL, paygate.ModeTest, 1, secretB)
	later, earlier := time.Now().Add(time.Hour), time.Now().Add(-time.Second)
	valid.Endpoint.PreviousSecret, valid.Endpoint.PreviousSecretExpiresAt = secretA, &later
	expired.Endpoint.PreviousSecret, expired.Endpoint.PreviousSecretExpiresAt = secretA, &earlier
	dispatch(t, Config{Concurrency: 1}, valid)
	dispatch(t, Config{Concurrency: 1}, expired)

	req, body := rcv.request(0)
	if n := len(strings.Fields(req.Header.Get(swh.HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures during a rotation, want 2", n)
	}
	for _, s := range []string{secretA, secretB} {
		if err := swh.Verify(s, req.Header, body); err != nil {
			t.Errorf("during the rotation, %s...: %v", s[:12], err)
		}
	}
	req, body = rcv.request(1)
	if err := swh.Verify(secretA, req.Header, body); err == nil {
		t.Error("the expired previous secret still signs")
	}
	if err := swh.Verify(secretB, req.Header, body); err != nil {
		t.Errorf("the new secret: %v", err)
	}
}

func TestDispatcherFailures(t *testing.T) {
	t.Parallel()
	schedule := Schedule{0, 5 * time.Second, 5 * time.Minute}
	redirected := newReceiver(t, answer(http.StatusOK, "should not be reached"))
	for _, c := range []struct {
		name      string
		handler   http.HandlerFunc
		attempt   int
		status    paygate.DeliveryStatus
		wait      time.Duration
		code      int
		errSubstr string
		disable   bool
	}{
		{"ServerErrorRetries", answer(500, "boom"), 1, paygate.DeliveryPending, 5 * time.Second, 500, "HTTP 500", false},
		{"SecondFailureWaitsLonger", answer(503, ""), 2, paygate.DeliveryPending, 5 * time.Minute, 503, "HTTP 503", false},
		{"LastAttemptFails", answer(500, ""), 3, paygate.DeliveryFailed, 0, 500, "HTTP 500", false},
		{"ClientErrorRetries", answer(400, "bad"), 1, paygate.DeliveryPending, 5 * time.Second, 400, "HTTP 400", false},
		{"RedirectIsNotFollowed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, redirected.srv.URL, http.StatusFound)
		}, 1, paygate.DeliveryPending, 5 * time.Second, 302, "redirects are not followed", false},
		{"GoneDisables", answer(410, ""), 1, paygate.DeliveryFailed, 0, 410, "410", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rcv := newReceiver(t, c.handler)
			cl := claimed(rcv.srv.URL, paygate.ModeTest, c.attempt, secretA)
			st, _ := dispatch(t, Config{Schedule: schedule}, cl)
			fin := st.only(t)
			if fin.Status != c.status || fin.DisableEndpoint != c.disable {
				t.Errorf("finish %+v, want status %s, disable %v", fin, c.status, c.disable)
			}
			if c.status == paygate.DeliveryPending {
				if got := fin.NextAttemptAt.Sub(fin.At); got != c.wait {
					t.Errorf("next attempt after %s, want %s", got, c.wait)
				}
			}
			if fin.Attempt == nil || fin.Attempt.StatusCode != c.code || !strings.Contains(fin.Attempt.Error, c.errSubstr) || fin.Attempt.Number != c.attempt {
				t.Errorf("attempt %+v, want status %d and error %q", fin.Attempt, c.code, c.errSubstr)
			}
		})
	}
	if redirected.count() != 0 {
		t.Errorf("a redirect was followed")
	}
}

func TestDispatcherTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select { // answer only once the client gave up
		case <-r.Context().Done():
		case <-release:
		}
	})
	st, _ := dispatch(t, Config{Timeout: 300 * time.Millisecond}, claimed(rcv.srv.URL, paygate.ModeTest, 1, secretA))
	fin := st.only(t)
	if fin.Status != paygate.DeliveryPending || fin.Attempt == nil || fin.Attempt.StatusCode != 0 ||
		!strings.Contains(fin.Attempt.Error, "no answer within 300ms") {
		t.Errorf("finish %+v attempt %+v, want a timeout to retry", fin, fin.Attempt)
	}
}

func TestDispatcherLiveGuard(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer(http.StatusOK, ""))
	port := rcv.srv.URL[strings.LastIndex(rcv.srv.URL, ":")+1:]
	for _, u := range []string{
		rcv.srv.URL,                        // http in live mode
		"https://127.0.0.1:" + port + "/",  // a loopback literal
		"https://localhost:" + port + "/",  // a name for loopback
		"https://10.0.0.1:" + port + "/",   // private
		"https://[::1]:" + port + "/",      // IPv6 loopback
		"https://169.254.169.254/metadata", // link-local
	} {
		st, _ := dispatch(t, Config{}, claimed(u, paygate.ModeLive, 1, secretA))
		fin := st.only(t)
		if fin.Status != paygate.DeliveryPending || fin.Attempt == nil || fin.Attempt.StatusCode != 0 || !strings.Contains(fin.Attempt.Error, "refused") {
			t.Errorf("live delivery to %s: %+v %+v, want a refused attempt", u, fin, fin.Attempt)
		}
	}
	if rcv.count() != 0 {
		t.Errorf("the receiver got %d live-mode requests", rcv.count())
	}
}

func TestDispatcherWithoutEndpoint(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer(http.StatusOK, ""))
	none := claimed(rcv.srv.URL, paygate.ModeTest, 1, secretA)
	none.Endpoint = nil
	disabled := claimed(rcv.srv.URL, paygate.ModeTest, 2, secretA)
	disabled.Endpoint.DisabledAt = ptrTo(time.Now())
	for _, c := range []paygate.ClaimedDelivery{none, disabled} {
		st, _ := dispatch(t, Config{}, c)
		fin := st.only(t)
		if fin.Status != paygate.DeliveryFailed || fin.Attempt != nil || fin.Error == "" {
			t.Errorf("finish %+v, want failed without an attempt", fin)
		}
	}
	if rcv.count() != 0 {
		t.Errorf("the receiver got %d requests", rcv.count())
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestDispatcherClaimRequest(t *testing.T) {
	t.Parallel()
	st, _ := dispatch(t, Config{Schedule: Schedule{2 * time.Second, time.Second}, Timeout: 3 * time.Second, Concurrency: 7})
	if len(st.requests) != 1 {
		t.Fatalf("%d claims", len(st.requests))
	}
	c := st.requests[0]
	if c.Limit != 7 || c.Now.Sub(c.FirstDue) != 2*time.Second || c.LeaseUntil.Sub(c.Now) != 23*time.Second || len(c.Lease) != 32 {
		t.Errorf("claim %+v, want limit 7, first wait 2s, lease 23s", c)
	}
}

// TestDispatcherLoop runs the real loop on a SQLite store: a ping goes out
// at once, a failing receiver is retried with the same webhook-id, Stop
// returns once the loop is done.
func TestDispatcherLoop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "paygate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := paygate.SystemClock{}.Now()
	m := paygate.Merchant{ID: id.New(), Name: "Loop", CreatedAt: now}
	if err := st.Commit(ctx, paygate.Unit{Ops: []paygate.Op{m}}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	calls := map[string]int{}
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls[r.Header.Get(swh.HeaderID)]++
		if calls[r.Header.Get(swh.HeaderID)] < 3 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	v := testVault(t)
	sealed, err := SealSecret(v, m.ID, paygate.ModeTest, secretA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.ConfigureEndpoint(ctx, st, paygate.WebhookEndpoint{
		MerchantID: m.ID, Mode: paygate.ModeTest, URL: rcv.srv.URL, SealedSecret: sealed, CreatedAt: now, UpdatedAt: now,
	}, false, time.Time{}); err != nil {
		t.Fatal(err)
	}

	d := NewDispatcher(Config{Store: st, Vault: v, Schedule: Schedule{0, 50 * time.Millisecond, 50 * time.Millisecond}, PollInterval: 20 * time.Millisecond})
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ping := PingEvent(m.ID, paygate.ModeTest, paygate.SystemClock{}.Now())
	del, err := testenv.CreatePing(ctx, st, ping, id.New())
	if err != nil {
		t.Fatal(err)
	}
	d.Wake()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := paygate.DeliveryByID(ctx, st, m.ID, paygate.ModeTest, del.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == paygate.DeliverySucceeded {
			if got.Attempts != 3 {
				t.Errorf("succeeded after %d attempts, want 3", got.Attempts)
			}
			break
		}
		if got.Status == paygate.DeliveryFailed || time.Now().After(deadline) {
			t.Fatalf("delivery %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.Stop()
	d.Stop() // a second Stop is harmless
	for i := range 3 {
		req, body := rcv.request(i)
		if req.Header.Get(swh.HeaderID) != ping.ID {
			t.Errorf("attempt %d carried webhook-id %q, want %q", i+1, req.Header.Get(swh.HeaderID), ping.ID)
		}
		if err := swh.Verify(secretA, req.Header, body); err != nil {
			t.Errorf("attempt %d: %v", i+1, err)
		}
	}
	attempts, err := st.DeliveryAttempts(ctx, m.ID, paygate.ModeTest, del.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 3 || attempts[0].StatusCode != 500 || attempts[2].StatusCode != 204 {
		t.Errorf("recorded attempts %+v", attempts)
	}
}

// TestDispatcherTestModeGuard is serve --allow-private-test-webhooks=false
// (decisions.md section 15): test-mode deliveries to non-public addresses
// are refused like live ones, while http stays allowed; by default they go,
// and the attempt records that the address connected to was private.
func TestDispatcherTestModeGuard(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, answer(http.StatusOK, strings.Repeat("x", 3000)))
	port := rcv.srv.URL[strings.LastIndex(rcv.srv.URL, ":")+1:]
	guarded := Config{Policy: Policy{GuardTestMode: true}}
	for _, u := range []string{
		rcv.srv.URL,                       // a loopback literal, over http
		"http://localhost:" + port + "/",  // a name for loopback
		"http://10.0.0.1:" + port + "/",   // private
		"http://[::1]:" + port + "/",      // IPv6 loopback
		"http://169.254.169.254/metadata", // link-local
		"http://0.0.0.0:" + port + "/",    // unspecified
		"http://224.0.0.1:" + port + "/",  // multicast
	} {
		st, _ := dispatch(t, guarded, claimed(u, paygate.ModeTest, 1, secretA))
		fin := st.only(t)
		if fin.Status != paygate.DeliveryPending || fin.Attempt == nil || fin.Attempt.StatusCode != 0 || !strings.Contains(fin.Attempt.Error, "refused") {
			t.Errorf("guarded test delivery to %s: %+v %+v, want a refused attempt", u, fin, fin.Attempt)
		}
	}
	if rcv.count() != 0 {
		t.Fatalf("the receiver got %d guarded test-mode requests", rcv.count())
	}
	// The default lets test mode reach loopback; at most 1 KiB of the
	// answer is kept, and the address is marked private.
	st, _ := dispatch(t, Config{}, claimed(rcv.srv.URL, paygate.ModeTest, 1, secretA))
	fin := st.only(t)
	if fin.Status != paygate.DeliverySucceeded || rcv.count() != 1 {
		t.Fatalf("default test delivery to loopback: %+v", fin)
	}
	if len(fin.Attempt.Response) != paygate.MaxAttemptResponse || fin.Attempt.PrivateAddress == nil || !*fin.Attempt.PrivateAddress {
		t.Errorf("attempt kept %d bytes, private %v; want 1 KiB and true", len(fin.Attempt.Response), fin.Attempt.PrivateAddress)
	}
}
