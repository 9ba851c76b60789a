package provider

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/provider/sandbox"
)

// TestWatcherAppliesApprovalOverrides: an override stored for a sandbox is
// in force within a poll and is cleared when the store forgets it; a
// provider that takes no override is left alone.
func TestWatcherAppliesApprovalOverrides(t *testing.T) {
	t.Parallel()
	a := sandbox.New("a", nil, sandbox.WithApprovalRate(0.9))
	b := &flaky{id: "b"}
	r := newRouter(t, DefaultBreaker(), time.Second, a, b)
	st := &memStates{approvals: map[string]float64{"a": 0.25, "b": 0.5}, reports: map[string][]paygate.BreakerReport{}}
	w := NewWatcher(r, st, WatcherConfig{StatePoll: 20 * time.Millisecond, ReportEvery: time.Hour, Node: "n1"})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := a.ApprovalRate(); got != 0.25 {
		t.Fatalf("approval rate after start: %v, want the override 0.25", got)
	}
	st.set(func(m *memStates) { m.approvals["a"] = 0.6 })
	waitFor(t, 2*time.Second, "the new override", func() bool { return a.ApprovalRate() == 0.6 })
	st.set(func(m *memStates) { delete(m.approvals, "a") })
	waitFor(t, 2*time.Second, "the configured rate", func() bool { return a.ApprovalRate() == 0.9 })

	if _, ok := r.Overridable(paygate.ModeTest, "b"); ok {
		t.Fatal("a provider without an approval rate is overridable")
	}
	if o, ok := r.Overridable(paygate.ModeTest, "a"); !ok || o != a {
		t.Fatalf("Overridable(a) = %v, %v", o, ok)
	}
	if _, ok := r.Overridable(paygate.ModeLive, "a"); ok {
		t.Fatal("a test provider is overridable in live mode")
	}
}
