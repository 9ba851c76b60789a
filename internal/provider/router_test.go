package provider

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
	"github.com/paygate/paygate/internal/store/plan"
)

// flaky is a provider whose charges fail while failing is set.
type flaky struct {
	id      string
	failing atomic.Bool
	kind    paygate.ProviderErrorKind
	block   bool // wait for the deadline instead of answering
	calls   atomic.Int32
	// deadline is the last call's context deadline.
	mu       sync.Mutex
	deadline time.Time
}

func (f *flaky) ID() string { return f.id }

func (f *flaky) Charge(ctx context.Context, _ paygate.ChargeRequest) (paygate.ChargeResult, error) {
	f.calls.Add(1)
	d, _ := ctx.Deadline()
	f.mu.Lock()
	f.deadline = d
	f.mu.Unlock()
	if f.block {
		<-ctx.Done()
		return paygate.ChargeResult{}, ctx.Err()
	}
	if f.failing.Load() {
		return paygate.ChargeResult{}, &paygate.ProviderError{Kind: f.kind, Provider: f.id, Message: "down"}
	}
	return paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: "ref-" + f.id}, nil
}
func (f *flaky) Capture(context.Context, paygate.PaymentOp) error { return nil }
func (f *flaky) Void(context.Context, paygate.PaymentOp) error    { return nil }
func (f *flaky) Refund(context.Context, paygate.RefundRequest) (paygate.RefundResult, error) {
	return paygate.RefundResult{Status: paygate.RefundSucceeded}, nil
}

func newRouter(t *testing.T, b BreakerConfig, timeout time.Duration, route ...paygate.Provider) *Router {
	t.Helper()
	tab, err := NewTable(map[paygate.Mode]Routes{paygate.ModeTest: {Default: route}})
	if err != nil {
		t.Fatal(err)
	}
	var members []Member
	for _, p := range route {
		members = append(members, Member{Mode: paygate.ModeTest, Provider: p, Timeout: timeout, Breaker: b})
	}
	r, err := NewRouter(tab, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pay charges like the payment service: the route in order, moving on only
// when a provider provably processed nothing. It returns who captured ("" if
// none) and the last error.
func pay(r paygate.Router, currency, number string) (string, error) {
	var last error
	for _, p := range r.Route(paygate.ModeTest, currency) {
		res, err := p.Charge(context.Background(), paygate.ChargeRequest{
			PaymentID: uuid.Must(uuid.NewV7()).String(), Mode: paygate.ModeTest,
			Amount: paygate.Money{Amount: 100, Currency: currency},
			Card:   paygate.Card{Number: paygate.PAN(number), ExpMonth: 12, ExpYear: 2040, CVV: "123"},
		})
		if err == nil {
			if res.Status == paygate.PaymentCaptured {
				return p.ID(), nil
			}
			return "", nil
		}
		last = err
		var pe *paygate.ProviderError
		if !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnavailable {
			break
		}
	}
	return "", last
}

func routeIDs(r paygate.Router, currency string) []string {
	return ids(r.Route(paygate.ModeTest, currency))
}

func status(r *Router, id string) Status {
	for _, s := range r.Statuses() {
		if s.ID == id {
			return s
		}
	}
	return Status{}
}

func TestBreakerOpensAndTrafficMoves(t *testing.T) {
	t.Parallel()
	a, b := &flaky{id: "a", kind: paygate.ProviderUnavailable}, &flaky{id: "b"}
	a.failing.Store(true)
	r := newRouter(t, BreakerConfig{Failures: 3, OpenFor: time.Hour, Probes: 1}, time.Second, a, b)
	for i := range 3 {
		if by, err := pay(r, "EUR", "4242424242424242"); by != "b" || err != nil {
			t.Fatalf("payment %d: captured by %q, %v", i, by, err)
		}
	}
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("route after 3 failures: %v", got)
	}
	if s := status(r, "a"); s.Breaker != paygate.BreakerOpen {
		t.Fatalf("a's breaker: %+v", s)
	}
	select {
	case <-r.Changed():
	default:
		t.Fatal("no change signalled")
	}
	for range 5 {
		if by, _ := pay(r, "EUR", "4242424242424242"); by != "b" {
			t.Fatalf("captured by %q", by)
		}
	}
	if n := a.calls.Load(); n != 3 {
		t.Fatalf("a was called %d times; an open breaker must keep it out", n)
	}
}

func TestBreakerClosesAfterProbe(t *testing.T) {
	t.Parallel()
	a, b := &flaky{id: "a", kind: paygate.ProviderFailed}, &flaky{id: "b"}
	a.failing.Store(true)
	const openFor = 150 * time.Millisecond
	r := newRouter(t, BreakerConfig{Failures: 2, OpenFor: openFor, Probes: 1}, time.Second, a, b)
	// ProviderFailed does not fail over, but counts against the breaker.
	for range 2 {
		if by, err := pay(r, "EUR", "4242424242424242"); by != "" || err == nil {
			t.Fatalf("a failing provider captured (%q, %v)", by, err)
		}
	}
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("route with a open: %v", got)
	}
	// A failed probe opens it again.
	waitFor(t, 5*time.Second, "the half-open probe", func() bool { return slices.Equal(routeIDs(r, "EUR"), []string{"a", "b"}) })
	if s := status(r, "a"); s.Breaker != paygate.BreakerHalfOpen {
		t.Fatalf("a's breaker after %s: %+v", openFor, s)
	}
	if _, err := pay(r, "EUR", "4242424242424242"); err == nil {
		t.Fatal("the failed probe succeeded")
	}
	if s := status(r, "a"); s.Breaker != paygate.BreakerOpen {
		t.Fatalf("a's breaker after a failed probe: %+v", s)
	}
	// A successful probe closes it.
	a.failing.Store(false)
	waitFor(t, 5*time.Second, "the next half-open probe", func() bool { return slices.Equal(routeIDs(r, "EUR"), []string{"a", "b"}) })
	if by, err := pay(r, "EUR", "4242424242424242"); by != "a" || err != nil {
		t.Fatalf("probe: %q, %v", by, err)
	}
	if s := status(r, "a"); s.Breaker != paygate.BreakerClosed {
		t.Fatalf("a's breaker after a good probe: %+v", s)
	}
}

