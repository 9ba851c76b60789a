package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/paygate/paygate/internal/metrics"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider"
	"github.com/paygate/paygate/internal/provider/score"
)

// loadRouting reads the operator configuration of --config; serve refuses to
// start on any mistake in it, naming the file and line.
func loadRouting(path string) (*provider.Config, error) {
	c, err := provider.LoadConfig(path, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// startRouting builds serve's router (the sandboxes keep their ledger in the
// store) and starts the watcher that applies drain states from the database
// and reports this node's breakers. The caller stops the watcher.
func startRouting(ctx context.Context, routing *provider.Config, st paygate.Store, clock paygate.Clock, log *slog.Logger, scorer score.Scorer) (*provider.Router, *provider.Watcher, error) {
	router, err := routing.Build(provider.BuildOptions{Store: st, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	router.SetScorer(scorer)
	w := provider.NewWatcher(router, st, provider.WatcherConfig{Clock: clock, Logger: log})
	if err := w.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("start provider routing: %w", err)
	}
	return router, w, nil
}

// openScorer returns the scorer of the success-rate routes (decisions
// §21): shared by every node through Redis when redisURL is set, falling
// back to this node's own scores while Redis fails (logged, and counted in
// paygate_routing_score_errors_total); in this process otherwise. The
// returned function closes the Redis client.
func openScorer(redisURL string, clock paygate.Clock, log *slog.Logger, mx *metrics.Metrics) (score.Scorer, func() error, error) {
	if redisURL == "" {
		return score.NewMemory(), func() error { return nil }, nil
	}
	s, closeRedis, err := score.OpenRedis(redisURL, score.RedisConfig{Clock: clock, Logger: log, OnError: mx.RoutingScoreError})
	if err != nil {
		return nil, nil, err
	}
	return s, closeRedis, nil
}

// --- paygate providers [--json] | drain|restore --provider ID ----------------

// providersOutput is the --json output of `paygate providers`.
type providersOutput struct {
	// Config is the file the table comes from, or "built-in".
	Config string       `json:"config"`
	Modes  []modeOutput `json:"modes"`
	// Scores are the success-rate router's scores as the serving nodes
	// last wrote them (decisions §21), by mode, currency, brand and
	// provider; empty without success_rate routes or serving nodes.
	Scores []scoreOutput `json:"scores"`
}

// scoreOutput is one provider's score for a currency and card brand: its
// counted attempts and approvals over the route's window, their ratio, and
// its share (0 to 1) of the currency and brand's recent attempts.
//
// The JSON keys are exactly decisions §21's; Mode is for the text table
// only (a provider serves one mode, so the rows are unambiguous without
// it).
type scoreOutput struct {
	Mode     string  `json:"-"`
	Provider string  `json:"provider"`
	Currency string  `json:"currency"`
	Brand    string  `json:"brand"`
	Attempts int64   `json:"attempts"`
	Approved int64   `json:"approved"`
	Score    float64 `json:"score"`
	Share    float64 `json:"share"`
}

type modeOutput struct {
	Mode string `json:"mode"`
	// Routes lists each routed currency, sorted, then "default".
	Routes    []routeOutput    `json:"routes"`
	Providers []providerOutput `json:"providers"`
}

type routeOutput struct {
	Currency string `json:"currency"` // an ISO 4217 code, or "default"
	// Providers is the configured order; Available is what is in force now:
	// without drained providers and those whose breaker is open.
	Providers []string `json:"providers"`
	Available []string `json:"available"`
	// Strategy is priority (the order above) or success_rate (the first
	// provider chosen by score, decisions §21).
	Strategy string `json:"strategy"`
}

type providerOutput struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Currencies is null when the provider takes every currency.
	Currencies []string `json:"currencies"`
	Timeout    string   `json:"timeout"`
	// State is drained, open (some node's breaker is open), half-open, or
	// available.
	State     string          `json:"state"`
	Drained   bool            `json:"drained"`
	ChangedAt *string         `json:"changedAt"` // the last drain or restore
	Breakers  []breakerOutput `json:"breakers"`
	// ApprovalRate is a sandbox's approval rate override (set-approval),
	// left out when none.
	ApprovalRate *float64 `json:"approvalRate,omitempty"`
}

type breakerOutput struct {
	Node  string `json:"node"`
	State string `json:"state"` // closed, half-open or open
	Since string `json:"since"`
}

// providerStateOutput is the --json output of drain and restore.
type providerStateOutput struct {
	Provider  string `json:"provider"`
	Drained   bool   `json:"drained"`
	ChangedAt string `json:"changedAt"`
}

const providersSynopsis = "[--json] [--config FILE] [--database-url URL]\n" +
	"       paygate providers drain|restore --provider ID [--json] [--config FILE] [--database-url URL]\n" +
	"       paygate providers set-approval " + approvalSynopsis

const providersNotes = "Without --config (or PAYGATE_CONFIG) the built-in table is shown: give the file serve uses.\n" +
	"A drain or restore is in force on every serve node within a second."

func cmdProviders(ctx context.Context, c *cli, args []string) error {
	if len(args) > 0 && (args[0] == "drain" || args[0] == "restore") {
		return cmdProviderDrain(ctx, c, args[0], args[1:])
	}
	if len(args) > 0 && args[0] == "set-approval" {
		return cmdProviderSetApproval(ctx, c, args[1:]) // providers_approval.go
	}
	fs := newFlagSet("providers", providersSynopsis)
	fs.notes = providersNotes
	var dbURL, configFile string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&configFile, "config", "", "operator configuration `FILE` (as given to serve)")
	fs.envFlags = append(fs.envFlags, "config")
	fs.BoolVar(&asJSON, "json", false, "print the table as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	routing, router, err := routingOf(configFile)
	if err != nil {
		return err
	}
	var states []paygate.ProviderState
	var reports []paygate.BreakerReport
	var scores []paygate.RoutingScore
	err = withStore(ctx, dbURL, func(ctx context.Context, st paygate.Store) error {
		var err error
		if states, err = st.ProviderStates(ctx); err != nil {
			return fmt.Errorf("read provider states: %w", err)
		}
		if reports, err = st.BreakerReports(ctx, now().Add(-provider.ReportFreshFor)); err != nil {
			return fmt.Errorf("read breaker reports: %w", err)
		}
		for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
			ms, err := st.RoutingScores(ctx, mode, now().Add(-provider.ScoreFreshFor))
			if err != nil {
				return fmt.Errorf("read routing scores: %w", err)
			}
			scores = append(scores, ms...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	out := describeProviders(routing, router, states, reports)
	out.Scores = []scoreOutput{}
	for _, sc := range scores {
		out.Scores = append(out.Scores, scoreOutput{Mode: string(sc.Mode), Provider: sc.ProviderID, Currency: sc.Currency,
			Brand: sc.Brand, Attempts: sc.Attempts, Approved: sc.Approved, Score: sc.Score, Share: sc.Share})
	}
	if asJSON {
		return writeJSON(c.stdout, out)
	}
	return printProviders(c.stdout, out)
}

func cmdProviderDrain(ctx context.Context, c *cli, verb string, args []string) error {
	fs := newFlagSet("providers "+verb, "--provider ID [--json] [--config FILE] [--database-url URL]")
	fs.summary = "take a provider out of every route on every node"
	if verb == "restore" {
		fs.summary = "put a drained provider back in its routes on every node"
	}
	fs.notes = providersNotes
	var dbURL, configFile, id string
	var asJSON bool
	fs.databaseURL(&dbURL)
	fs.StringVar(&configFile, "config", "", "operator configuration `FILE` (as given to serve)")
	fs.envFlags = append(fs.envFlags, "config")
	fs.StringVar(&id, "provider", "", "provider `ID` (required)")
	fs.BoolVar(&asJSON, "json", false, "print the result as one line of JSON")
	if err := fs.parse(args, c.env, c.stdout); err != nil {
		return err
	}
	if err := required(fs, "provider"); err != nil {
		return err
	}
	_, router, err := routingOf(configFile)
	if err != nil {
		return err
	}
	var known []string
	for _, s := range router.Statuses() {
		if !slices.Contains(known, s.ID) {
			known = append(known, s.ID)
		}
	}
	if !slices.Contains(known, id) {
		sort.Strings(known)
		return fmt.Errorf("no provider %q in the routing table (known: %s); give the --config that serve uses", id, strings.Join(known, ", "))
	}
	drain := verb == "drain"
	var st paygate.ProviderState
	err = withStore(ctx, dbURL, func(ctx context.Context, s paygate.Store) error {
		var err error
		if err := s.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.ProviderDrain{ProviderID: id, Drained: drain, At: now()}}}); err != nil {
			return fmt.Errorf("%s %s: %w", verb, id, err)
		}
		// The stored state: setting the state a provider already has keeps
		// the time it was set.
		states, err := s.ProviderStates(ctx)
		if err != nil {
			return fmt.Errorf("%s %s: %w", verb, id, err)
		}
		for _, ps := range states {
			if ps.ProviderID == id {
				st = ps
				return nil
			}
		}
		return fmt.Errorf("%s %s: the provider's state was not stored", verb, id)
	})
	if err != nil {
		return err
	}
	// No merchant's change: logged, not audited (see installLog).
	action := "provider.restored"
	if drain {
		action = "provider.drained"
	}
	logInstallChange(ctx, action, slog.String("provider", id), slog.String("database", redactURL(dbURL)))
	if asJSON {
		changed := now() // a restore of a provider never drained changes nothing
		if at := st.DrainChangedAt(); at != nil {
			changed = *at
		}
		return writeJSON(c.stdout, providerStateOutput{Provider: st.ProviderID, Drained: st.Drained, ChangedAt: formatTime(changed)})
	}
	if drain {
		_, err = fmt.Fprintf(c.stdout, "Provider %s is drained: every serve node takes it out of its routes within a second.\n"+
			"Payments it processed still reach it for capture, void, refund and recovery. Undo with 'paygate providers restore --provider %s'.\n", id, id)
	} else {
		_, err = fmt.Fprintf(c.stdout, "Provider %s is restored: it is back in its routes on every serve node within a second.\n", id)
	}
	return err
}

// routingOf loads the configuration and builds its table, without a
// ledger: nothing is charged or stored.
func routingOf(configFile string) (*provider.Config, *provider.Router, error) {
	routing, err := loadRouting(configFile)
	if err != nil {
		return nil, nil, err
	}
	router, err := routing.Build(provider.BuildOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	return routing, router, nil
}

// describeProviders joins the table, the operator's states and the nodes'
// breaker reports.
func describeProviders(routing *provider.Config, router *provider.Router, states []paygate.ProviderState, reports []paygate.BreakerReport) providersOutput {
	out := providersOutput{Config: routing.Source}
	if out.Config == "" {
		out.Config = "built-in"
	}
	stateOf := map[string]paygate.ProviderState{}
	for _, s := range states {
		stateOf[s.ProviderID] = s
	}
	for _, mode := range []paygate.Mode{paygate.ModeTest, paygate.ModeLive} {
		mo := modeOutput{Mode: string(mode), Routes: []routeOutput{}, Providers: []providerOutput{}}
		unavailable := map[string]bool{}
		for _, s := range router.Statuses() {
			if s.Mode != mode {
				continue
			}
			po := providerOutput{
				ID: s.ID, Kind: s.Kind, Currencies: s.Currencies, Timeout: shortDuration(s.Timeout),
				State: "available", Breakers: []breakerOutput{},
			}
			if st, ok := stateOf[s.ID]; ok {
				po.Drained = st.Drained
				po.ChangedAt = formatTimePtr(st.DrainChangedAt())
				po.ApprovalRate = st.ApprovalRate
			}
			worst := paygate.BreakerClosed
			for _, r := range reports {
				if r.Mode != mode || r.ProviderID != s.ID {
					continue
				}
				po.Breakers = append(po.Breakers, breakerOutput{Node: r.Node, State: string(r.State), Since: formatTime(r.Since)})
				if r.State == paygate.BreakerOpen || (r.State == paygate.BreakerHalfOpen && worst == paygate.BreakerClosed) {
					worst = r.State
				}
			}
			switch {
			case po.Drained:
				po.State = "drained"
			case worst != paygate.BreakerClosed:
				po.State = string(worst)
			}
			if po.State == "drained" || po.State == string(paygate.BreakerOpen) {
				unavailable[s.ID] = true
			}
			mo.Providers = append(mo.Providers, po)
		}
		currency, fallback := router.Table().Routes(mode)
		codes := make([]string, 0, len(currency))
		for cur := range currency {
			codes = append(codes, cur)
		}
		sort.Strings(codes)
		avail := func(ids []string) []string {
			out := []string{}
			for _, id := range ids {
				if !unavailable[id] {
					out = append(out, id)
				}
			}
			return out
		}
		strategy := func(cur string) string {
			if _, ok := router.Table().SuccessRate(mode, cur); ok {
				return provider.StrategySuccessRate
			}
			return provider.StrategyPriority
		}
		for _, cur := range codes {
			mo.Routes = append(mo.Routes, routeOutput{Currency: cur, Providers: currency[cur], Available: avail(currency[cur]), Strategy: strategy(cur)})
		}
		mo.Routes = append(mo.Routes, routeOutput{Currency: "default", Providers: fallback, Available: avail(fallback), Strategy: strategy("default")})
		out.Modes = append(out.Modes, mo)
	}
	return out
}

// printProviders writes the table for a person.
func printProviders(w io.Writer, out providersOutput) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Configuration: %s\n", out.Config)
	for _, mo := range out.Modes {
		fmt.Fprintf(&b, "\n%s mode\n", mo.Mode)
		if len(mo.Providers) == 0 {
			fmt.Fprintf(&b, "  no providers: every %s payment fails with PROVIDER_ERROR\n", mo.Mode)
			continue
		}
		fmt.Fprintln(&b, "  routes (in force now, in order):")
		for _, r := range mo.Routes {
			line := strings.Join(r.Available, " → ")
			if len(r.Available) == 0 {
				line = "(none available)"
			}
			if !slices.Equal(r.Available, r.Providers) {
				line += "   [configured: " + strings.Join(r.Providers, " → ") + "]"
			}
			if len(r.Providers) == 0 {
				line = "(none)"
			}
			if r.Strategy == provider.StrategySuccessRate {
				line += "   (success_rate: first by score)"
			}
			fmt.Fprintf(&b, "    %-8s %s\n", r.Currency, line)
		}
		fmt.Fprintln(&b, "  providers:")
		for _, p := range mo.Providers {
			cur := "every currency"
			if p.Currencies != nil {
				cur = strings.Join(p.Currencies, ",")
			}
			fmt.Fprintf(&b, "    %-16s %-8s %-10s timeout %-5s %s\n", p.ID, p.Kind, p.State, p.Timeout, cur)
			if p.ApprovalRate != nil {
				fmt.Fprintf(&b, "      approval rate overridden: %s (set-approval)\n", formatRate(*p.ApprovalRate))
			}
			for _, br := range p.Breakers {
				if br.State != string(paygate.BreakerClosed) {
					fmt.Fprintf(&b, "      breaker %s on %s since %s\n", br.State, br.Node, br.Since)
				}
			}
		}
	}
	if len(out.Scores) > 0 {
		fmt.Fprintln(&b, "\nsuccess-rate scores (as the serving nodes last wrote them):")
		fmt.Fprintf(&b, "  %-5s %-8s %-11s %-16s %8s %8s %6s %6s\n", "mode", "currency", "brand", "provider", "attempts", "approved", "score", "share")
		for _, sc := range out.Scores {
			fmt.Fprintf(&b, "  %-5s %-8s %-11s %-16s %8d %8d %5.1f%% %5.1f%%\n", sc.Mode, sc.Currency, sc.Brand, sc.Provider,
				sc.Attempts, sc.Approved, 100*sc.Score, 100*sc.Share)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
