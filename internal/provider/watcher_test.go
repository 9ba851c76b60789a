package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/score"
	"github.com/paygate/paygate/internal/testenv"
)

// memStates is a StateStore in memory.
type memStates struct {
	mu      sync.Mutex
	drained map[string]bool
	// approvals are the approval rate overrides by provider id.
	approvals map[string]float64
	fail      bool
	reports   map[string][]paygate.BreakerReport
	scores    map[string]paygate.RoutingScoreReplacement
	// scoreOps are the score replacements committed, in order.
	scoreOps []paygate.RoutingScoreReplacement
}

func (m *memStates) ProviderStates(context.Context) ([]paygate.ProviderState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return nil, errors.New("database down")
	}
	var out []paygate.ProviderState
	for id, d := range m.drained {
		out = append(out, paygate.ProviderState{ProviderID: id, Drained: d})
	}
	for id, rate := range m.approvals {
		out = append(out, paygate.ProviderState{ProviderID: id, ApprovalRate: &rate})
	}
	return out, nil
}

func (m *memStates) Commit(_ context.Context, u paygate.Unit) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range u.Ops {
		if sr, ok := op.(paygate.RoutingScoreReplacement); ok {
			if m.scores == nil {
				m.scores = map[string]paygate.RoutingScoreReplacement{}
			}
			m.scoreOps = append(m.scoreOps, sr)
			if sr.Heartbeat {
				if kept, ok := m.scores[sr.Node]; ok {
					kept.At = sr.At
					m.scores[sr.Node] = kept
				}
				continue
			}
			if len(sr.Scores) == 0 {
				delete(m.scores, sr.Node)
			} else {
				m.scores[sr.Node] = sr
			}
			continue
		}
		r, ok := op.(paygate.BreakerReplacement)
		if !ok {
			return fmt.Errorf("memStates: %T is not a breaker or score replacement", op)
		}
		if len(r.Reports) == 0 {
			delete(m.reports, r.Node)
			continue
		}
		m.reports[r.Node] = r.Reports
	}
	return nil
}

func (m *memStates) set(f func(m *memStates)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

func (m *memStates) report(node, id string) paygate.BreakerState {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.reports[node] {
		if r.ProviderID == id {
			return r.State
		}
	}
	return ""
}

func TestWatcher(t *testing.T) {
	t.Parallel()
	a, b := &flaky{id: "a", kind: paygate.ProviderUnavailable}, &flaky{id: "b"}
	r := newRouter(t, BreakerConfig{Failures: 1, OpenFor: time.Hour, Probes: 1}, time.Second, a, b)
	st := &memStates{drained: map[string]bool{"a": true}, reports: map[string][]paygate.BreakerReport{}}
	w := NewWatcher(r, st, WatcherConfig{StatePoll: 20 * time.Millisecond, ReportEvery: time.Hour, Node: "n1"})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Start applies the stored states before it returns.
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("route at start: %v", got)
	}
	if st.report("n1", "a") != paygate.BreakerClosed {
		t.Fatalf("no report at start: %+v", st.reports)
	}
	st.set(func(m *memStates) { m.drained["a"] = false })
	waitFor(t, 2*time.Second, "the restore", func() bool { return slices.Equal(routeIDs(r, "EUR"), []string{"a", "b"}) })

	// A database that cannot be read keeps the last states.
	st.set(func(m *memStates) { m.fail = true; m.drained["b"] = true })
	time.Sleep(60 * time.Millisecond) // a few polls
	if got := routeIDs(r, "EUR"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("route while the database is down: %v", got)
	}
	st.set(func(m *memStates) { m.fail = false })
	waitFor(t, 2*time.Second, "the drain of b", func() bool { return slices.Equal(routeIDs(r, "EUR"), []string{"a"}) })

	// A breaker that opens is reported at once.
	a.failing.Store(true)
	_, _ = pay(r, "EUR", "4242424242424242")
	waitFor(t, 2*time.Second, "the open breaker's report", func() bool { return st.report("n1", "a") == paygate.BreakerOpen })

	w.Stop()
	if st.report("n1", "a") != "" {
		t.Fatal("reports left behind by a stopped node")
	}
}

