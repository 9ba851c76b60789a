package provider

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/score"
)

// rated is a provider that approves rate percent of its charges (drawn
// from its own seeded source) and declines the others with decline;
// while down it is unavailable (nothing processed).
type rated struct {
	id      string
	rate    atomic.Int32
	decline string
	down    atomic.Bool
	calls   atomic.Int32
	mu      sync.Mutex
	rnd     *rand.Rand
}

func newRated(id string, rate int, seed uint64) *rated {
	p := &rated{id: id, decline: paygate.DeclineGeneric, rnd: rand.New(rand.NewPCG(seed, 1))}
	p.rate.Store(int32(rate))
	return p
}

func (p *rated) ID() string { return p.id }

func (p *rated) Charge(context.Context, paygate.ChargeRequest) (paygate.ChargeResult, error) {
	p.calls.Add(1)
	if p.down.Load() {
		return paygate.ChargeResult{}, &paygate.ProviderError{Kind: paygate.ProviderUnavailable, Provider: p.id, Message: "refused"}
	}
	p.mu.Lock()
	ok := p.rnd.IntN(100) < int(p.rate.Load())
	p.mu.Unlock()
	if ok {
		return paygate.ChargeResult{Status: paygate.PaymentCaptured, ProviderRef: "ref"}, nil
	}
	return paygate.ChargeResult{Status: paygate.PaymentFailed, DeclineCode: p.decline}, nil
}
func (p *rated) Capture(context.Context, paygate.PaymentOp) error { return nil }
func (p *rated) Void(context.Context, paygate.PaymentOp) error    { return nil }
func (p *rated) Refund(context.Context, paygate.RefundRequest) (paygate.RefundResult, error) {
	return paygate.RefundResult{Status: paygate.RefundSucceeded}, nil
}

// lockedRand is a seeded source safe for the router's concurrent use.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) IntN(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

