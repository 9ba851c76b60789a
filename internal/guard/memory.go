package guard

import (
	"context"
	"sync"
	"time"
)

// MaxEntries bounds the declines one counter keeps: more than the largest
// threshold is never needed.
const MaxEntries = 10000

// sweepEvery is how many operations pass between two sweeps of a Memory's
// expired counters.
const sweepEvery = 4096

// Memory is a Counter of one process, with the semantics of Redis. Its
// memory is bounded: a counter is forgotten once its declines left its
// window and its block ended (swept every few thousand operations), and it
// keeps at most MaxEntries declines.
type Memory struct {
	mu  sync.Mutex
	m   map[string]*memEntry
	ops int
}

// memEntry is one counter: its declines (member → time) and its block.
type memEntry struct {
	members    map[string]time.Time
	blockUntil time.Time
	expires    time.Time // nothing of it matters from then on
}

// NewMemory returns an empty in-process counter.
func NewMemory() *Memory { return &Memory{m: make(map[string]*memEntry)} }

var _ Counter = (*Memory)(nil)

// Check implements Counter.
func (c *Memory) Check(_ context.Context, now time.Time, rules []Key) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick(now)
	for i, k := range rules {
		e := c.m[k.Name]
		if e == nil {
			continue
		}
		if now.Before(e.blockUntil) {
			return i, nil
		}
		e.prune(now, k.Window)
		if len(e.members) >= k.Threshold {
			e.members = make(map[string]time.Time)
			e.blockUntil = now.Add(k.Block)
			e.expires = e.blockUntil
			return i, nil
		}
	}
	return -1, nil
}

// Record implements Counter.
func (c *Memory) Record(_ context.Context, now time.Time, rules []Key) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick(now)
	for _, k := range rules {
		e := c.m[k.Name]
		if e == nil {
			e = &memEntry{members: make(map[string]time.Time)}
			c.m[k.Name] = e
		}
		e.members[k.Member] = now
		e.prune(now, k.Window)
		if len(e.members) > MaxEntries {
			e.dropOldest(len(e.members) - MaxEntries)
		}
		if end := now.Add(k.Window); end.After(e.expires) {
			e.expires = end
		}
	}
	return nil
}

// prune forgets the declines that left the window ending at now (a
// decline exactly Window old is out, as in Redis).
func (e *memEntry) prune(now time.Time, window time.Duration) {
	edge := now.Add(-window)
	for m, t := range e.members {
		if !t.After(edge) {
			delete(e.members, m)
		}
	}
}

// dropOldest forgets the n oldest declines.
func (e *memEntry) dropOldest(n int) {
	for range n {
		var oldest string
		var at time.Time
		for m, t := range e.members {
			if oldest == "" || t.Before(at) {
				oldest, at = m, t
			}
		}
		delete(e.members, oldest)
	}
}

// tick counts an operation and, every sweepEvery, forgets the counters
// that expired.
func (c *Memory) tick(now time.Time) {
	c.ops++
	if c.ops < sweepEvery {
		return
	}
	c.ops = 0
	for k, e := range c.m {
		if !now.Before(e.expires) {
			delete(c.m, k)
		}
	}
}

// Len returns how many counters are held, for tests of the memory bound.
func (c *Memory) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