func TestWatcherReportsScores(t *testing.T) {
	t.Parallel()
	a, b := newRated("a", 100, 1), newRated("b", 0, 2)
	r := newScoredRouter(t, score.Settings{Window: 10, Explore: 0, MinSamples: 2}, DefaultBreaker(), a, b)
	st := &memStates{drained: map[string]bool{}, reports: map[string][]paygate.BreakerReport{}}
	w := NewWatcher(r, st, WatcherConfig{StatePoll: time.Hour, ReportEvery: time.Hour, ScoreEvery: 10 * time.Millisecond, Node: "n1"})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range 20 {
		payCard(r, "visa")
	}
	var got paygate.RoutingScoreReplacement
	waitFor(t, 2*time.Second, "the scores' report", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		got = st.scores["n1"]
		// b declines all: after its 2 samples a takes every payment.
		return len(got.Scores) == 2 && got.Scores[0].Attempts == 10 && got.Scores[1].Attempts == 2
	})
	sa := got.Scores[0]
	if sa.Node != "n1" || sa.ProviderID != "a" || sa.Currency != "EUR" || sa.Brand != "visa" || sa.Score != 1 || got.At.IsZero() {
		t.Fatalf("reported scores: %+v", got)
	}
	w.Stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.scores["n1"]; ok {
		t.Fatal("scores left behind by a stopped node")
	}
}

func TestWatcherStartFails(t *testing.T) {
	t.Parallel()
	r := newRouter(t, DefaultBreaker(), time.Second, &flaky{id: "a"})
	st := &memStates{fail: true, reports: map[string][]paygate.BreakerReport{}}
	w := NewWatcher(r, st, WatcherConfig{})
	if err := w.Start(context.Background()); err == nil {
		w.Stop()
		t.Fatal("started without the provider states")
	}
	w.Stop() // a watcher that did not start stops at once
}

// Unchanged scores are not rewritten, but stamped again (a heartbeat)
// every ScoreHeartbeat; each write forgets nodes silent for an hour.
func TestWatcherScoreHeartbeat(t *testing.T) {
	t.Parallel()
	a, b := newRated("a", 100, 1), newRated("b", 0, 2)
	r := newScoredRouter(t, score.Settings{Window: 10, Explore: 0, MinSamples: 2}, DefaultBreaker(), a, b)
	st := &memStates{drained: map[string]bool{}, reports: map[string][]paygate.BreakerReport{}}
	clock := testenv.NewClock(time.Now())
	w := NewWatcher(r, st, WatcherConfig{Node: "n1", Clock: clock})
	ops := func() []paygate.RoutingScoreReplacement {
		st.mu.Lock()
		defer st.mu.Unlock()
		return slices.Clone(st.scoreOps)
	}
	for range 5 {
		payCard(r, "visa")
	}
	ctx := context.Background()
	w.reportScores(ctx)
	if got := ops(); len(got) != 1 || got[0].Heartbeat || len(got[0].Scores) != 2 ||
		!got[0].ForgetBefore.Equal(clock.Now().Add(-paygate.RoutingScoresForgetAfter)) {
		t.Fatalf("first write: %+v", got)
	}
	clock.Add(DefaultScoreEvery)
	w.reportScores(ctx)
	if got := ops(); len(got) != 1 {
		t.Fatalf("unchanged scores rewritten before the heartbeat: %+v", got[1:])
	}
	clock.Add(ScoreHeartbeat - DefaultScoreEvery)
	w.reportScores(ctx)
	got := ops()
	if len(got) != 2 || !got[1].Heartbeat || !got[1].At.Equal(clock.Now()) || got[1].ForgetBefore.IsZero() {
		t.Fatalf("after %s unchanged: %+v, want a heartbeat", ScoreHeartbeat, got)
	}
	payCard(r, "visa")
	clock.Add(DefaultScoreEvery)
	w.reportScores(ctx)
	if got := ops(); len(got) != 3 || got[2].Heartbeat || len(got[2].Scores) != 2 {
		t.Fatalf("changed scores: %+v, want a replacement", got)
	}
}
