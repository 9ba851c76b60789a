package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeGateway answers like the gateway does for the bench's requests:
// payments by card number, refunds, replays, gets and bad keys. It checks
// the requests and remembers what it saw.
type fakeGateway struct {
	t       *testing.T
	key     string
	mu      sync.Mutex
	keys    map[string]string // idempotency key -> body
	refunds []string          // transactionIds
	ids     atomic.Int64
	bad     atomic.Int64 // malformed requests
	gets    atomic.Int64
	replays atomic.Int64
}

func newFakeGateway(t *testing.T) *fakeGateway {
	return &fakeGateway{t: t, key: "smtgw_sk_test_good", keys: map[string]string{}}
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	answer := func(status int, v string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, v)
	}
	fail := func(status int, name string) {
		answer(status, fmt.Sprintf(`{"data":null,"error":{"status":%d,"name":%q,"message":"x"}}`, status, name))
	}
	if r.Header.Get("X-API-Key") != g.key {
		fail(401, "UNAUTHORIZED")
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payments":
		var p struct {
			Amount, Currency, CustomerID, MerchantRef string
			Card                                      struct{ Number, ExpiryMonth, ExpiryYear, Cvv, HolderName string }
			Billing                                   struct{ Email, Phone, Country, Address, City, PostalCode string }
			Metadata                                  map[string]string
		}
		key := r.Header.Get("Idempotency-Key")
		if json.Unmarshal(body, &p) != nil || key == "" || p.Amount == "" || p.Currency != "EUR" || p.CustomerID == "" ||
			p.MerchantRef == "" || len(p.Card.Number) < 13 || p.Card.Cvv == "" || p.Billing.Email == "" ||
			p.Billing.City == "" || p.Metadata["orderId"] != p.MerchantRef || r.Header.Get("Content-Type") != "application/json" {
			g.bad.Add(1)
			fail(400, "INVALID_REQUEST")
			return
		}
		g.mu.Lock()
		prev, seen := g.keys[key]
		g.keys[key] = string(body)
		g.mu.Unlock()
		if seen {
			if prev != string(body) {
				fail(409, "DUPLICATE_REQUEST")
				return
			}
			g.replays.Add(1)
		}
		if strings.HasPrefix(p.Card.Number, "4000") {
			fail(400, "CARD_DECLINED")
			return
		}
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", g.ids.Add(1))
		answer(201, `{"data":{"id":"`+id+`","status":"captured"}}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/refunds":
		var rf struct{ TransactionID, Amount, Currency string }
		if json.Unmarshal(body, &rf) != nil || rf.TransactionID == "" || rf.Amount != refundAmount || r.Header.Get("Idempotency-Key") == "" {
			g.bad.Add(1)
			fail(400, "INVALID_REQUEST")
			return
		}
		g.mu.Lock()
		g.refunds = append(g.refunds, rf.TransactionID)
		g.mu.Unlock()
		answer(201, `{"data":{"id":"r","status":"created"}}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/payments/"):
		g.gets.Add(1)
		answer(200, `{"data":{"id":"x"}}`)
	default:
		fail(404, "NOT_FOUND")
	}
}

