package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests run the client against a scripted server on loopback: each
// attempt gets the next scripted answer, so that every retry rule is seen
// on its own. The tests against the real gateway are in gateway_test.go.

// scripted is one answer of the script: a status with headers and an
// error name, or drop: close the connection without answering.
type scripted struct {
	status int
	header map[string]string
	name   string
	drop   bool
	raw    string // a body that is not the envelope
}

// seen is one request the scripted server received.
type seen struct {
	method, path, query string
	header              http.Header
	body                string
}

type script struct {
	mu      sync.Mutex
	answers []scripted
	seen    []seen
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(body)})
	a := scripted{status: http.StatusOK}
	if n := len(s.seen) - 1; n < len(s.answers) {
		a = s.answers[n]
	}
	s.mu.Unlock()
	if a.drop {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close()
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", len(s.seen)))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	if a.raw != "" {
		fmt.Fprint(w, a.raw)
		return
	}
	if a.status < 300 {
		fmt.Fprint(w, `{"data":{"id":"0190b6a2-7c1d-7000-8000-000000000001","status":"captured","amount":"10.50","createdAt":"2031-03-14T15:09:26.535Z"}}`)
		return
	}
	fmt.Fprintf(w, `{"data":null,"error":{"status":%d,"name":%q,"message":"scripted"}}`, a.status, a.name)
}

func (s *script) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

// newScripted starts a scripted server and a client of it whose waits are
// recorded, not slept, and whose backoff is the retry's number in
// milliseconds.
func newScripted(t *testing.T, answers []scripted, opts ...Option) (*Client, *script, *[]time.Duration) {
	t.Helper()
	s := &script{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	opts = append([]Option{WithBackoff(func(n int, _ time.Duration) time.Duration { return time.Duration(n) * time.Millisecond })}, opts...)
	c, err := New(srv.URL, "smtgw_sk_test_key", opts...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := new([]time.Duration)
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return c, s, waits
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRetries(t *testing.T) {
	t.Parallel()
	ra := func(v string) map[string]string { return map[string]string{"Retry-After": v} }
	tests := []struct {
		name     string
		answers  []scripted
		attempts int
		waits    []time.Duration
		errName  string // "" for success
		status   int    // the error's status
	}{
		{name: "OK", attempts: 1},
		{
			name:     "RateLimitedHonoursRetryAfter",
			answers:  []scripted{{status: 429, name: NameRateLimited, header: ra("3")}},
			attempts: 2, waits: []time.Duration{3 * time.Second},
		},
		{
			name:     "UnavailableWithoutRetryAfterBacksOff",
			answers:  []scripted{{status: 503, name: NameServiceUnavailable}, {status: 503, name: NameServiceUnavailable}},
			attempts: 3, waits: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		},
		{
			name:     "InFlightRetried",
			answers:  []scripted{{status: 409, name: NameDuplicateRequest, header: ra("1")}},
			attempts: 2, waits: []time.Duration{time.Second},
		},
		{
			name:     "BackoffLongerThanRetryAfterWins",
			answers:  []scripted{{status: 503, header: ra("0")}, {status: 503, header: ra("0")}, {status: 503, header: ra("0")}},
			attempts: 4, waits: []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond},
		},
		{
			name:     "NetworkErrorRetried",
			answers:  []scripted{{drop: true}, {drop: true}},
			attempts: 3, waits: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		},
		{
			name:     "ErrDuplicateOtherBodyNotRetried",
			answers:  []scripted{{status: 409, name: NameDuplicateRequest}},
			attempts: 1, errName: NameDuplicateRequest, status: 409,
		},
		{
			name:     "ErrDeclineNotRetried",
			answers:  []scripted{{status: 400, name: NameCardDeclined}},
			attempts: 1, errName: NameCardDeclined, status: 400,
		},
		{
			name:     "ErrProviderNotRetried",
			answers:  []scripted{{status: 502, name: NameProviderError}},
			attempts: 1, errName: NameProviderError, status: 502,
		},
		{
			name:     "ErrInternalNotRetried",
			answers:  []scripted{{status: 500, name: NameInternalError}},
			attempts: 1, errName: NameInternalError, status: 500,
		},
		{
			name: "ErrRetriesExhausted",
			answers: []scripted{
				{status: 503, name: NameServiceUnavailable}, {status: 503, name: NameServiceUnavailable},
				{status: 503, name: NameServiceUnavailable}, {status: 503, name: NameServiceUnavailable},
				{status: 503, name: NameServiceUnavailable}, {status: 503, name: NameServiceUnavailable},
			},
			attempts: 5, waits: []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond},
			errName: NameServiceUnavailable, status: 503,
		},
		{
			// A proxy's 5xx page is not paygate's answer: the request may
			// have been processed, so it is retried with the same key.
			name:     "ProxyPageRetried",
			answers:  []scripted{{status: 502, raw: "<html>Bad Gateway</html>"}, {status: 504, raw: "<html>Gateway Time-out</html>"}},
			attempts: 3, waits: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		},
		{
			name:     "ProxyPageHonoursRetryAfter",
			answers:  []scripted{{status: 503, raw: "Service Unavailable", header: ra("2")}},
			attempts: 2, waits: []time.Duration{2 * time.Second},
		},
		{
			// A proxy's 4xx page (a body too large for it) is final.
			name:     "ErrNotTheEnvelope4xx",
			answers:  []scripted{{status: 413, raw: "<html>Request Entity Too Large</html>"}},
			attempts: 1, errName: "", status: 413,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, s, waits := newScripted(t, tt.answers)
			var info ResponseInfo
			res, err := c.CreatePayment(t.Context(), &PaymentParams{Amount: "10.50", Currency: "EUR", CustomerID: "c"}, WithResponseInfo(&info))
			reqs := s.requests()
			if len(reqs) != tt.attempts || info.Attempts != tt.attempts {
				t.Errorf("%d requests, info.Attempts %d, want %d", len(reqs), info.Attempts, tt.attempts)
			}
			if fmt.Sprint(*waits) != fmt.Sprint(tt.waits) {
				t.Errorf("waits %v, want %v", *waits, tt.waits)
			}
			key := reqs[0].header.Get("Idempotency-Key")
			if !uuidPattern.MatchString(key) || info.IdempotencyKey != key {
				t.Errorf("Idempotency-Key %q (info %q), want a random UUID", key, info.IdempotencyKey)
			}
			for i, r := range reqs {
				if r.header.Get("Idempotency-Key") != key || r.body != reqs[0].body {
					t.Errorf("attempt %d sent key %q and body %s, want the first's", i+1, r.header.Get("Idempotency-Key"), r.body)
				}
				if r.method != http.MethodPost || r.path != "/v1/payments" || r.header.Get("X-API-Key") != "smtgw_sk_test_key" || r.header.Get("Content-Type") != "application/json" {
					t.Errorf("attempt %d: %s %s %v", i+1, r.method, r.path, r.header)
				}
			}
			if tt.errName == "" && tt.status == 0 {
				if err != nil || res.ID == "" || res.Status != PaymentCaptured {
					t.Fatalf("CreatePayment: %+v, %v", res, err)
				}
				return
			}
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if e.Name != tt.errName || e.StatusCode != tt.status || e.IdempotencyKey != key || e.RequestID != fmt.Sprintf("req-%d", tt.attempts) {
				t.Errorf("error %+v", e)
			}
		})
	}
}

