package provider

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Defaults of the Watcher.
const (
	// DefaultStatePoll is how often a node reads the operator's provider
	// states: a drain or restore is in force on every node within it.
	DefaultStatePoll = 500 * time.Millisecond
	// DefaultReportEvery is how often a node re-reports its breakers even
	// when nothing changed, so that reports of a node that died age out.
	DefaultReportEvery = 10 * time.Second
	// ReportFreshFor is how long a breaker report counts as current.
	ReportFreshFor = 3 * DefaultReportEvery
	// DefaultScoreEvery is how often a node writes its success-rate
	// routing scores when they changed.
	DefaultScoreEvery = 2 * time.Second
	// ScoreHeartbeat is the longest a node goes without stamping its
	// scores, changed or not (decisions §21: at least every 5 seconds).
	ScoreHeartbeat = 4 * time.Second
	// ScoreRewriteEvery is the longest a node goes without writing its
	// scores whole: a heartbeat only stamps the rows it finds, so rows that
	// went missing meanwhile (deleted as silent by another node after a
	// long outage of this one) come back within it.
	ScoreRewriteEvery = time.Minute
	// ScoreFreshFor is how long a node's scores count as current.
	ScoreFreshFor = paygate.RoutingScoresFreshFor
)

// StateStore is the part of the store the Watcher uses.
type StateStore interface {
	ProviderStates(ctx context.Context) ([]paygate.ProviderState, error)
	// Commit applies BreakerReplacement units.
	Commit(ctx context.Context, u paygate.Unit) error
}

// Watcher keeps a Router in step with the database: it polls the
// operator's drain states and sandbox approval overrides (so that
// `paygate providers drain` or `set-approval` run anywhere takes effect on
// this node within StatePoll) and reports this node's
// circuit breakers when they change and every ReportEvery, for `paygate
// providers` to show.
type Watcher struct {
	router *Router
	store  StateStore
	cfg    WatcherConfig

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// scored is set once this node wrote routing scores, so that later
	// writes replace them even when it has none left; lastScores and
	// scoredAt are what it last wrote and when (touched by the loop only).
	scored     bool
	lastScores []paygate.RoutingScore
	scoredAt   time.Time
	replacedAt time.Time

	// approvals are the approval rate overrides in force (applyApprovals),
	// touched by poll only, which never runs twice at once.
	approvals map[string]float64
}

// WatcherConfig configures a Watcher; zero fields take the defaults.
type WatcherConfig struct {
	StatePoll   time.Duration
	ReportEvery time.Duration
	// ScoreEvery is how often the router's routing scores are written.
	ScoreEvery time.Duration
	// Node names this node in breaker reports (default: host:pid).
	Node   string
	Clock  paygate.Clock
	Logger *slog.Logger
}

// NewWatcher returns a watcher of the router's states in the store.
func NewWatcher(r *Router, st StateStore, cfg WatcherConfig) *Watcher {
	if cfg.StatePoll <= 0 {
		cfg.StatePoll = DefaultStatePoll
	}
	if cfg.ReportEvery <= 0 {
		cfg.ReportEvery = DefaultReportEvery
	}
	if cfg.ScoreEvery <= 0 {
		cfg.ScoreEvery = DefaultScoreEvery
	}
	if cfg.Node == "" {
		cfg.Node = NodeName()
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{router: r, store: st, cfg: cfg}
}

// NodeName is this process's name in breaker reports: host name and pid.
func NodeName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "node"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// Start reads the drain states once (an error here is a setup error: the
// router must not start without them), reports the breakers, and starts
// polling.
func (w *Watcher) Start(ctx context.Context) error {
	if err := w.poll(ctx); err != nil {
		return fmt.Errorf("read provider states: %w", err)
	}
	w.report(ctx)
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	go w.loop(ctx)
	return nil
}

// Stop stops polling, waits for the goroutine, and withdraws this node's
// breaker reports and routing scores.
func (w *Watcher) Stop() {
	w.once.Do(func() {
		if w.cancel == nil {
			return
		}
		w.cancel()
		<-w.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		forget := []paygate.Op{paygate.BreakerReplacement{Node: w.cfg.Node}, paygate.RoutingScoreReplacement{Node: w.cfg.Node}}
		if err := w.store.Commit(ctx, paygate.Unit{Ops: forget}); err != nil {
			w.cfg.Logger.Warn("withdraw breaker reports", "error", err)
		}
	})
}

func (w *Watcher) loop(ctx context.Context) {
	defer close(w.done)
	poll := time.NewTicker(w.cfg.StatePoll)
	defer poll.Stop()
	heartbeat := time.NewTicker(w.cfg.ReportEvery)
	defer heartbeat.Stop()
	scores := time.NewTicker(w.cfg.ScoreEvery)
	defer scores.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			err := w.poll(ctx)
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				failing = true
				w.cfg.Logger.Error("read provider states; keeping the last ones", "error", err)
			case err == nil && failing:
				failing = false
				w.cfg.Logger.Info("provider states readable again")
			}
		case <-w.router.Changed():
			w.report(ctx)
		case <-heartbeat.C:
			w.report(ctx)
		case <-scores.C:
			w.reportScores(ctx)
		}
	}
}