func TestRunCountsOperationsAndErrors(t *testing.T) {
	g := newFakeGateway(t)
	srv := httptest.NewServer(g)
	defer srv.Close()
	mix, err := ParseMix("approve=40,decline=20,refund=20,unauthorized=20")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{
		BaseURL: srv.URL, SecretKey: g.key, Concurrency: 4, Requests: 400, Mix: mix,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Rec
	if res.Operations != 400 {
		t.Fatalf("operations %d, want 400", res.Operations)
	}
	if g.bad.Load() != 0 {
		t.Fatalf("the fake gateway refused %d malformed requests", g.bad.Load())
	}
	unexpected, expected := rec.Errors()
	if len(unexpected) != 0 {
		t.Fatalf("unexpected errors %v", unexpected)
	}
	if n, s := rec.TransportErrors(); n != 0 {
		t.Fatalf("%d transport errors: %s", n, s)
	}
	declines, unauth := expected["CARD_DECLINED"], expected["UNAUTHORIZED"]
	refunds := rec.Kind(KindRefund).Count()
	// Each weight of 20% gives 80 of 400 on average; allow a wide band.
	for name, n := range map[string]int64{"declines": declines, "401s": unauth, "refunds": int64(refunds)} {
		if n < 40 || n > 130 {
			t.Errorf("%s: %d of 400 operations, want about 80", name, n)
		}
	}
	if got := int64(rec.Kind(KindUnauthorized).Count()); got != unauth {
		t.Errorf("unauthorized requests %d, 401s %d", got, unauth)
	}
	// Every operation but unauthorized creates a payment; refunds add one
	// request each.
	if got, want := rec.Count(), 400+int64(refunds); got != want {
		t.Errorf("requests %d, want %d", got, want)
	}
	if got, want := rec.Payments(), 400-unauth; got != want {
		t.Errorf("payments %d, want %d", got, want)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if int64(len(g.keys)) != 400-unauth {
		t.Errorf("%d distinct idempotency keys for %d payments", len(g.keys), 400-unauth)
	}
	if uint64(len(g.refunds)) != refunds {
		t.Errorf("%d refunds reached the server, %d recorded", len(g.refunds), refunds)
	}
}

func TestRunUnexpectedErrorsByName(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch n.Add(1) % 4 {
		case 0:
			w.WriteHeader(502)
			io.WriteString(w, `{"data":null,"error":{"status":502,"name":"PROVIDER_ERROR","message":"x"}}`)
		case 1:
			w.WriteHeader(500)
			io.WriteString(w, `not json`)
		case 2:
			// CARD_DECLINED on an approving card is not expected.
			w.WriteHeader(400)
			io.WriteString(w, `{"data":null,"error":{"status":400,"name":"CARD_DECLINED","message":"x"}}`)
		default:
			w.WriteHeader(201)
			io.WriteString(w, `{"data":{"id":"x"}}`)
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{BaseURL: srv.URL, SecretKey: "k", Concurrency: 1, Requests: 100, Mix: Mix{OpApprove: 1}})
	if err != nil {
		t.Fatal(err)
	}
	unexpected, expected := res.Rec.Errors()
	want := map[string]int64{"PROVIDER_ERROR": 25, "HTTP_500": 25, "CARD_DECLINED": 25}
	if fmt.Sprint(unexpected) != fmt.Sprint(want) || len(expected) != 0 {
		t.Fatalf("errors %v expected %v, want %v and none", unexpected, expected, want)
	}
	if got := res.Rec.ErrorCount(); got != 75 {
		t.Fatalf("ErrorCount %d, want 75", got)
	}
	// A processed decline counts as a payment, a provider error does not.
	if got := res.Rec.Payments(); got != 50 {
		t.Fatalf("payments %d, want 50", got)
	}
}

func TestRunTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	url := srv.URL
	srv.Close() // nothing listens any more
	res, err := Run(context.Background(), Config{BaseURL: url, SecretKey: "k", Concurrency: 2, Requests: 10, Mix: Mix{OpApprove: 1}})
	if err != nil {
		t.Fatal(err)
	}
	n, sample := res.Rec.TransportErrors()
	if n != 10 || sample == "" {
		t.Fatalf("transport errors %d (%q), want 10", n, sample)
	}
	if res.Rec.ErrorCount() != 10 {
		t.Fatalf("ErrorCount %d", res.Rec.ErrorCount())
	}
}

func TestRunReplayAndGetUseThePool(t *testing.T) {
	g := newFakeGateway(t)
	srv := httptest.NewServer(g)
	defer srv.Close()
	res, err := Run(context.Background(), Config{
		BaseURL: srv.URL, SecretKey: g.key, Concurrency: 3, Requests: 200, Pool: 20, Mix: Mix{OpReplay: 1, OpGet: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	created := len(g.keys)
	g.mu.Unlock()
	if created != 20 {
		t.Fatalf("%d payments created, want the pool of 20", created)
	}
	rp, gt := res.Rec.Kind(KindReplay).Count(), res.Rec.Kind(KindGet).Count()
	if rp+gt != 200 || int64(rp) != g.replays.Load() || int64(gt) != g.gets.Load() {
		t.Fatalf("replays %d (server %d), gets %d (server %d)", rp, g.replays.Load(), gt, g.gets.Load())
	}
	if unexpected, _ := res.Rec.Errors(); len(unexpected) != 0 {
		t.Fatalf("errors %v: a replay must send the same key and body", unexpected)
	}
	// The pool is not measured.
	if res.Rec.Payments() != 0 {
		t.Fatalf("payments %d, want 0", res.Rec.Payments())
	}
}

func TestRunPoolFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		io.WriteString(w, `{"data":null,"error":{"status":401,"name":"UNAUTHORIZED","message":"x"}}`)
	}))
	defer srv.Close()
	_, err := Run(context.Background(), Config{BaseURL: srv.URL, SecretKey: "k", Concurrency: 2, Requests: 10, Mix: Mix{OpGet: 1}})
	if err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Fatalf("err = %v, want the pool's failure naming UNAUTHORIZED", err)
	}
}