// TestBreakerHalfOpenLetsOneProbe: while the probe runs, other payments go
// to the next provider.
func TestBreakerHalfOpenLetsOneProbe(t *testing.T) {
	t.Parallel()
	a, b := &flaky{id: "a", kind: paygate.ProviderUnavailable}, &flaky{id: "b"}
	a.failing.Store(true)
	r := newRouter(t, BreakerConfig{Failures: 1, OpenFor: 50 * time.Millisecond, Probes: 1}, time.Second, a, b)
	if by, _ := pay(r, "EUR", "4242424242424242"); by != "b" {
		t.Fatalf("captured by %q", by)
	}
	waitFor(t, 5*time.Second, "half-open", func() bool { return len(routeIDs(r, "EUR")) == 2 })
	route := r.Route(paygate.ModeTest, "EUR")
	a.block = true // the probe hangs until its deadline
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		_, _ = route[0].Charge(context.Background(), paygate.ChargeRequest{PaymentID: "p1", Mode: paygate.ModeTest, Amount: paygate.Money{Amount: 1, Currency: "EUR"}})
	}()
	waitFor(t, 5*time.Second, "the probe to start", func() bool { return a.calls.Load() == 2 })
	_, err := route[0].Charge(context.Background(), paygate.ChargeRequest{PaymentID: "p2", Mode: paygate.ModeTest, Amount: paygate.Money{Amount: 1, Currency: "EUR"}})
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnavailable || a.calls.Load() != 2 {
		t.Fatalf("second request while probing: %v (a called %d times)", err, a.calls.Load())
	}
	<-probeDone
}

// TestTestCardsDoNotFeedBreakers: 0259 fails over and 0119 and declines
// fail, as often as anyone likes, without opening a breaker.
func TestTestCardsDoNotFeedBreakers(t *testing.T) {
	t.Parallel()
	eu := sandbox.New(SandboxEU, []string{"EUR"}, sandbox.FirstOf("EUR"))
	global := sandbox.New(SandboxGlobal, nil)
	r := newRouter(t, BreakerConfig{Failures: 2, OpenFor: time.Hour, Probes: 1}, time.Second, eu, global)
	for range 5 {
		if by, err := pay(r, "EUR", sandbox.CardFailover); by != SandboxGlobal || err != nil {
			t.Fatalf("0259: %q, %v", by, err)
		}
		if _, err := pay(r, "EUR", sandbox.CardProviderError); err == nil {
			t.Fatal("0119 succeeded")
		}
		if by, err := pay(r, "EUR", sandbox.CardDeclined); by != "" || err != nil {
			t.Fatalf("0002: %q, %v", by, err)
		}
	}
	for _, s := range r.Statuses() {
		if s.Breaker != paygate.BreakerClosed {
			t.Fatalf("%s's breaker is %s after test cards", s.ID, s.Breaker)
		}
	}
}

