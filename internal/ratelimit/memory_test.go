package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

// newFakeClock returns a clock the test moves by hand, at a fixed start.
func newFakeClock() *testenv.Clock {
	return testenv.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
}

func newTestMemory(clock *testenv.Clock) *Memory {
	m := NewMemory()
	m.Now = clock.Now
	return m
}

// size returns how many keys m tracks.
func (m *Memory) size() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.tat)
		s.mu.Unlock()
	}
	return n
}

func allow(t *testing.T, l Limiter, key string, perMinute int) Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key, perMinute)
	if err != nil {
		t.Fatalf("Allow(%q, %d): %v", key, perMinute, err)
	}
	return d
}

func TestMemoryBurstThenRefused(t *testing.T) {
	t.Parallel()
	for _, perMinute := range []int{1, 7, 60, 100, 1000} {
		t.Run(strconv.Itoa(perMinute), func(t *testing.T) {
			t.Parallel()
			m := newTestMemory(newFakeClock())
			interval := time.Minute / time.Duration(perMinute)
			for i := 1; i <= perMinute; i++ {
				d := allow(t, m, "k", perMinute)
				want := Decision{Allowed: true, Limit: perMinute, Remaining: perMinute - i, ResetAfter: interval}
				if d != want {
					t.Fatalf("request %d: got %+v, want %+v", i, d, want)
				}
			}
			d := allow(t, m, "k", perMinute)
			want := Decision{Allowed: false, Limit: perMinute, Remaining: 0, ResetAfter: interval, RetryAfter: interval}
			if d != want {
				t.Fatalf("request %d: got %+v, want %+v", perMinute+1, d, want)
			}
		})
	}
}

func TestMemoryRefill(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := newTestMemory(clock)
	const perMinute = 60 // one request per second
	for range perMinute {
		allow(t, m, "k", perMinute)
	}

	clock.Add(999 * time.Millisecond)
	if d := allow(t, m, "k", perMinute); d.Allowed || d.RetryAfter != time.Millisecond {
		t.Fatalf("just before a request is freed: got %+v, want refused with RetryAfter 1ms", d)
	}
	clock.Add(time.Millisecond)
	if d := allow(t, m, "k", perMinute); !d.Allowed || d.Remaining != 0 || d.ResetAfter != time.Second {
		t.Fatalf("once a request is freed: got %+v, want allowed, Remaining 0, ResetAfter 1s", d)
	}
	if d := allow(t, m, "k", perMinute); d.Allowed {
		t.Fatalf("the freed request was used: got %+v, want refused", d)
	}

	clock.Add(30 * time.Second)
	allowed := 0
	for range perMinute {
		if allow(t, m, "k", perMinute).Allowed {
			allowed++
		}
	}
	if allowed != 30 {
		t.Fatalf("after 30s at 60/min: %d allowed, want 30", allowed)
	}

	clock.Add(time.Hour)
	if d := allow(t, m, "k", perMinute); !d.Allowed || d.Remaining != perMinute-1 {
		t.Fatalf("after an idle hour: got %+v, want a full burst (Remaining %d)", d, perMinute-1)
	}
}

func TestMemoryRemainingAndReset(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := newTestMemory(clock)
	const perMinute = 60
	for range 3 {
		allow(t, m, "k", perMinute)
	}
	// The budget is 3 s short of full; 1.5 s later it is 1.5 s short, and
	// this request makes it 2.5 s: 57 left, and the next one frees in 0.5 s.
	clock.Add(1500 * time.Millisecond)
	d := allow(t, m, "k", perMinute)
	want := Decision{Allowed: true, Limit: perMinute, Remaining: 57, ResetAfter: 500 * time.Millisecond}
	if d != want {
		t.Fatalf("got %+v, want %+v", d, want)
	}
}