func newScoredRouter(t *testing.T, set score.Settings, b BreakerConfig, route ...paygate.Provider) *Router {
	t.Helper()
	tab, err := NewScoredTable(map[paygate.Mode]Routes{paygate.ModeTest: {Default: route}},
		map[paygate.Mode]map[string]score.Settings{paygate.ModeTest: {defaultRouteKey: set}})
	if err != nil {
		t.Fatal(err)
	}
	var members []Member
	for _, p := range route {
		members = append(members, Member{Mode: paygate.ModeTest, Provider: p, Timeout: time.Second, Breaker: b})
	}
	r, err := NewRouter(tab, members, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.SetRand(&lockedRand{r: rand.New(rand.NewPCG(3, 4))})
	return r
}

// payCard charges like the payment service, with the card's brand; it
// returns who answered ("" when every provider refused).
func payCard(r *Router, brand string) (string, paygate.ChargeResult) {
	for _, p := range r.RouteCard(paygate.ModeTest, "EUR", brand) {
		res, err := p.Charge(context.Background(), paygate.ChargeRequest{
			PaymentID: uuid.Must(uuid.NewV7()).String(), Mode: paygate.ModeTest,
			Amount: paygate.Money{Amount: 100, Currency: "EUR"},
			Card:   paygate.Card{Number: "4242424242424242", ExpMonth: 12, ExpYear: 2040, CVV: "123"},
		})
		if pe, ok := err.(*paygate.ProviderError); ok && pe.Kind == paygate.ProviderUnavailable {
			continue
		}
		return p.ID(), res
	}
	return "", paygate.ChargeResult{}
}

func TestSuccessRateMovesTraffic(t *testing.T) {
	t.Parallel()
	a, b := newRated("a", 60, 1), newRated("b", 95, 2)
	r := newScoredRouter(t, score.Defaults(), DefaultBreaker(), a, b)
	got := map[string]int{}
	for i := range 1500 {
		by, _ := payCard(r, "visa")
		if i >= 500 {
			got[by]++
		}
	}
	if share := float64(got["b"]) / 1000; share < 0.9 || share > 0.99 {
		t.Fatalf("b (95%%) got %.3f of the last 1000 payments, want 0.9 to 0.99 (explore 5%%): %v", share, got)
	}
	// a degrades further, b to 50%: traffic moves back to a.
	a.rate.Store(90)
	b.rate.Store(50)
	clear(got)
	for i := range 1500 {
		by, _ := payCard(r, "visa")
		if i >= 1000 {
			got[by]++
		}
	}
	if share := float64(got["a"]) / 500; share < 0.9 {
		t.Fatalf("after the swap a got %.3f of the last 500 payments: %v", share, got)
	}
	// Another brand is scored apart: its first payments explore.
	var st [2]score.Stat
	r.Scorer().Stats(score.Group{Mode: paygate.ModeTest, Currency: "EUR", Brand: "mastercard"}, []string{"a", "b"}, st[:])
	if st[0].Attempts != 0 || st[1].Attempts != 0 {
		t.Fatalf("mastercard has scores from visa payments: %+v", st)
	}
	scores := r.Scorer().Scores()
	if len(scores) != 2 || scores[0].ProviderID != "a" || scores[0].Attempts != 200 || scores[0].Brand != "visa" ||
		scores[0].Share+scores[1].Share < 0.999 {
		t.Fatalf("scores: %+v", scores)
	}
}

func TestSuccessRateNeverChoosesOpenBreakerOrDrained(t *testing.T) {
	t.Parallel()
	a, b, c := newRated("a", 100, 1), newRated("b", 50, 2), newRated("c", 10, 3)
	set := score.Settings{Window: 50, Explore: 50, MinSamples: 5}
	r := newScoredRouter(t, set, BreakerConfig{Failures: 2, OpenFor: time.Hour, Probes: 1}, a, b, c)
	for range 100 {
		payCard(r, "visa")
	}
	// a, the best, fails until its breaker opens; then it is never chosen.
	a.rate.Store(100)
	failing := &paygate.ProviderError{Kind: paygate.ProviderFailed, Provider: "a", Message: "boom"}
	for range 2 {
		_, _ = r.members[paygate.ModeTest]["a"].cb.Execute(func() (paygate.ChargeResult, error) { return paygate.ChargeResult{}, failing })
	}
	if status(r, "a").Breaker != paygate.BreakerOpen {
		t.Fatalf("a's breaker: %s", status(r, "a").Breaker)
	}
	r.SetDrained(map[string]bool{"c": true})
	for range 200 {
		route := ids(r.RouteCard(paygate.ModeTest, "EUR", "visa"))
		if !slices.Equal(route, []string{"b"}) {
			t.Fatalf("route with a open and c drained: %v, want [b]", route)
		}
	}
}

func TestSuccessRateFailsOverInRouteOrder(t *testing.T) {
	t.Parallel()
	a, b, c := newRated("a", 50, 1), newRated("b", 70, 2), newRated("c", 100, 3)
	set := score.Settings{Window: 100, Explore: 0, MinSamples: 10}
	r := newScoredRouter(t, set, BreakerConfig{Failures: 1000, OpenFor: time.Hour, Probes: 1}, a, b, c)
	for range 200 {
		payCard(r, "visa")
	}
	if got := ids(r.RouteCard(paygate.ModeTest, "EUR", "visa")); !slices.Equal(got, []string{"c", "a", "b"}) {
		t.Fatalf("route: %v, want c first, then a and b in route order", got)
	}
	// c refuses (nothing processed): the payment fails over to a.
	c.down.Store(true)
	if by, _ := payCard(r, "visa"); by != "a" {
		t.Fatalf("after c refused, answered by %q, want a (the route's next)", by)
	}
	// Its refusals count against it: after enough, b (70%) leads.
	for range 300 {
		payCard(r, "visa")
	}
	if got := ids(r.RouteCard(paygate.ModeTest, "EUR", "visa")); got[0] != "b" {
		t.Fatalf("route after c's refusals: %v, want b first", got)
	}
}

func TestSuccessRateIgnoresIssuerDeclines(t *testing.T) {
	t.Parallel()
	// a declines half its cards for insufficient funds: not its fault.
	a, b := newRated("a", 50, 1), newRated("b", 80, 2)
	a.decline = paygate.DeclineInsufficientFunds
	set := score.Settings{Window: 100, Explore: 0, MinSamples: 10}
	r := newScoredRouter(t, set, DefaultBreaker(), a, b)
	for range 300 {
		payCard(r, "visa")
	}
	var st [2]score.Stat
	r.Scorer().Stats(score.Group{Mode: paygate.ModeTest, Currency: "EUR", Brand: "visa"}, []string{"a", "b"}, st[:])
	if st[0].Score() != 1 || st[0].Attempts < 10 {
		t.Fatalf("a's score with only issuer declines: %+v, want 1", st[0])
	}
	if got := ids(r.RouteCard(paygate.ModeTest, "EUR", "visa")); got[0] != "a" {
		t.Fatalf("route: %v, want a first", got)
	}
}

func TestPriorityRouteUnscored(t *testing.T) {
	t.Parallel()
	a, b := newRated("a", 0, 1), newRated("b", 100, 2)
	r := newRouter(t, DefaultBreaker(), time.Second, a, b)
	for range 50 {
		payCard(r, "visa")
	}
	if got := ids(r.RouteCard(paygate.ModeTest, "EUR", "visa")); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("priority route: %v", got)
	}
	if s := r.Scorer().Scores(); len(s) != 0 {
		t.Fatalf("a priority route fed the scorer: %+v", s)
	}
}