// TestFailureRateFeedsBreaker: the sandbox's failure rate behaves like an
// outage: failover, and the breaker opens.
func TestFailureRateFeedsBreaker(t *testing.T) {
	t.Parallel()
	eu := sandbox.New(SandboxEU, []string{"EUR"}, sandbox.WithFailureRate(1))
	global := sandbox.New(SandboxGlobal, nil)
	r := newRouter(t, BreakerConfig{Failures: 3, OpenFor: time.Hour, Probes: 1}, time.Second, eu, global)
	for range 4 {
		if by, err := pay(r, "EUR", sandbox.CardVisa); by != SandboxGlobal || err != nil {
			t.Fatalf("captured by %q, %v", by, err)
		}
	}
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{SandboxGlobal}) {
		t.Fatalf("route: %v", got)
	}
}

// TestTimeoutNeverFailsOver: a timeout is an unknown outcome: no failover,
// and it counts against the breaker.
func TestTimeoutNeverFailsOver(t *testing.T) {
	t.Parallel()
	slow := sandbox.New(SandboxEU, []string{"EUR"}, sandbox.WithLatency(time.Hour))
	b := &flaky{id: "b"}
	r := newRouter(t, BreakerConfig{Failures: 1, OpenFor: time.Hour, Probes: 1}, 50*time.Millisecond, slow, b)
	by, err := pay(r, "EUR", sandbox.CardVisa)
	var pe *paygate.ProviderError
	if by != "" || !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnknownOutcome || b.calls.Load() != 0 {
		t.Fatalf("timeout: captured by %q, %v, b called %d times", by, err, b.calls.Load())
	}
	if s := status(r, SandboxEU); s.Breaker != paygate.BreakerOpen {
		t.Fatalf("breaker after a timeout: %s", s.Breaker)
	}
	// A connector answering the bare context error counts the same.
	blocking := &flaky{id: "c", block: true}
	r = newRouter(t, BreakerConfig{Failures: 1, OpenFor: time.Hour, Probes: 1}, 20*time.Millisecond, blocking, b)
	_, err = pay(r, "EUR", sandbox.CardVisa)
	if !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnknownOutcome || b.calls.Load() != 0 {
		t.Fatalf("bare deadline: %v", err)
	}
}

func TestDrainAndRestore(t *testing.T) {
	t.Parallel()
	a, b := &flaky{id: "a"}, &flaky{id: "b"}
	r := newRouter(t, DefaultBreaker(), time.Second, a, b)
	r.SetDrained(map[string]bool{"a": true, "x": true})
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("route with a drained: %v", got)
	}
	if by, _ := pay(r, "EUR", "4242424242424242"); by != "b" || a.calls.Load() != 0 {
		t.Fatalf("captured by %q, a called %d times", by, a.calls.Load())
	}
	if !status(r, "a").Drained || status(r, "b").Drained {
		t.Fatalf("statuses: %+v", r.Statuses())
	}
	// A drained provider still serves its own payments.
	if p, ok := r.Provider(paygate.ModeTest, "a"); !ok || p != paygate.Provider(a) {
		t.Fatalf("Provider(a) = %v, %v; want a itself", p, ok)
	}
	// Everything drained: the route's providers refuse, nothing is sent.
	r.SetDrained(map[string]bool{"a": true, "b": true})
	by, err := pay(r, "EUR", "4242424242424242")
	var pe *paygate.ProviderError
	if by != "" || !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnavailable || a.calls.Load()+b.calls.Load() != 1 {
		t.Fatalf("all drained: %q, %v (calls %d, %d)", by, err, a.calls.Load(), b.calls.Load())
	}
	r.SetDrained(map[string]bool{"a": false})
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("route after restore: %v", got)
	}
}

func TestRouteSkipsCurrencyNotServed(t *testing.T) {
	t.Parallel()
	us := sandbox.New(SandboxUS, []string{"USD"})
	global := sandbox.New(SandboxGlobal, nil)
	r := newRouter(t, DefaultBreaker(), time.Second, us, global)
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{SandboxGlobal}) {
		t.Fatalf("EUR: %v", got)
	}
	if got := routeIDs(r, "usd"); !slices.Equal(got, []string{SandboxUS, SandboxGlobal}) {
		t.Fatalf("USD: %v", got)
	}
	if got := r.Route(paygate.ModeLive, "EUR"); len(got) != 0 {
		t.Fatalf("live: %v", ids(got))
	}
}

