package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/score"
)

// --- paygate bench routing: the uplift of success-rate routing ---------------

const benchRoutingSynopsis = "routing [--seed N] [--payments N] [--window N] [--explore P] [--min-samples N]\n" +
	"        [--redis-url URL] [--json]"

const benchRoutingNotes = `Simulates, in this process and with no database, one currency's test payments routed
over three sandbox providers through the gateway's own router, scorer and sandbox
approval logic: sandbox-a approves 95 % of cards, sandbox-b 85 %, sandbox-c 75 %.
sandbox-a degrades to 60 % halfway through (its approval rate overridden as
'paygate providers set-approval' does) and recovers at 70 % of the run. The same
seeded sequence of payments (ids, card brands: 70 % visa, 30 % mastercard) runs once
with the route's strategy priority (sandbox-a, then b, then c) and once with
success_rate (--window, --explore, --min-samples as in the configuration file). A
sandbox's answer depends only on its id and the payment id, so a payment gets the same
answer from a provider in both runs.

Reported per strategy: the authorization rate overall and per phase; the payments it
took after the degradation until sandbox-a had less than half of the last 100
payments (moved away), and after the recovery until it had half again (came back);
the routing decision's cost (the route's choice for one payment, timed around it, in
ns). With --redis-url (a loopback Redis) success_rate runs once more with the scores
shared through Redis: the decision reads this node's copy of the shared counters, the
outcome's record is one script; Redis round trips per payment are counted. The run's
keys are removed at the end. The scorer's clock advances 10 ms per payment.

--json prints one JSON object: seed, payments, providers [{id, approvalRate}],
degradeAt, recoverAt, degradedRate, window, explore, minSamples, runs [{strategy,
scores, payments, approved, authorizationRate, phases [{name, from, to,
authorizationRate, degradedShare}], shares {ID: share}, movedAwayAfter, cameBackAfter,
decisionNsPerPayment, redisRoundTripsPerPayment}] (null where it never happened or
does not apply).`

// The simulation's scenario.
const (
	simCurrency      = "EUR"
	simDegraded      = "sandbox-a"
	simDegradedRate  = 0.6
	simShareOf       = 100 // payments the degraded provider's share is measured over
	simTick          = 10 * time.Millisecond
	simDefaultSeed   = 1
	simDefaultAmount = 2500
)

// simProviders are the scenario's providers, in the priority route's order.
var simProviders = []simProviderSpec{{"sandbox-a", 0.95}, {"sandbox-b", 0.85}, {"sandbox-c", 0.75}}

type simProviderSpec struct {
	ID           string  `json:"id"`
	ApprovalRate float64 `json:"approvalRate"`
}

// simCards are the scenario's card numbers by brand, outside the sandbox's
// test-card table so that the approval rate applies.
var simCards = []struct{ brand, number string }{
	{"visa", "4111111111111111"},
	{"mastercard", "5105105105105100"},
}

// routingSimConfig is the parsed command line of bench routing.
type routingSimConfig struct {
	Seed     uint64
	Payments int
	Settings score.Settings
	RedisURL string
	JSON     bool
}

// routingSimReport is the --json output of bench routing.
type routingSimReport struct {
	Seed         uint64            `json:"seed"`
	Payments     int               `json:"payments"`
	Providers    []simProviderSpec `json:"providers"`
	DegradeAt    int               `json:"degradeAt"`
	RecoverAt    int               `json:"recoverAt"`
	DegradedRate float64           `json:"degradedRate"`
	Window       int               `json:"window"`
	Explore      int               `json:"explore"`
	MinSamples   int               `json:"minSamples"`
	Runs         []simRun          `json:"runs"`
}