func TestRetriesExhaustedOnNetworkErrors(t *testing.T) {
	t.Parallel()
	c, _, _ := newScripted(t, []scripted{{drop: true}, {drop: true}, {drop: true}}, WithMaxRetries(2))
	_, err := c.GetPayment(t.Context(), "0190b6a2-7c1d-7000-8000-000000000001")
	te, ok := errors.AsType[*TransportError](err)
	if !ok || te.Attempts != 3 || te.Method != http.MethodGet || te.IdempotencyKey != "" || te.Err == nil {
		t.Fatalf("error %v (%T), want a *TransportError after 3 attempts", err, err)
	}
}

// TestRetriesExhaustedOnProxyPages: a proxy answering its own 5xx page on
// every attempt ends like a dropped connection, in a *TransportError that
// names the key to call again with, never in an *Error that would read as
// the payment's failure.
func TestRetriesExhaustedOnProxyPages(t *testing.T) {
	t.Parallel()
	page := scripted{status: 502, raw: "<html><center><h1>502 Bad Gateway</h1></center></html>"}
	c, s, _ := newScripted(t, []scripted{page, page, page}, WithMaxRetries(2))
	var info ResponseInfo
	_, err := c.CreatePayment(t.Context(), &PaymentParams{Amount: "10.50", Currency: "EUR", CustomerID: "c"}, WithIdempotencyKey("order-9"), WithResponseInfo(&info))
	te, ok := errors.AsType[*TransportError](err)
	if !ok || te.Attempts != 3 || te.Method != http.MethodPost || te.IdempotencyKey != "order-9" || info.IdempotencyKey != "order-9" {
		t.Fatalf("error %v (%T), want a *TransportError naming order-9 after 3 attempts", err, err)
	}
	if _, isErr := errors.AsType[*Error](err); isErr {
		t.Errorf("error %v is also an *Error", err)
	}
	lost, ok := errors.AsType[*LostAnswerError](err)
	if !ok || lost.StatusCode != 502 || lost.RequestID != "req-3" {
		t.Errorf("cause %v, want the last attempt's 502", te.Err)
	}
	for i, r := range s.requests() {
		if r.header.Get("Idempotency-Key") != "order-9" {
			t.Errorf("attempt %d sent key %q", i+1, r.header.Get("Idempotency-Key"))
		}
	}
	if !strings.Contains(err.Error(), "no answer after 3 attempt(s)") || !strings.Contains(err.Error(), "502") {
		t.Errorf("error text %q", err)
	}
}