// TestRunLatencyPercentiles: a server that answers 90% of requests after
// 1 ms and 10% after 20 ms gives p50 about 1 ms and p99 about 20 ms.
func TestRunLatencyPercentiles(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		d := time.Millisecond
		if n.Add(1)%10 == 0 {
			d = 20 * time.Millisecond
		}
		time.Sleep(d)
		w.WriteHeader(201)
		io.WriteString(w, `{"data":{"id":"x"}}`)
	}))
	defer srv.Close()
	// One client: the schedule of slow answers is exact.
	res, err := Run(context.Background(), Config{BaseURL: srv.URL, SecretKey: "k", Concurrency: 1, Requests: 300, Mix: Mix{OpApprove: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Rec.All()
	p50, p99 := h.Quantile(0.5), h.Quantile(0.99)
	// The sleeps are lower bounds; a loaded machine adds to them.
	if p50 < time.Millisecond || p50 > 8*time.Millisecond {
		t.Errorf("p50 = %v, want about 1ms", p50)
	}
	if p99 < 20*time.Millisecond || p99 > 60*time.Millisecond {
		t.Errorf("p99 = %v, want about 20ms", p99)
	}
	if h.Count() != 300 {
		t.Errorf("count %d", h.Count())
	}
	if len(res.Rec.Timeline()) == 0 {
		t.Error("no timeline")
	}
}

func TestIntendedAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	interval := time.Second / 250
	for i, want := range map[int64]time.Duration{0: 0, 1: 4 * time.Millisecond, 250: time.Second, 2500: 10 * time.Second} {
		if got := intendedAt(t0, interval, i).Sub(t0); got != want {
			t.Errorf("intendedAt(%d) = +%v, want +%v", i, got, want)
		}
	}
}

// TestOpenLoopRate: at 200 operations per second for 1 s, exactly the 200
// operations due in the measurement are sent or counted missed, the run
// takes about a second, and latency counts from the intended start.
func TestOpenLoopRate(t *testing.T) {
	srv := httptest.NewServer(TrivialHandler())
	defer srv.Close()
	res, err := Run(context.Background(), Config{
		BaseURL: srv.URL, SecretKey: "k", Concurrency: 4, Duration: time.Second, Warmup: 200 * time.Millisecond,
		Rate: 200, Mix: Mix{OpApprove: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Operations + res.Missed; got < 199 || got > 201 {
		t.Fatalf("operations %d + missed %d, want 200", res.Operations, res.Missed)
	}
	if res.Missed > 20 {
		t.Errorf("%d operations missed against a trivial server", res.Missed)
	}
	if res.Elapsed < 900*time.Millisecond || res.Elapsed > 3*time.Second {
		t.Errorf("elapsed %v, want about 1s", res.Elapsed)
	}
	// Each second of the timeline holds about 200 requests.
	for _, s := range res.Rec.Timeline() {
		if s.Requests > 202 {
			t.Errorf("second %d has %d requests, more than the rate", s.Second, s.Requests)
		}
	}
}

// TestOpenLoopCountsQueueing: when the server is slower than the rate,
// latency includes the wait for a free client (no coordinated omission).
func TestOpenLoopCountsQueueing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(201)
	}))
	defer srv.Close()
	// One client can serve 50/s; 100/s are asked for half a second.
	res, err := Run(context.Background(), Config{
		BaseURL: srv.URL, SecretKey: "k", Concurrency: 1, Duration: 500 * time.Millisecond, Rate: 100, Mix: Mix{OpApprove: 1},
	})
	checkQueued(t, res, err)
}