// simRun is one strategy's run.
type simRun struct {
	Strategy string `json:"strategy"`
	// Scores is where a success_rate run keeps its scores: "in-process"
	// or "redis"; "" for priority.
	Scores            string             `json:"scores"`
	Payments          int                `json:"payments"`
	Approved          int                `json:"approved"`
	AuthorizationRate float64            `json:"authorizationRate"`
	Phases            []simPhase         `json:"phases"`
	Shares            map[string]float64 `json:"shares"`
	// MovedAwayAfter and CameBackAfter count payments from the
	// degradation (recovery) until the degraded provider had less than
	// half (half or more) of the last simShareOf payments; nil: never
	// (CameBackAfter is nil too for a run that never moved away).
	MovedAwayAfter *int `json:"movedAwayAfter"`
	CameBackAfter  *int `json:"cameBackAfter"`
	// DecisionNs is the mean time of one routing decision.
	DecisionNs float64 `json:"decisionNsPerPayment"`
	// RedisRoundTrips is per payment, nil without Redis.
	RedisRoundTrips *float64 `json:"redisRoundTripsPerPayment"`
}

// simPhase is one phase of the scenario: before the degradation, during
// it, after the recovery.
type simPhase struct {
	Name              string  `json:"name"`
	From              int     `json:"from"` // first payment (0-based)
	To                int     `json:"to"`   // after the last
	AuthorizationRate float64 `json:"authorizationRate"`
	// DegradedShare is the share of the phase's payments sent to the
	// degraded provider first.
	DegradedShare float64 `json:"degradedShare"`
}

func cmdBenchRouting(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("bench routing", benchRoutingSynopsis)
	fs.summary = "simulate success-rate routing against priority on the same seeded payments, in process"
	fs.notes = benchRoutingNotes
	var cfg routingSimConfig
	def := score.Defaults()
	fs.Uint64Var(&cfg.Seed, "seed", simDefaultSeed, "random `seed` of the payments and of the exploration")
	fs.IntVar(&cfg.Payments, "payments", 20000, "`N` payments per run, at least 1000")
	fs.IntVar(&cfg.Settings.Window, "window", def.Window, "success_rate window: `N` attempts")
	fs.IntVar(&cfg.Settings.Explore, "explore", def.Explore, "success_rate exploration: `P` percent of payments")
	fs.IntVar(&cfg.Settings.MinSamples, "min-samples", def.MinSamples, "success_rate minSamples: `N` attempts")
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "also run success_rate with its scores in this loopback Redis (`URL`)")
	fs.BoolVar(&cfg.JSON, "json", false, "print the report as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	switch s := cfg.Settings; {
	case cfg.Payments < 1000 || cfg.Payments > 10_000_000:
		return usageErrorf("--payments must be from 1000 to 10000000")
	case s.Window < 1 || s.Window > score.MaxWindow:
		return usageErrorf("--window must be from 1 to %d", score.MaxWindow)
	case s.Explore < 0 || s.Explore > 100:
		return usageErrorf("--explore must be from 0 to 100")
	case s.MinSamples < 0 || s.MinSamples > score.MaxWindow:
		return usageErrorf("--min-samples must be from 0 to %d", score.MaxWindow)
	}
	if cfg.RedisURL != "" {
		if err := checkLoopbackRedis(cfg.RedisURL); err != nil {
			return usageErrorf("--redis-url: %v", err)
		}
	}
	rep, err := runRoutingSim(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.JSON {
		return writeJSON(c.stdout, rep)
	}
	return printRoutingSim(c.stdout, rep)
}

// checkLoopbackRedis accepts a redis:// URL whose host is on loopback: the
// bench sends nothing off this machine.
func checkLoopbackRedis(raw string) error {
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return errors.New("not a Redis URL (redis://HOST:PORT/DB)")
	}
	host, _, err := net.SplitHostPort(opt.Addr)
	if err != nil {
		return errors.New("not a Redis URL (redis://HOST:PORT/DB)")
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address: bench only uses this machine", host)
}

