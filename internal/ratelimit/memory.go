package ratelimit

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

// DefaultMaxKeys is how many keys a Memory limiter tracks unless told
// otherwise: about 15 MB at worst, enough for every API key of a large
// installation plus a flood of client addresses.
const DefaultMaxKeys = 100_000

// shardCount spreads keys over independently locked maps so that concurrent
// requests under different keys rarely wait for each other.
const shardCount = 32

// Memory is an in-process GCRA limiter. It is safe for concurrent use; set
// its fields before the first Allow and leave them alone afterwards. Create
// it with NewMemory: the zero value is not ready for use.
//
// Memory never holds more than about MaxKeys keys, so a flood of distinct
// keys (random client addresses) cannot grow it without bound. A key whose
// budget has fully refilled carries no information and is dropped first.
// Only when more than MaxKeys keys are all partly spent at once are state
// entries really lost: then the keys closest to a full budget go, and come
// back with a full budget. A key that has been driven to its limit is among
// the last to go, so flooding other keys does not reset it.
type Memory struct {
	// Now reads the clock; nil means time.Now. Tests inject a fake clock.
	Now func() time.Time
	// MaxKeys bounds how many keys are tracked (rounded up to a multiple
	// of 32); zero or less means DefaultMaxKeys.
	MaxKeys int

	epoch  time.Time // times are kept as nanoseconds since epoch
	seed   maphash.Seed
	shards [shardCount]shard
}

type shard struct {
	mu sync.Mutex
	// tat maps a key to its theoretical arrival time: when its budget will
	// be full again, in nanoseconds since Memory.epoch.
	tat     map[string]int64
	scratch []int64 // reused by evict
}

var _ Limiter = (*Memory)(nil)

// NewMemory returns an empty in-process limiter.
func NewMemory() *Memory {
	m := &Memory{epoch: time.Now(), seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].tat = make(map[string]int64)
	}
	return m
}

// Allow counts one request under key at perMinute requests per minute. It
// fails only with ErrInvalidLimit when perMinute < 1; ctx is not used.
func (m *Memory) Allow(_ context.Context, key string, perMinute int) (Decision, error) {
	if perMinute < 1 {
		return Decision{}, ErrInvalidLimit
	}
	now := m.now()
	interval := max(int64(time.Minute)/int64(perMinute), 1) // one request's share
	burst := interval * int64(perMinute)                    // the whole budget

	s := &m.shards[maphash.String(m.seed, key)%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()

	tat, known := s.tat[key]
	if !known || tat < now {
		tat = now // a full budget
	}
	next := tat + interval
	if allowAt := next - burst; now < allowAt {
		wait := time.Duration(allowAt - now)
		return Decision{Limit: perMinute, ResetAfter: wait, RetryAfter: wait}, nil
	}
	if !known {
		if limit := m.shardLimit(); len(s.tat) >= limit {
			s.evict(now, limit)
		}
	}
	s.tat[key] = next
	remaining, reset := capacity(time.Duration(next-now), time.Duration(interval), perMinute)
	return Decision{Allowed: true, Limit: perMinute, Remaining: remaining, ResetAfter: reset}, nil
}

// capacity turns the time until a key's budget is full again (untilFull)
// into the requests allowed right now and the time until one more is.
func capacity(untilFull, interval time.Duration, perMinute int) (remaining int, resetAfter time.Duration) {
	spent := int((untilFull + interval - 1) / interval) // requests the budget is short of full
	spent = min(max(spent, 1), perMinute)
	return perMinute - spent, max(untilFull-time.Duration(spent-1)*interval, 0)
}

func (m *Memory) now() int64 {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	return int64(now().Sub(m.epoch))
}

func (m *Memory) shardLimit() int {
	n := m.MaxKeys
	if n <= 0 {
		n = DefaultMaxKeys
	}
	return max((n+shardCount-1)/shardCount, 1)
}

// evict makes room for at least one new key in a shard holding limit keys.
// It drops every key whose budget is full again, which loses nothing. If
// that frees less than a quarter of the shard it also drops the keys with
// the earliest arrival times, those closest to a full budget, so that the
// next full scan is a quarter of the shard's inserts away and the cost per
// insert stays constant under a flood.
func (s *shard) evict(now int64, limit int) {
	for k, tat := range s.tat {
		if tat <= now {
			delete(s.tat, k)
		}
	}
	target := min(limit-limit/4, limit-1)
	excess := len(s.tat) - target
	if excess <= 0 {
		return
	}
	s.scratch = s.scratch[:0]
	for _, tat := range s.tat {
		s.scratch = append(s.scratch, tat)
	}
	slices.Sort(s.scratch)
	cut := s.scratch[excess-1]
	for k, tat := range s.tat {
		if tat < cut {
			delete(s.tat, k)
			excess--
		}
	}
	for k, tat := range s.tat {
		if excess == 0 {
			break
		}
		if tat == cut {
			delete(s.tat, k)
			excess--
		}
	}
}
