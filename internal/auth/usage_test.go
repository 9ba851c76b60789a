package auth

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// usageStore records the batches written to it, and fails while err is set.
type usageStore struct {
	mu      sync.Mutex
	err     error
	batches []map[string]time.Time
	wrote   chan struct{}
}

func newUsageStore() *usageStore { return &usageStore{wrote: make(chan struct{}, 100)} }

func (s *usageStore) Commit(_ context.Context, u paygate.Unit) error {
	if len(u.Ops) != 1 {
		return errors.New("usageStore: a unit of one operation expected")
	}
	usage, ok := u.Ops[0].(paygate.APIKeyUsage)
	if !ok {
		return errors.New("usageStore: an APIKeyUsage expected")
	}
	used := usage.Used
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.batches = append(s.batches, maps.Clone(used))
	s.wrote <- struct{}{}
	return nil
}

func (s *usageStore) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *usageStore) written() []map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]time.Time(nil), s.batches...)
}

func wantBatches(t *testing.T, s *usageStore, want ...map[string]time.Time) {
	t.Helper()
	got := s.written()
	if len(got) != len(want) {
		t.Fatalf("store got %d batches %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if !maps.EqualFunc(got[i], want[i], time.Time.Equal) {
			t.Fatalf("batch %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestUsageRecorderCoalesces(t *testing.T) {
	t.Parallel()
	s := newUsageStore()
	u := NewUsageRecorder(s, nil)
	ctx := context.Background()

	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantBatches(t, s) // nothing noted, nothing written

	u.Seen("k1", now)
	u.Seen("k1", now.Add(30*time.Second))
	u.Seen("k1", now.Add(59*time.Second))
	u.Seen("k2", now.Add(10*time.Second))
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantBatches(t, s, map[string]time.Time{"k1": now, "k2": now.Add(10 * time.Second)})

	// Within the minute after the last noted use: nothing new.
	u.Seen("k1", now.Add(50*time.Second))
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantBatches(t, s, map[string]time.Time{"k1": now, "k2": now.Add(10 * time.Second)})

	// A minute later: noted again.
	u.Seen("k1", now.Add(time.Minute))
	u.Seen("k1", now.Add(time.Minute+time.Second))
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantBatches(t, s,
		map[string]time.Time{"k1": now, "k2": now.Add(10 * time.Second)},
		map[string]time.Time{"k1": now.Add(time.Minute)})

	// Keys not used for long are forgotten, and noted at once when used.
	u.Seen("k3", now.Add(time.Hour))
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	_, remembered := u.last["k2"]
	u.mu.Unlock()
	if remembered {
		t.Error("a key unused for an hour is still remembered")
	}
	u.Seen("k2", now.Add(time.Hour))
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.written(); len(got) != 4 || !got[3]["k2"].Equal(now.Add(time.Hour)) {
		t.Fatalf("batches %v; want k2 at %v last", got, now.Add(time.Hour))
	}
}

func TestUsageRecorderKeepsTimesOnStoreError(t *testing.T) {
	t.Parallel()
	s := newUsageStore()
	u := NewUsageRecorder(s, nil)
	ctx := context.Background()

	down := errors.New("database down")
	s.setErr(down)
	u.Seen("k1", now)
	if err := u.Flush(ctx); !errors.Is(err, down) {
		t.Fatalf("Flush = %v, want the store's error", err)
	}
	u.Seen("k2", now.Add(time.Second))
	if err := u.Flush(ctx); !errors.Is(err, down) {
		t.Fatalf("Flush = %v, want the store's error", err)
	}
	s.setErr(nil)
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantBatches(t, s, map[string]time.Time{"k1": now, "k2": now.Add(time.Second)})
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantBatches(t, s, map[string]time.Time{"k1": now, "k2": now.Add(time.Second)})
}

func TestUsageRecorderRun(t *testing.T) {
	t.Parallel()
	s := newUsageStore()
	u := NewUsageRecorder(s, nil)
	u.interval = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		u.Run(ctx)
	}()

	// A tick writes what was noted.
	u.Seen("k1", now)
	select {
	case <-s.wrote:
	case <-time.After(5 * time.Second):
		t.Fatal("no flush within 5s of ticks")
	}
	// The end of the context writes the rest before Run returns.
	u.Seen("k2", now)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	var k2 bool
	for _, b := range s.written() {
		_, ok := b["k2"]
		k2 = k2 || ok
	}
	if !k2 {
		t.Fatalf("batches %v: the use noted before stopping was not written", s.written())
	}
}

func TestAuthenticateNotesUsage(t *testing.T) {
	t.Parallel()
	keys := newFakeStore()
	usage := newUsageStore()
	a := &Authenticator{Store: keys, Clock: fixedClock{now}, Usage: NewUsageRecorder(usage, nil)}
	ctx := context.Background()
	good := addKey(t, keys, paygate.ModeTest, paygate.KeySecret, nil)
	revoked := addKey(t, keys, paygate.ModeTest, paygate.KeySecret, func(k *paygate.APIKey) { k.RevokedAt = at(now) })

	k, err := a.Authenticate(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, revoked); err == nil {
		t.Fatal("a revoked key authenticated")
	}
	if err := a.Usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantBatches(t, usage, map[string]time.Time{k.ID: now})
}
