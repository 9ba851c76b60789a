package postgres

import (
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// TestGuardSettingsCache: once its listener is up, a store answers the
// guard's settings from memory (a change written behind its back, without
// the notification a unit sends, is not seen), and a change committed
// through a unit on another store (another node) empties every cache, so
// that it is read on the node's next payment.
func TestGuardSettingsCache(t *testing.T) {
	t.Parallel()
	a, u := openTest(t)
	b, err := Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	// No entry ages out during the test, however slow the machine: the
	// backstop has a test of its own.
	a.guard.mu.Lock()
	a.guard.maxAge = time.Hour
	a.guard.mu.Unlock()
	f := seedMerchant(t, a)
	m := f.merchant.ID
	read := func() paygate.GuardRuleSettings {
		t.Helper()
		set, err := a.GuardSettings(t.Context(), m, paygate.ModeLive)
		if err != nil {
			t.Fatal(err)
		}
		return set.Rules[0] // card_ip
	}

	def := read() // starts the listener
	waitFor(t, "the listener to start", func() bool {
		a.guard.mu.Lock()
		defer a.guard.mu.Unlock()
		return a.guard.listening
	})
	read() // cached now
	if _, err := a.pool.Exec(t.Context(), `INSERT INTO guard_rules (merchant_id, mode, rule, enabled, threshold, window_ms, block_ms, updated_at)
		VALUES ($1, 'live', 'card_ip', false, 99, 60000, 60000, now())`, m); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != def {
		t.Fatalf("a change without its notification was read (%+v): the settings are not cached", got)
	}

	change := def
	change.Threshold = 7
	if err := b.Commit(t.Context(), paygate.Unit{Ops: []paygate.Op{paygate.GuardChange{
		MerchantID: m, Mode: paygate.ModeLive, Settings: change, At: epoch}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the other node's change to be read", func() bool { return read().Threshold == 7 })
}

// waitFor polls cond until it holds, failing the test after a generous
// time (not a timing assertion: a notification arrives in milliseconds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGuardSettingsCacheMaxAge: an entry older than its maximum age is
// read again, even when no change was notified (a listener that cannot
// hear, a change written by hand).
func TestGuardSettingsCacheMaxAge(t *testing.T) {
	t.Parallel()
	a, _ := openTest(t)
	a.guard.mu.Lock()
	a.guard.maxAge = time.Hour
	a.guard.mu.Unlock()
	m := seedMerchant(t, a).merchant.ID
	read := func() int {
		t.Helper()
		set, err := a.GuardSettings(t.Context(), m, paygate.ModeLive)
		if err != nil {
			t.Fatal(err)
		}
		return set.Rules[0].Threshold
	}
	read()
	waitFor(t, "the listener to start", func() bool {
		a.guard.mu.Lock()
		defer a.guard.mu.Unlock()
		return a.guard.listening
	})
	def := read() // cached
	if _, err := a.pool.Exec(t.Context(), `INSERT INTO guard_rules (merchant_id, mode, rule, enabled, threshold, window_ms, block_ms, updated_at)
		VALUES ($1, 'live', 'card_ip', true, 42, 60000, 60000, now())`, m); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != def {
		t.Fatalf("threshold %d before the entry aged: the settings are not cached", got)
	}
	a.guard.mu.Lock()
	a.guard.maxAge = 0
	a.guard.mu.Unlock()
	if got := read(); got != 42 {
		t.Fatalf("threshold %d after the entry aged, want 42", got)
	}
}

// TestGuardCacheClosed: a store closed before it read any settings starts
// no listener afterwards (a payment still in flight at shutdown).
func TestGuardCacheClosed(t *testing.T) {
	t.Parallel()
	_, u := openTest(t)
	s, err := Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	_, _, _ = s.guard.get(guardKey{"m", paygate.ModeLive})
	s.guard.mu.Lock()
	started := s.guard.started
	s.guard.mu.Unlock()
	if started {
		t.Fatal("a listener started after Close")
	}
}