func TestMemoryKeysAreIndependent(t *testing.T) {
	t.Parallel()
	m := newTestMemory(newFakeClock())
	for range 5 {
		allow(t, m, "a", 5)
	}
	if d := allow(t, m, "a", 5); d.Allowed {
		t.Fatalf("a over its budget: got %+v, want refused", d)
	}
	if d := allow(t, m, "b", 5); !d.Allowed || d.Remaining != 4 {
		t.Fatalf("b untouched by a: got %+v, want allowed with Remaining 4", d)
	}
}

func TestMemoryErrInvalidLimit(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	for _, perMinute := range []int{0, -1} {
		if _, err := m.Allow(context.Background(), "k", perMinute); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("perMinute %d: err = %v, want ErrInvalidLimit", perMinute, err)
		}
	}
}

func TestMemoryConcurrent(t *testing.T) {
	t.Parallel()
	m := newTestMemory(newFakeClock())
	const perMinute, workers, each = 100, 32, 20
	keys := []string{"x", "y", "z"}
	var allowed [3]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				k := (w + i) % len(keys)
				d, err := m.Allow(context.Background(), keys[k], perMinute)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed[k].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		if got := allowed[k].Load(); got != perMinute {
			t.Errorf("key %s: %d allowed, want exactly %d", keys[k], got, perMinute)
		}
	}
}

func TestMemoryEvictionBound(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := newTestMemory(clock)
	m.MaxKeys = 1000
	bound := m.shardLimit() * shardCount

	// A client driven to its limit...
	for range 5 {
		allow(t, m, "victim", 5)
	}
	// ...then a flood of distinct keys, as from random client addresses,
	// all within the same instant so that none has refilled.
	for i := range 50_000 {
		if d := allow(t, m, fmt.Sprintf("ip:%d", i), 60); !d.Allowed {
			t.Fatalf("a new key was refused: %+v", d)
		}
		if i%1000 == 0 && m.size() > bound {
			t.Fatalf("after %d keys: tracking %d, want at most %d", i+1, m.size(), bound)
		}
	}
	if n := m.size(); n > bound {
		t.Fatalf("tracking %d keys, want at most %d", n, bound)
	}
	if d := allow(t, m, "victim", 5); d.Allowed {
		t.Fatalf("the flood reset a limited key: got %+v, want refused", d)
	}

	// Once the flood's budgets have refilled, they go first and lose nothing.
	clock.Add(2 * time.Second)
	for i := range 5000 {
		allow(t, m, fmt.Sprintf("ip6:%d", i), 60)
	}
	if n := m.size(); n > bound {
		t.Fatalf("tracking %d keys, want at most %d", n, bound)
	}
	if d := allow(t, m, "victim", 5); d.Allowed {
		t.Fatalf("a limited key was evicted before refilled ones: got %+v, want refused", d)
	}
}

func BenchmarkMemoryAllow(b *testing.B) {
	m := NewMemory()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.Allow(ctx, "key:5b0e8a52-6f0c-4c1e-9f59-2d7c4f0e8a11", 1000)
	}
}

func BenchmarkMemoryAllowManyKeys(b *testing.B) {
	m := NewMemory()
	ctx := context.Background()
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("ip:203.0.113.%d:%d", i%256, i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = m.Allow(ctx, keys[i%len(keys)], 60)
		i++
	}
}

func BenchmarkMemoryAllowParallel(b *testing.B) {
	m := NewMemory()
	ctx := context.Background()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%d", i)
	}
	var worker atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(worker.Add(1))
		for pb.Next() {
			_, _ = m.Allow(ctx, keys[i%len(keys)], 1000)
			i++
		}
	})
}

// BenchmarkMemoryAllowFlood measures a flood of distinct keys at a fixed
// instant, twice the key bound, so eviction runs and its cost shows.
func BenchmarkMemoryAllowFlood(b *testing.B) {
	m := NewMemory()
	clock := newFakeClock()
	m.Now = clock.Now
	ctx := context.Background()
	keys := make([]string, 2*DefaultMaxKeys)
	for i := range keys {
		keys[i] = "ip:" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = m.Allow(ctx, keys[i%len(keys)], 60)
		i++
	}
}