// cardFate is a provider whose every charge fails with an error a test
// card produced on purpose (as sandbox.CardOutcomeError does).
type cardFate struct {
	id   string
	kind paygate.ProviderErrorKind
}

type cardFateError struct{ *paygate.ProviderError }

func (e cardFateError) Unwrap() error     { return e.ProviderError }
func (e cardFateError) CardOutcome() bool { return true }

func (p *cardFate) ID() string { return p.id }
func (p *cardFate) Charge(context.Context, paygate.ChargeRequest) (paygate.ChargeResult, error) {
	return paygate.ChargeResult{}, cardFateError{&paygate.ProviderError{Kind: p.kind, Provider: p.id, Message: "simulated"}}
}
func (p *cardFate) Capture(context.Context, paygate.PaymentOp) error { return nil }
func (p *cardFate) Void(context.Context, paygate.PaymentOp) error    { return nil }
func (p *cardFate) Refund(context.Context, paygate.RefundRequest) (paygate.RefundResult, error) {
	return paygate.RefundResult{Status: paygate.RefundSucceeded}, nil
}

// Test cards' simulated errors (0119's PROVIDER_ERROR, 0705's unknown
// outcome, 0259's unavailability) are ignored by the breakers, so by the
// scores too (decisions §12).
func TestSuccessRateIgnoresTestCardErrors(t *testing.T) {
	t.Parallel()
	for _, kind := range []paygate.ProviderErrorKind{paygate.ProviderFailed, paygate.ProviderUnknownOutcome, paygate.ProviderUnavailable} {
		p := &cardFate{id: "a", kind: kind}
		r := newScoredRouter(t, score.Defaults(), DefaultBreaker(), p, newRated("b", 100, 1))
		for _, e := range r.RouteCard(paygate.ModeTest, "EUR", "visa") {
			if e.ID() != "a" {
				continue
			}
			for range 10 {
				_, _ = e.Charge(context.Background(), paygate.ChargeRequest{PaymentID: uuid.Must(uuid.NewV7()).String()})
			}
		}
		if s := r.Scorer().Scores(); len(s) != 0 {
			t.Fatalf("kind %d: test-card errors fed the scores: %+v", kind, s)
		}
	}
}