// checkQueued checks a run of 50 operations due in half a second, each
// taking 20 ms on one client: some could not start before the end, and the
// later ones waited their predecessors' 20 ms each (no coordinated
// omission).
func checkQueued(t *testing.T, res *Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.Missed == 0 {
		t.Error("nothing missed although the callee is half as fast as the rate")
	}
	if got := res.Operations + res.Missed; got < 49 || got > 51 {
		t.Errorf("operations %d + missed %d, want 50", res.Operations, res.Missed)
	}
	if max := res.Rec.All().Max(); max < 100*time.Millisecond {
		t.Errorf("max latency %v: the queueing was not counted", max)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	srv := httptest.NewServer(TrivialHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, Config{BaseURL: srv.URL, SecretKey: "k", Concurrency: 2, Duration: time.Minute, Mix: Mix{OpApprove: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 10*time.Second || !res.Interrupted {
		t.Fatalf("run took %v, interrupted %v", time.Since(start), res.Interrupted)
	}
	if n, _ := res.Rec.TransportErrors(); n != 0 {
		t.Fatalf("cancelled requests counted as %d transport errors", n)
	}
}

func TestRunBaseline(t *testing.T) {
	var calls atomic.Int64
	res, err := RunBaseline(context.Background(), BaselineConfig{
		Concurrency: 3, Requests: 90,
		Tx: func(ctx context.Context, n int64) error {
			if calls.Add(1)%10 == 0 {
				return errors.New("deadlock detected")
			}
			time.Sleep(time.Millisecond)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rec.Count() != 90 || res.Operations != 90 {
		t.Fatalf("count %d operations %d, want 90", res.Rec.Count(), res.Operations)
	}
	if got := res.Rec.ErrorCount(); got != 9 || res.ErrorSample != "deadlock detected" {
		t.Fatalf("errors %d (%q), want 9", got, res.ErrorSample)
	}
	var rep Report
	rep.PaymentsPerSecond = 100
	rep.SetBaseline(res)
	if b := rep.Baseline; b.Transactions != 90 || b.Errors != 9 || b.TxPerSecond <= 0 || b.Ratio <= 0 {
		t.Fatalf("baseline %+v", b)
	}
}

// TestRunBaselineOpenLoop: with a rate, the baseline is paced like the
// gateway's load: the calls due in the measurement are made or counted
// missed, and a call's latency counts from when it was due, so a database
// slower than the rate shows its queue.
func TestRunBaselineOpenLoop(t *testing.T) {
	// One caller can make 50 calls/s; 100/s are asked for half a second.
	res, err := RunBaseline(context.Background(), BaselineConfig{
		Concurrency: 1, Duration: 500 * time.Millisecond, Rate: 100,
		Tx: func(ctx context.Context, n int64) error {
			time.Sleep(20 * time.Millisecond)
			return nil
		},
	})
	checkQueued(t, res, err)

	// Fast enough: about the rate, nothing missed, latency near a call's.
	res, err = RunBaseline(context.Background(), BaselineConfig{
		Concurrency: 4, Duration: time.Second, Warmup: 100 * time.Millisecond, Rate: 200,
		Tx: func(ctx context.Context, n int64) error {
			time.Sleep(time.Millisecond)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Operations + res.Missed; got < 199 || got > 201 || res.Missed > 20 {
		t.Errorf("operations %d + missed %d, want 200 and few missed", res.Operations, res.Missed)
	}
	if res.Elapsed < 900*time.Millisecond || res.Elapsed > 3*time.Second {
		t.Errorf("elapsed %v, want about 1s", res.Elapsed)
	}
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix(DefaultMix)
	if err != nil || m[OpApprove] != 90 || m[OpDecline] != 5 || m[OpRefund] != 5 || m.String() != DefaultMix {
		t.Fatalf("ParseMix(default) = %v, %v", m, err)
	}
	if m, err := ParseMix(" get = 1 "); err != nil || m.String() != "get=1" || !m.needsPool() {
		t.Fatalf("ParseMix(get) = %v, %v", m, err)
	}
	for _, bad := range []string{"", "approve", "approve=0", "fly=1", "approve=-1", "approve=x", "get=1,get=2"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
	p := newPicker(Mix{OpApprove: 2, OpRefund: 1})
	if p.total != 3 || p.pick(0) != OpApprove || p.pick(1) != OpApprove || p.pick(2) != OpRefund {
		t.Fatalf("picker %+v", p)
	}
}

func TestRunProgress(t *testing.T) {
	srv := httptest.NewServer(TrivialHandler())
	defer srv.Close()
	var mu sync.Mutex
	var seen []Progress
	res, err := Run(context.Background(), Config{
		// The first progress call is due 1 s in: the warmup outlasts it
		// by far, since a loaded machine (the race detector, the other
		// packages' tests) can deliver it 150 ms late.
		BaseURL: srv.URL, SecretKey: "k", Concurrency: 2, Warmup: 2 * time.Second, Duration: 1100 * time.Millisecond,
		Rate: 100, Mix: Mix{OpApprove: 1},
		Progress: func(p Progress) {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || !seen[0].Warmup || seen[0].Elapsed >= 0 || seen[0].Done != 0 {
		t.Fatalf("progress %+v: the first call must be in the warmup, with nothing measured", seen)
	}
	last := seen[len(seen)-1]
	if last.Warmup || last.Elapsed <= 0 || last.Done <= 0 || last.Done > res.Rec.Count() || last.Rate <= 0 {
		t.Fatalf("last progress %+v, run measured %d", last, res.Rec.Count())
	}
}
