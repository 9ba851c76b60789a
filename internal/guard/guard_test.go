package guard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/guard"
	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// settings is a Settings of one merchant whose rules a test changes.
type settings struct {
	mu  sync.Mutex
	set map[paygate.Mode]paygate.GuardSettings
	err error
}

func newSettings(merchantID string) *settings {
	return &settings{set: map[paygate.Mode]paygate.GuardSettings{
		paygate.ModeTest: paygate.DefaultGuardSettings(merchantID, paygate.ModeTest),
		paygate.ModeLive: paygate.DefaultGuardSettings(merchantID, paygate.ModeLive),
	}}
}

func (s *settings) GuardSettings(_ context.Context, merchantID string, mode paygate.Mode) (paygate.GuardSettings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return paygate.GuardSettings{}, s.err
	}
	if set, ok := s.set[mode]; ok && set.MerchantID == merchantID {
		return set, nil
	}
	return paygate.DefaultGuardSettings(merchantID, mode), nil
}

func (s *settings) change(mode paygate.Mode, r paygate.GuardRuleSettings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.set[mode]
	rules := append([]paygate.GuardRuleSettings(nil), set.Rules...)
	for i := range rules {
		if rules[i].Rule == r.Rule {
			rules[i] = r
		}
	}
	set.Rules = rules
	s.set[mode] = set
}

type errorCount struct{ n atomic.Int64 }

func (e *errorCount) GuardError() { e.n.Add(1) }

// env is one guard under test, with its clock and its merchant.
type env struct {
	g        *guard.Guard
	clock    *testenv.Clock
	set      *settings
	errs     *errorCount
	merchant string
}

func newEnv(counter guard.Counter) *env {
	e := &env{
		clock:    testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		errs:     &errorCount{},
		merchant: id.New(),
	}
	e.set = newSettings(e.merchant)
	e.g = guard.New(guard.Config{Settings: e.set, Counter: counter, Clock: e.clock, Metrics: e.errs})
	return e
}

func (e *env) attempt(cardN int, addr, customer string) paygate.GuardAttempt {
	return paygate.GuardAttempt{MerchantID: e.merchant, Mode: paygate.ModeLive,
		Card: fmt.Sprintf("fp-card-%d", cardN), Addr: addr, Customer: customer, ID: id.New()}
}

// decline plays an attempt that reaches the provider and is declined; it
// fails when the guard blocks it.
func (e *env) decline(t *testing.T, a paygate.GuardAttempt) {
	t.Helper()
	a.ID = id.New() // each attempt is a payment of its own
	if r := e.g.Check(t.Context(), a); r != "" {
		t.Fatalf("attempt %+v blocked by %s, want it to reach the provider", a, r)
	}
	e.g.Declined(t.Context(), a)
}

func (e *env) want(t *testing.T, a paygate.GuardAttempt, rule paygate.GuardRule) {
	t.Helper()
	if got := e.g.Check(t.Context(), a); got != rule {
		t.Errorf("attempt card=%s addr=%s customer=%s at %s: blocked by %q, want %q",
			a.Card, a.Addr, a.Customer, e.clock.Now().Format(time.TimeOnly), got, rule)
	}
}