// TestDeadline: a retry that could not start before the context's
// deadline is not waited for.
func TestDeadline(t *testing.T) {
	t.Parallel()
	c, s, waits := newScripted(t, []scripted{{status: 429, name: NameRateLimited, header: map[string]string{"Retry-After": "30"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := c.GetPayment(ctx, "0190b6a2-7c1d-7000-8000-000000000001")
	if ErrorName(err) != NameRateLimited || len(*waits) != 0 || len(s.requests()) != 1 {
		t.Errorf("error %v after %d requests and waits %v: want the 429 at once", err, len(s.requests()), *waits)
	}
	if e, _ := errors.AsType[*Error](err); e == nil || e.RetryAfter != 30*time.Second {
		t.Errorf("RetryAfter of %v", err)
	}
}

// TestCancelledWhileWaiting: cancelling the context ends the wait.
func TestCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	c, err := New("http://127.0.0.1:1", "k") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	c.backoff = func(int, time.Duration) time.Duration { return time.Hour }
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	_, err = c.GetPayment(ctx, "id")
	if te, ok := errors.AsType[*TransportError](err); !ok || te.Attempts != 1 {
		t.Errorf("error %v, want the first attempt's *TransportError", err)
	}
}

func TestCallOptions(t *testing.T) {
	t.Parallel()
	c, s, _ := newScripted(t, nil)
	ctx := t.Context()
	if _, err := c.CreatePayment(ctx, &PaymentParams{}, WithIdempotencyKey("order-1"), WithRequestID("trace.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePayment(ctx, &PaymentParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePayment(ctx, &PaymentParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LookupPayment(ctx, "order 1&x=y", WithIdempotencyKey("ignored")); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteCard(ctx, "c/1", "k 2"); err != nil {
		t.Fatal(err)
	}
	r := s.requests()
	if k := r[0].header.Get("Idempotency-Key"); k != "order-1" || r[0].header.Get("X-Request-Id") != "trace.1" {
		t.Errorf("given key and request id: %q %q", k, r[0].header.Get("X-Request-Id"))
	}
	if r[1].header.Get("Idempotency-Key") == r[2].header.Get("Idempotency-Key") {
		t.Errorf("two calls shared the generated key %q", r[1].header.Get("Idempotency-Key"))
	}
	if r[3].method != http.MethodGet || r[3].path != "/v1/payments" || r[3].query != "merchantRef=order+1%26x%3Dy" || r[3].header.Get("Idempotency-Key") != "" || r[3].body != "" {
		t.Errorf("lookup: %s %s?%s key %q body %q", r[3].method, r[3].path, r[3].query, r[3].header.Get("Idempotency-Key"), r[3].body)
	}
	if r[4].method != http.MethodDelete || r[4].path != "/v1/customers/c/1/cards/k 2" {
		t.Errorf("delete: %s %s", r[4].method, r[4].path)
	}
	if !strings.HasPrefix(r[0].header.Get("User-Agent"), "paygate-go/") {
		t.Errorf("User-Agent %q", r[0].header.Get("User-Agent"))
	}
	if _, err := c.GetPayment(ctx, ""); err == nil || len(s.requests()) != 5 {
		t.Errorf("an empty id: %v, and a request was sent", err)
	}
}

// TestBodies: what each POST sends; optional fields absent unless set.
func TestBodies(t *testing.T) {
	t.Parallel()
	c, s, _ := newScripted(t, nil)
	ctx := t.Context()
	_, _ = c.CapturePayment(ctx, "p", nil)
	_, _ = c.CapturePayment(ctx, "p", &CaptureParams{Amount: "1.00"})
	_, _ = c.VoidPayment(ctx, "p")
	_, _ = c.UpsertCustomer(ctx, &CustomerParams{ExternalID: "x"})
	_, _ = c.UpsertCustomer(ctx, &CustomerParams{ExternalID: "x", Metadata: map[string]any{}})
	_, _ = c.SaveCard(ctx, "c", &StoredCardParams{Number: "4242424242424242", ExpiryMonth: "12", ExpiryYear: "30", HolderName: "A"})
	_, _ = c.CreatePayment(ctx, &PaymentParams{Amount: "1", Currency: "JPY", CustomerID: "c", PaymentMethod: MethodStoredCard, StoredCardID: "s"})
	want := []string{
		`/v1/payments/p/capture {}`,
		`/v1/payments/p/capture {"amount":"1.00"}`,
		`/v1/payments/p/void {}`,
		`/v1/customers {"externalId":"x"}`,
		`/v1/customers {"externalId":"x","metadata":{}}`,
		`/v1/customers/c/cards {"card":{"number":"4242424242424242","expiryMonth":"12","expiryYear":"30","holderName":"A"}}`,
		`/v1/payments {"amount":"1","currency":"JPY","paymentMethod":"stored_card","customerId":"c","storedCardId":"s"}`,
	}
	for i, r := range s.requests() {
		if got := r.path + " " + r.body; got != want[i] {
			t.Errorf("request %d: %s\nwant %s", i, got, want[i])
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	low := exponential(500*time.Millisecond, 8*time.Second, func() float64 { return 0 })
	high := exponential(500*time.Millisecond, 8*time.Second, func() float64 { return 0.999999 })
	for n, ceiling := range map[int]time.Duration{
		1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second,
		5: 8 * time.Second, 6: 8 * time.Second, 1000: 8 * time.Second,
	} {
		if lo, hi := low(n, 0), high(n, 0); lo != ceiling/2 || hi > ceiling || hi < ceiling-time.Millisecond {
			t.Errorf("retry %d: waits %s to %s, want %s to %s", n, lo, hi, ceiling/2, ceiling)
		}
	}
	b := ExponentialBackoff(time.Second, 4*time.Second)
	seen := map[time.Duration]bool{}
	for range 20 {
		d := b(3, 0)
		if d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("retry 3 waits %s, want 2s to 4s", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 draws gave one wait %v: no jitter", seen)
	}
}

func TestRetryAfterOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2031, 3, 14, 15, 9, 26, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"1":                             time.Second,
		"120":                           2 * time.Minute,
		"-3":                            0,
		"soon":                          0,
		"Fri, 14 Mar 2031 15:09:36 GMT": 10 * time.Second,
		"Fri, 14 Mar 2031 15:09:16 GMT": 0,
	} {
		if got := retryAfterOf(v, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ url, key string }{
		{"", "k"}, {"127.0.0.1:8080", "k"}, {"ftp://x", "k"}, {"http://x?y=1", "k"}, {"http://x", ""},
	} {
		if _, err := New(tt.url, tt.key); err == nil {
			t.Errorf("New(%q, %q) succeeded", tt.url, tt.key)
		}
	}
	c, err := New("https://pay.example/base/", "k")
	if err != nil || c.base != "https://pay.example/base" {
		t.Errorf("New: %v, base %q", err, c.base)
	}
}

// TestRedaction: a card's number and CVV never show when a request value
// is printed or logged.
func TestRedaction(t *testing.T) {
	t.Parallel()
	p := &PaymentParams{Amount: "1", Currency: "EUR", CustomerID: "c", Card: &Card{Number: "4242424242424242", CVV: "987", ExpiryMonth: "12", ExpiryYear: "30", HolderName: "Ada"}}
	sc := StoredCardParams{Number: "5555555555554444", ExpiryMonth: "12", ExpiryYear: "30"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("pay", "card", *p.Card, "stored", sc)
	shown := []string{
		fmt.Sprint(p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), fmt.Sprintf("%v", *p),
		fmt.Sprintf("%+v", *p.Card), fmt.Sprintf("%#v", *p.Card), fmt.Sprint(sc), fmt.Sprintf("%#v", sc),
		logged.String(),
	}
	for _, s := range shown {
		if strings.Contains(s, "4242424242424242") || strings.Contains(s, "987") || strings.Contains(s, "5555555555554444") {
			t.Errorf("shown: %s", s)
		}
	}
	if !strings.Contains(fmt.Sprintf("%+v", p), "[redacted]") {
		t.Errorf("%+v: the card is not shown redacted", p)
	}
	// The JSON sent is the card itself.
	b, _ := json.Marshal(p.Card)
	if !strings.Contains(string(b), `"number":"4242424242424242"`) || !strings.Contains(string(b), `"cvv":"987"`) {
		t.Errorf("JSON: %s", b)
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	e := &Error{StatusCode: 400, Name: NameCardDeclined, Message: "The card was declined.", DeclineCode: DeclineGeneric, RequestID: "r1"}
	if got, want := e.Error(), "paygate: 400 CARD_DECLINED: The card was declined. (decline code generic_decline) [request r1]"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &Error{StatusCode: 400, Name: NameInvalidRequest, Message: "bad", Param: "card.number"}
	if got, want := e.Error(), "paygate: 400 INVALID_REQUEST: bad (param card.number)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if ErrorName(fmt.Errorf("wrapped: %w", e)) != NameInvalidRequest || ErrorName(errors.New("x")) != "" {
		t.Error("ErrorName does not find the *Error in a chain")
	}
}