func TestChargeBudget(t *testing.T) {
	t.Parallel()
	if ChargeBudget+2*time.Second > paygate.PaymentLease {
		t.Fatalf("ChargeBudget %s leaves too little of the %s lease", ChargeBudget, paygate.PaymentLease)
	}
	a := &flaky{id: "a"}
	r := newRouter(t, DefaultBreaker(), 10*time.Second, a)
	charge := func(created time.Time) error {
		id := uuid.Must(uuid.NewV7())
		// Rewrite the id's timestamp (its first 48 bits, milliseconds).
		ms := uint64(created.UnixMilli())
		for i := range 6 {
			id[i] = byte(ms >> (40 - 8*i))
		}
		_, err := r.Route(paygate.ModeTest, "EUR")[0].Charge(context.Background(), paygate.ChargeRequest{
			PaymentID: id.String(), Mode: paygate.ModeTest, Amount: paygate.Money{Amount: 1, Currency: "EUR"},
		})
		return err
	}
	// Created long ago: refused, nothing sent.
	err := charge(time.Now().Add(-ChargeBudget - time.Second))
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnavailable || a.calls.Load() != 0 {
		t.Fatalf("over budget: %v, %d calls", err, a.calls.Load())
	}
	// Created 14 s ago: the call's deadline is the budget's end, not the
	// provider's 10 s timeout.
	created := time.Now().Add(-14 * time.Second)
	if err := charge(created); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	d := a.deadline
	a.mu.Unlock()
	if end := created.Truncate(time.Millisecond).Add(ChargeBudget); d.After(end) || d.Before(end.Add(-time.Second)) {
		t.Fatalf("deadline %s, want about %s", d, end)
	}
	// Created now: the provider's timeout.
	start := time.Now()
	if err := charge(start); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	d = a.deadline
	a.mu.Unlock()
	if d.Before(start.Add(9*time.Second)) || d.After(time.Now().Add(10*time.Second)) {
		t.Fatalf("deadline %s, want about 10s from %s", d, start)
	}
}