// cases is the table both counters pass.
var cases = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"CardIP", func(t *testing.T, e *env) {
		for range 3 {
			e.decline(t, e.attempt(1, "10.0.0.1", ""))
			e.clock.Add(time.Minute)
		}
		e.want(t, e.attempt(1, "10.0.0.1", ""), paygate.GuardCardIP)
		e.want(t, e.attempt(1, "10.0.0.2", ""), "") // card: 3 of 5
		e.want(t, e.attempt(2, "10.0.0.1", ""), "") // ip_cards: 1 of 5
		// Blocked attempts are not declines: still blocked by card_ip
		// alone, and the card's count did not move.
		e.want(t, e.attempt(1, "10.0.0.1", ""), paygate.GuardCardIP)
		e.decline(t, e.attempt(1, "10.0.0.3", ""))
		e.want(t, e.attempt(1, "10.0.0.4", ""), "")
	}},
	{"Card", func(t *testing.T, e *env) {
		for i := range 5 {
			e.decline(t, e.attempt(1, fmt.Sprintf("10.0.1.%d", i), ""))
		}
		e.want(t, e.attempt(1, "10.0.1.99", ""), paygate.GuardCard)
		e.want(t, e.attempt(2, "10.0.1.99", ""), "")
	}},
	{"Customer", func(t *testing.T, e *env) {
		for i := range 10 {
			e.decline(t, e.attempt(100+i, fmt.Sprintf("10.0.2.%d", i), "cus_1"))
		}
		e.want(t, e.attempt(200, "10.0.2.200", "cus_1"), paygate.GuardCustomer)
		e.want(t, e.attempt(200, "10.0.2.200", "cus_2"), "")
		e.want(t, e.attempt(200, "10.0.2.200", ""), "")
	}},
	{"IPCardsDistinct", func(t *testing.T, e *env) {
		for i := range 4 {
			e.decline(t, e.attempt(300+i, "10.0.3.1", ""))
		}
		// The same card declined again is still 4 distinct cards (and 2
		// declines of card_ip).
		e.decline(t, e.attempt(300, "10.0.3.1", ""))
		e.want(t, e.attempt(399, "10.0.3.1", ""), "")
		e.decline(t, e.attempt(304, "10.0.3.1", ""))
		e.want(t, e.attempt(399, "10.0.3.1", ""), paygate.GuardIPCards)
		e.want(t, e.attempt(399, "10.0.3.2", ""), "")
	}},
	{"WindowSlides", func(t *testing.T, e *env) {
		a := e.attempt(1, "10.0.4.1", "")
		e.decline(t, a)
		e.clock.Add(30 * time.Minute)
		e.decline(t, a)
		e.clock.Add(20 * time.Minute)
		e.decline(t, a)
		// 0, 30, 50 minutes: at 60 the first left the window (a decline
		// exactly one window old is out).
		e.clock.Add(10 * time.Minute)
		e.want(t, a, "")
		e.decline(t, a)
		e.want(t, a, paygate.GuardCardIP)
	}},
	{"BlockExpires", func(t *testing.T, e *env) {
		e.set.change(paygate.ModeLive, paygate.GuardRuleSettings{Rule: paygate.GuardCardIP, Enabled: true,
			Threshold: 2, Window: 24 * time.Hour, Block: 15 * time.Minute})
		a := e.attempt(1, "10.0.5.1", "")
		e.decline(t, a)
		e.decline(t, a)
		e.want(t, a, paygate.GuardCardIP)
		e.clock.Add(15*time.Minute - time.Millisecond)
		e.want(t, a, paygate.GuardCardIP)
		e.clock.Add(time.Millisecond)
		// The block lasted Block, although both declines are still in
		// the window: the block forgot them.
		e.want(t, a, "")
		e.decline(t, a)
		e.want(t, a, "")
		e.decline(t, a)
		e.want(t, a, paygate.GuardCardIP)
	}},
	{"ChangeTakesEffectAtOnce", func(t *testing.T, e *env) {
		a := e.attempt(1, "10.0.6.1", "")
		e.decline(t, a)
		e.want(t, a, "")
		e.set.change(paygate.ModeLive, paygate.GuardRuleSettings{Rule: paygate.GuardCardIP, Enabled: true,
			Threshold: 1, Window: time.Hour, Block: time.Hour})
		e.want(t, a, paygate.GuardCardIP)
		e.set.change(paygate.ModeLive, paygate.GuardRuleSettings{Rule: paygate.GuardCardIP, Enabled: false,
			Threshold: 1, Window: time.Hour, Block: time.Hour})
		e.want(t, a, "")
	}},
	{"TestModeOffByDefault", func(t *testing.T, e *env) {
		a := e.attempt(1, "10.0.7.1", "cus_t")
		a.Mode = paygate.ModeTest
		for range 20 {
			e.decline(t, a)
		}
		e.want(t, a, "")
		// And the test mode's counters are not the live mode's.
		e.set.change(paygate.ModeTest, paygate.GuardRuleSettings{Rule: paygate.GuardCardIP, Enabled: true,
			Threshold: 3, Window: time.Hour, Block: time.Hour})
		e.want(t, a, "") // declines while the rule was off were not counted
		live := a
		live.Mode = paygate.ModeLive
		e.want(t, live, "")
	}},
	{"SettingsUnreadableFailsOpen", func(t *testing.T, e *env) {
		a := e.attempt(1, "10.0.8.1", "")
		for range 3 {
			e.decline(t, a)
		}
		e.set.mu.Lock()
		e.set.err = errors.New("database down")
		e.set.mu.Unlock()
		e.want(t, a, "")
		if got := e.errs.n.Load(); got != 1 {
			t.Errorf("%d errors counted, want 1", got)
		}
	}},
}

func run(t *testing.T, newCounter func(t *testing.T) guard.Counter) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(newCounter(t))
			c.run(t, e)
			if c.name != "SettingsUnreadableFailsOpen" {
				if got := e.errs.n.Load(); got != 0 {
					t.Errorf("%d errors counted, want 0", got)
				}
			}
		})
	}
}

func TestMemory(t *testing.T) {
	run(t, func(*testing.T) guard.Counter { return guard.NewMemory() })
}

func TestRedis(t *testing.T) {
	u := testenv.RedisURL(t)
	c, closeClient, err := guard.Open(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeClient() })
	run(t, func(*testing.T) guard.Counter { return c })
}

// TestRedisDownFailsOpen: a Redis that cannot be reached allows every
// attempt, and each failure is counted.
func TestRedisDownFailsOpen(t *testing.T) {
	c, closeClient, err := guard.Open("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient()
	e := newEnv(c)
	a := e.attempt(1, "10.0.9.1", "")
	for range 5 {
		e.decline(t, a) // each Check and each Declined fails open
	}
	e.want(t, a, "")
	if got := e.errs.n.Load(); got != 11 {
		t.Errorf("%d errors counted, want 11", got)
	}
}

// TestMemoryBounded: counters whose windows and blocks ended are forgotten.
func TestMemoryBounded(t *testing.T) {
	m := guard.NewMemory()
	e := newEnv(m)
	for i := range 5000 {
		e.g.Declined(t.Context(), e.attempt(i, fmt.Sprintf("10.1.%d.%d", i/250, i%250), ""))
	}
	if m.Len() < 5000 {
		t.Fatalf("%d counters held after 5000 declines, want at least 5000", m.Len())
	}
	e.clock.Add(2 * time.Hour)
	for i := range 5000 {
		e.g.Check(t.Context(), e.attempt(i, "10.2.0.1", ""))
	}
	if m.Len() > 100 {
		t.Errorf("%d counters held two hours later, want the expired ones forgotten", m.Len())
	}
}