// runRoutingSim runs the scenario with each strategy.
func runRoutingSim(ctx context.Context, cfg routingSimConfig) (routingSimReport, error) {
	rep := routingSimReport{
		Seed: cfg.Seed, Payments: cfg.Payments, Providers: simProviders,
		DegradeAt: cfg.Payments / 2, RecoverAt: cfg.Payments * 7 / 10, DegradedRate: simDegradedRate,
		Window: cfg.Settings.Window, Explore: cfg.Settings.Explore, MinSamples: cfg.Settings.MinSamples,
	}
	payments := simPayments(cfg.Seed, cfg.Payments)
	type runSpec struct {
		strategy string
		redis    bool // the scores in Redis
	}
	runs := []runSpec{{provider.StrategyPriority, false}, {provider.StrategySuccessRate, false}}
	if cfg.RedisURL != "" {
		runs = append(runs, runSpec{provider.StrategySuccessRate, true})
	}
	for _, r := range runs {
		var sc *simRedis
		if r.redis {
			var err error
			if sc, err = openSimRedis(ctx, cfg.RedisURL); err != nil {
				return rep, err
			}
		}
		run, err := simulate(ctx, cfg, rep, r.strategy, payments, sc)
		if sc != nil {
			if cerr := sc.close(ctx); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return rep, err
		}
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

// simPayment is one payment of the sequence both strategies route.
type simPayment struct {
	id     string
	brand  string
	number string
}

// simPayments draws the sequence from the seed.
func simPayments(seed uint64, n int) []simPayment {
	rnd := rand.New(rand.NewPCG(seed, 1))
	out := make([]simPayment, n)
	for i := range out {
		card := simCards[0]
		if rnd.IntN(100) >= 70 {
			card = simCards[1]
		}
		out[i] = simPayment{id: "sim_" + strconv.FormatUint(seed, 10) + "_" + strconv.Itoa(i), brand: card.brand, number: card.number}
	}
	return out
}

// simConfig is the configuration file of a run: the scenario's sandboxes
// and one route for the currency with the strategy.
func simConfig(strategy string, s score.Settings) string {
	var b strings.Builder
	b.WriteString("providers:\n")
	ids := make([]string, len(simProviders))
	for i, p := range simProviders {
		ids[i] = p.ID
		fmt.Fprintf(&b, "  - {id: %s, kind: sandbox, sandbox: {approvalRate: %s}}\n", p.ID, strconv.FormatFloat(p.ApprovalRate, 'f', -1, 64))
	}
	b.WriteString("routes:\n  test:\n")
	list := "[" + strings.Join(ids, ", ") + "]"
	if strategy == provider.StrategySuccessRate {
		fmt.Fprintf(&b, "    %s: {providers: %s, strategy: success_rate, window: %d, explore: %d, minSamples: %d}\n",
			simCurrency, list, s.Window, s.Explore, s.MinSamples)
	} else {
		fmt.Fprintf(&b, "    %s: %s\n", simCurrency, list)
	}
	return b.String()
}

// simClock is the scorer's clock: it moves only when the simulation
// advances it.
type simClock struct{ now atomic.Int64 }

func (c *simClock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *simClock) advance(d time.Duration) { c.now.Add(int64(d)) }
func newSimClock(start time.Time) *simClock {
	c := &simClock{}
	c.now.Store(start.UnixNano())
	return c
}

// lockedRand is a seeded random source safe for concurrent use, for the
// router's exploration.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) IntN(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

// simulate routes the payments with the strategy, through the router the
// configuration builds, and measures the run.
func simulate(ctx context.Context, cfg routingSimConfig, rep routingSimReport, strategy string, payments []simPayment, rs *simRedis) (simRun, error) {
	routing, err := provider.ParseConfig("bench-routing.yaml", []byte(simConfig(strategy, cfg.Settings)), func(string) (string, bool) { return "", false })
	if err != nil {
		return simRun{}, fmt.Errorf("bench routing: %w", err)
	}
	router, err := routing.Build(provider.BuildOptions{})
	if err != nil {
		return simRun{}, fmt.Errorf("bench routing: %w", err)
	}
	degraded, ok := router.Overridable(paygate.ModeTest, simDegraded)
	if !ok {
		return simRun{}, fmt.Errorf("bench routing: %s takes no approval rate", simDegraded)
	}
	router.SetRand(&lockedRand{r: rand.New(rand.NewPCG(cfg.Seed, 2))})
	clock := newSimClock(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC))
	run := simRun{Strategy: strategy, Payments: len(payments), Shares: map[string]float64{}}
	brandSuffix := ""
	if strategy == provider.StrategySuccessRate {
		run.Scores = "in-process"
		if rs != nil {
			run.Scores = "redis"
			router.SetScorer(score.NewRedis(rs.client, score.RedisConfig{Clock: clock}))
			brandSuffix = rs.brandSuffix
		}
	}

	first := make([]string, len(payments)) // the provider each payment was sent to first
	approved := make([]bool, len(payments))
	var decide time.Duration
	var rtStart int64
	if rs != nil {
		rtStart = rs.roundTrips.Load()
	}
	for i, p := range payments {
		switch i {
		case rep.DegradeAt:
			degraded.SetApprovalOverride(simDegradedRate)
		case rep.RecoverAt:
			degraded.ClearApprovalOverride()
		}
		start := time.Now()
		route := router.RouteCard(paygate.ModeTest, simCurrency, p.brand+brandSuffix)
		decide += time.Since(start)
		if len(route) == 0 {
			return run, errors.New("bench routing: the route is empty")
		}
		first[i] = route[0].ID()
		req := paygate.ChargeRequest{
			PaymentID: p.id, MerchantID: "sim", Mode: paygate.ModeTest,
			Amount: paygate.Money{Amount: simDefaultAmount, Currency: simCurrency},
			Card:   paygate.Card{Number: paygate.PAN(p.number), ExpMonth: 12, ExpYear: 2035, CVV: "123"},
		}
		for _, prov := range route {
			res, err := prov.Charge(ctx, req)
			var pe *paygate.ProviderError
			if errors.As(err, &pe) && pe.Kind == paygate.ProviderUnavailable {
				continue // nothing processed: the next provider of the route
			}
			if err != nil {
				return run, fmt.Errorf("bench routing: payment %d at %s: %w", i, prov.ID(), err)
			}
			approved[i] = res.Status == paygate.PaymentCaptured || res.Status == paygate.PaymentAuthorized
			break
		}
		clock.advance(simTick)
	}
	if rs != nil {
		rt := float64(rs.roundTrips.Load()-rtStart) / float64(len(payments))
		run.RedisRoundTrips = &rt
	}
	run.DecisionNs = float64(decide.Nanoseconds()) / float64(len(payments))
	sent := map[string]int{}
	for i := range payments {
		if approved[i] {
			run.Approved++
		}
		sent[first[i]]++
	}
	for id, n := range sent {
		run.Shares[id] = float64(n) / float64(len(payments))
	}
	run.AuthorizationRate = float64(run.Approved) / float64(len(payments))
	for _, ph := range []simPhase{
		{Name: "before", From: 0, To: rep.DegradeAt},
		{Name: "degraded", From: rep.DegradeAt, To: rep.RecoverAt},
		{Name: "recovered", From: rep.RecoverAt, To: len(payments)},
	} {
		var ok, deg int
		for i := ph.From; i < ph.To; i++ {
			if approved[i] {
				ok++
			}
			if first[i] == simDegraded {
				deg++
			}
		}
		if n := ph.To - ph.From; n > 0 {
			ph.AuthorizationRate, ph.DegradedShare = float64(ok)/float64(n), float64(deg)/float64(n)
		}
		run.Phases = append(run.Phases, ph)
	}
	run.MovedAwayAfter = shareCrossing(first, rep.DegradeAt, rep.RecoverAt, func(share float64) bool { return share < 0.5 })
	if run.MovedAwayAfter != nil { // a strategy that never left has nothing to come back from
		run.CameBackAfter = shareCrossing(first, rep.RecoverAt, len(payments), func(share float64) bool { return share >= 0.5 })
	}
	return run, nil
}

// shareCrossing returns how many payments after from (up to to) it took
// until the degraded provider's share of the last simShareOf payments
// satisfied done, or nil when it never did.
func shareCrossing(first []string, from, to int, done func(share float64) bool) *int {
	count := 0
	for i := from - simShareOf; i < from; i++ {
		if i >= 0 && first[i] == simDegraded {
			count++
		}
	}
	for i := from; i < to; i++ {
		if first[i] == simDegraded {
			count++
		}
		if j := i - simShareOf; j >= 0 && first[j] == simDegraded {
			count--
		}
		if done(float64(count) / simShareOf) {
			n := i - from + 1
			return &n
		}
	}
	return nil
}

// simRedis is the Redis connection of a run with its round trips counted.
type simRedis struct {
	client *redis.Client
	// brandSuffix makes the run's score keys its own, so that neither
	// another run's windows nor a gateway's are read or changed.
	brandSuffix string
	roundTrips  atomic.Int64
}

// openSimRedis connects as the gateway's scorer does (no retries: a
// retried record could count an attempt twice) and counts round trips.
func openSimRedis(ctx context.Context, redisURL string) (*simRedis, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, errors.New("--redis-url: not a Redis URL")
	}
	opt.ContextTimeoutEnabled = true
	opt.DialerRetries = 1
	opt.MaxRetries = -1
	s := &simRedis{client: redis.NewClient(opt), brandSuffix: fmt.Sprintf("~bench%d", time.Now().UnixNano())}
	if err := s.client.Ping(ctx).Err(); err != nil {
		_ = s.client.Close()
		return nil, fmt.Errorf("bench routing: Redis at %s: %w", opt.Addr, err)
	}
	s.client.AddHook(roundTripCounter{&s.roundTrips})
	return s, nil
}