func TestRouterProviders(t *testing.T) {
	t.Parallel()
	a, b, spare := &flaky{id: "a"}, &flaky{id: "b"}, &flaky{id: "spare"}
	tab, err := NewTable(map[paygate.Mode]Routes{paygate.ModeTest: {Default: []paygate.Provider{b, a}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(tab, []Member{{Mode: paygate.ModeTest, Provider: spare, Kind: "sandbox"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Providers(paygate.ModeTest)); !slices.Equal(got, []string{"a", "b", "spare"}) {
		t.Fatalf("Providers = %v", got)
	}
	// A provider in no route is kept for the payments it processed.
	if p, ok := r.Provider(paygate.ModeTest, "spare"); !ok || p != paygate.Provider(spare) {
		t.Fatal("spare not found")
	}
	if _, ok := r.Provider(paygate.ModeLive, "a"); ok {
		t.Fatal("a found in live mode")
	}
	if _, err := NewRouter(tab, []Member{{Mode: paygate.ModeTest, Provider: &flaky{id: "a"}}}, nil); err == nil {
		t.Fatal("a member that is not the table's provider was accepted")
	}
}

func TestBuildFromConfig(t *testing.T) {
	t.Parallel()
	raw := `
providers:
  - id: eu
    kind: sandbox
    currencies: [EUR]
    timeout: 2s
    sandbox: {latency: 10ms}
    breaker: {failures: 2, openFor: 1s}
  - id: world
    kind: sandbox
  - id: spare
    kind: sandbox
routes:
  test:
    EUR: [eu, world]
    default: [world, eu]
`
	cfg, err := ParseConfig("x.yaml", []byte(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cfg.Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{"eu", "world"}) {
		t.Fatalf("EUR: %v", got)
	}
	// eu does not take USD: the default route skips it.
	if got := routeIDs(r, "USD"); !slices.Equal(got, []string{"world"}) {
		t.Fatalf("USD: %v", got)
	}
	// 0259 fails over once where eu heads the route, and world heads the
	// default route, with eu (which does not take USD) behind it.
	if by, err := pay(r, "EUR", sandbox.CardFailover); by != "world" || err != nil {
		t.Fatalf("0259 EUR: %q, %v", by, err)
	}
	// world heads the default route, but nobody behind it takes USD: no
	// failover there, world captures.
	if by, err := pay(r, "USD", sandbox.CardFailover); by != "world" || err != nil {
		t.Fatalf("0259 USD: %q, %v", by, err)
	}
	if got := ids(r.Providers(paygate.ModeTest)); !slices.Equal(got, []string{"eu", "spare", "world"}) {
		t.Fatalf("providers: %v", got)
	}
	if s := status(r, "eu"); s.Timeout != 2*time.Second || s.Kind != KindSandbox || !slices.Equal(s.Currencies, []string{"EUR"}) {
		t.Fatalf("eu: %+v", s)
	}
	if got := r.Route(paygate.ModeLive, "EUR"); len(got) != 0 {
		t.Fatalf("live: %v", ids(got))
	}
}

func waitFor(t *testing.T, within time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTimeoutCardDoesNotFeedBreaker: card 0705's simulated timeout is an
// unknown outcome (no failover) that says nothing of the provider's health.
func TestTimeoutCardDoesNotFeedBreaker(t *testing.T) {
	t.Parallel()
	eu := sandbox.New(SandboxEU, []string{"EUR"})
	b := &flaky{id: "b"}
	r := newRouter(t, BreakerConfig{Failures: 1, OpenFor: time.Hour, Probes: 1}, 5*time.Second, eu, b)
	_, err := pay(r, "EUR", sandbox.CardTimeout)
	var pe *paygate.ProviderError
	if !errors.As(err, &pe) || pe.Kind != paygate.ProviderUnknownOutcome || b.calls.Load() != 0 {
		t.Fatalf("0705: %v, next provider called %d times", err, b.calls.Load())
	}
	if s := status(r, SandboxEU); s.Breaker != paygate.BreakerClosed {
		t.Fatalf("breaker after 0705: %s", s.Breaker)
	}
}

// A route hands out providers behind breakers; whether the payment's insert
// may skip its own flush depends on what the providers behind them say
// (plan.GatewayLedger), so the wrapper must pass it on.
func TestRouteLedgerInGateway(t *testing.T) {
	t.Parallel()
	lazy := func(route []paygate.Provider) bool { return plan.LazyCreate(paygate.NewPayment{Route: route}) }
	global := sandbox.New(SandboxGlobal, nil)
	remote := &flaky{id: "remote"}
	if r := newRouter(t, DefaultBreaker(), time.Second, sandbox.New(SandboxEU, nil), global); !lazy(r.Route(paygate.ModeTest, "EUR")) {
		t.Fatal("a route of sandboxes: want ledger in gateway")
	}
	if r := newRouter(t, DefaultBreaker(), time.Second, global, remote); lazy(r.Route(paygate.ModeTest, "EUR")) {
		t.Fatal("a route with a remote provider after a sandbox: want no ledger in gateway")
	}
	if lazy(nil) {
		t.Fatal("an empty route: want no ledger in gateway")
	}
}

// The same holds for whether a charge may be made before its payment is
// stored (payment.OutcomeRecorder): the route entry passes on what its
// provider says, for every entry, a refused one included.
func TestRouteRecordsWithOutcome(t *testing.T) {
	t.Parallel()
	type recorder interface {
		RecordsWithOutcome(paygate.ChargeRequest) bool
	}
	req := paygate.ChargeRequest{PaymentID: "pay-1", Mode: paygate.ModeTest,
		Amount: paygate.Money{Amount: 100, Currency: "EUR"}, Card: paygate.Card{Number: sandbox.CardVisa}}
	outcome := sandbox.New(SandboxEU, nil, sandbox.WithOutcomeLedger(sandbox.NewMemoryLedger()))
	r := newRouter(t, DefaultBreaker(), time.Second, outcome, sandbox.New(SandboxGlobal, nil), &flaky{id: "remote"})
	want := map[string]bool{SandboxEU: true, SandboxGlobal: false, "remote": false}
	route := r.Route(paygate.ModeTest, "EUR")
	if len(route) != len(want) {
		t.Fatalf("route %v, want the three providers", route)
	}
	for _, p := range route {
		rec, ok := p.(recorder)
		if !ok {
			t.Fatalf("route entry %s hides RecordsWithOutcome", p.ID())
		}
		if got := rec.RecordsWithOutcome(req); got != want[p.ID()] {
			t.Errorf("%s: RecordsWithOutcome %v, want %v", p.ID(), got, want[p.ID()])
		}
	}
}
