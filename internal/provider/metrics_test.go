package provider

import (
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// recordedMetrics keeps what the router reported.
type recordedMetrics struct {
	mu     sync.Mutex
	calls  []string // "provider operation ok|declined|err"
	states []string // "provider state"
}

func (m *recordedMetrics) ProviderCall(provider, operation string, _ time.Duration, declined bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	what := "ok"
	switch {
	case err != nil:
		what = "err"
	case declined:
		what = "declined"
	}
	m.calls = append(m.calls, provider+" "+operation+" "+what)
}

func (m *recordedMetrics) BreakerState(provider string, s paygate.BreakerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.states = append(m.states, provider+" "+string(s))
}

func (m *recordedMetrics) got() (calls, states []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...), append([]string(nil), m.states...)
}

// TestRouterMetrics: SetMetrics reports every breaker at once; each charge
// that reaches a provider is reported with its outcome, those an open
// breaker refuses are not; a breaker's change is reported.
func TestRouterMetrics(t *testing.T) {
	t.Parallel()
	a, b := &flaky{id: "a", kind: paygate.ProviderUnavailable}, &flaky{id: "b"}
	a.failing.Store(true)
	r := newRouter(t, BreakerConfig{Failures: 2, OpenFor: time.Hour, Probes: 1}, time.Second, a, b)
	m := &recordedMetrics{}
	r.SetMetrics(m)
	if _, states := m.got(); len(states) != 2 || states[0] != "a closed" || states[1] != "b closed" {
		t.Fatalf("states at SetMetrics: %v", states)
	}
	for range 3 {
		if by, err := pay(r, "EUR", "4242424242424242"); by != "b" || err != nil {
			t.Fatalf("captured by %q, %v", by, err)
		}
	}
	calls, states := m.got()
	want := []string{"a charge err", "b charge ok", "a charge err", "b charge ok", "b charge ok"}
	if len(calls) != len(want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("calls %v, want %v", calls, want)
		}
	}
	if len(states) != 3 || states[2] != "a open" {
		t.Errorf("states %v, want a's breaker open last", states)
	}
	r.SetMetrics(nil) // metrics off: nothing breaks
	if by, err := pay(r, "EUR", "4242424242424242"); by != "b" || err != nil {
		t.Fatalf("without metrics: captured by %q, %v", by, err)
	}
}