// close removes the run's keys and closes the connection.
func (s *simRedis) close(ctx context.Context) error {
	defer s.client.Close()
	var keys []string
	for _, c := range simCards {
		pattern := score.KeyPrefix + "{" + string(paygate.ModeTest) + ":" + simCurrency + ":" + c.brand + s.brandSuffix + "}:*"
		iter := s.client.Scan(ctx, 0, pattern, 100).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("bench routing: list the run's Redis keys: %w", err)
		}
	}
	if len(keys) > 0 {
		if err := s.client.Del(ctx, keys...).Err(); err != nil {
			return fmt.Errorf("bench routing: remove the run's Redis keys: %w", err)
		}
	}
	return nil
}

// roundTripCounter counts the commands and pipelines sent: one round trip
// each.
type roundTripCounter struct{ n *atomic.Int64 }

func (h roundTripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h roundTripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h roundTripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// printRoutingSim writes the report for a person.
func printRoutingSim(w io.Writer, rep routingSimReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Success-rate routing simulation: seed %d, %d payments in %s per run (70 %% visa, 30 %% mastercard)\n", rep.Seed, rep.Payments, simCurrency)
	var ps []string
	for _, p := range rep.Providers {
		ps = append(ps, fmt.Sprintf("%s %s", p.ID, pct(p.ApprovalRate)))
	}
	fmt.Fprintf(&b, "Providers (approval of cards): %s; %s drops to %s at payment %d and recovers at %d\n",
		strings.Join(ps, ", "), simDegraded, pct(rep.DegradedRate), rep.DegradeAt, rep.RecoverAt)
	fmt.Fprintf(&b, "success_rate: window %d, explore %d %%, minSamples %d\n\n", rep.Window, rep.Explore, rep.MinSamples)
	fmt.Fprintf(&b, "%-26s %9s %9s %9s %9s %12s %12s %12s %10s\n", "strategy", "auth rate", "before", "degraded", "recovered",
		"moved away", "came back", "decision", "Redis RT")
	for _, r := range rep.Runs {
		name := r.Strategy
		if r.Scores != "" {
			name += " (" + r.Scores + ")"
		}
		rt := "-"
		if r.RedisRoundTrips != nil {
			rt = strconv.FormatFloat(*r.RedisRoundTrips, 'f', 3, 64)
		}
		fmt.Fprintf(&b, "%-26s %9s %9s %9s %9s %12s %12s %9.0f ns %10s\n", name, pct(r.AuthorizationRate),
			pct(r.Phases[0].AuthorizationRate), pct(r.Phases[1].AuthorizationRate), pct(r.Phases[2].AuthorizationRate),
			payments(r.MovedAwayAfter), payments(r.CameBackAfter), r.DecisionNs, rt)
	}
	b.WriteString("\nmoved away: payments after the degradation until " + simDegraded + " had less than half of the last 100;\n" +
		"came back: payments after the recovery until it had half again. Decision: mean time of one route choice.\n" +
		"Redis RT: Redis round trips per payment (the decision reads a local copy; recording the outcome is one script).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// pct writes a share as a percentage with one decimal.
func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + " %" }

// payments writes a count of payments, or "never".
func payments(n *int) string {
	if n == nil {
		return "never"
	}
	return strconv.Itoa(*n)
}