// poll applies the stored drain states and approval overrides to the
// router.
func (w *Watcher) poll(ctx context.Context) error {
	states, err := w.store.ProviderStates(ctx)
	if err != nil {
		return err
	}
	drained := make(map[string]bool, len(states))
	for _, s := range states {
		drained[s.ProviderID] = s.Drained
	}
	w.router.SetDrained(drained)
	applied := applyApprovals(w.router, states)
	for id, rate := range applied {
		if old, had := w.approvals[id]; !had || old != rate {
			w.cfg.Logger.Warn("sandbox approval rate overridden", "provider", id, "approval_rate", rate)
		}
	}
	for id := range w.approvals {
		if _, still := applied[id]; !still {
			w.cfg.Logger.Info("sandbox approval rate override cleared: the configured rate is back", "provider", id)
		}
	}
	w.approvals = applied
	return nil
}

// report stores this node's breaker states.
func (w *Watcher) report(ctx context.Context) {
	var reports []paygate.BreakerReport
	for _, s := range w.router.Statuses() {
		reports = append(reports, paygate.BreakerReport{
			Node: w.cfg.Node, Mode: s.Mode, ProviderID: s.ID, State: s.Breaker, Since: paygate.Normalize(s.Since),
		})
	}
	replace := paygate.BreakerReplacement{Node: w.cfg.Node, Reports: reports, At: w.cfg.Clock.Now()}
	if err := w.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{replace}}); err != nil && ctx.Err() == nil {
		w.cfg.Logger.Warn("report breaker states", "error", err)
	}
}

// reportScores stores this node's routing scores (decisions §21), when it
// has some or had some: replaced when they changed since the last write,
// else only stamped again (a heartbeat) once ScoreHeartbeat has passed.
// Each write also deletes the scores of nodes silent for
// RoutingScoresForgetAfter (crashed nodes never withdraw theirs).
func (w *Watcher) reportScores(ctx context.Context) {
	scores := w.router.Scorer().Scores()
	if len(scores) == 0 && !w.scored {
		return
	}
	for i := range scores {
		scores[i].Node = w.cfg.Node
	}
	now := w.cfg.Clock.Now()
	same := w.scored && slices.Equal(scores, w.lastScores)
	if same && now.Sub(w.scoredAt) < ScoreHeartbeat {
		return
	}
	heartbeat := same && now.Sub(w.replacedAt) < ScoreRewriteEvery
	replace := paygate.RoutingScoreReplacement{Node: w.cfg.Node, Scores: scores, At: now, Heartbeat: heartbeat,
		ForgetBefore: now.Add(-paygate.RoutingScoresForgetAfter)}
	if err := w.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{replace}}); err != nil {
		if ctx.Err() == nil {
			w.cfg.Logger.Warn("report routing scores", "error", err)
		}
		return
	}
	w.scored, w.lastScores, w.scoredAt = true, scores, now
	if !heartbeat {
		w.replacedAt = now
	}
}
