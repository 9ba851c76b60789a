package metrics

import (
	"maps"
	"sync"
	"sync/atomic"
)

// cache keeps the children of a vector by their labels, so that the hot
// path finds its series with one map read and no allocation: a vector's
// WithLabelValues hashes the values and takes a lock on every call, and its
// variadic argument escapes. Reads are lock-free (the map is replaced, never
// changed); a miss copies it, which is cheap because the label values are
// few and each misses once.
type cache[K comparable, V any] struct {
	mu   sync.Mutex
	m    atomic.Pointer[map[K]V]
	make func(K) V
	// limit, when above zero, bounds the keys kept: past it a new key is
	// served the child of overflow(key), whose keys must be few.
	limit    int
	overflow func(K) K
}

// get returns the child of k, making it on the first call.
func (c *cache[K, V]) get(k K) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	n := 0
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
		n = len(*old)
	}
	if c.limit > 0 && n >= c.limit {
		o := c.overflow(k)
		if old != nil {
			if v, ok := (*old)[o]; ok {
				return v
			}
		}
		k = o // kept past the limit: overflow keys are few
	}
	next := make(map[K]V, n+1)
	if old != nil {
		maps.Copy(next, *old)
	}
	v := c.make(k)
	next[k] = v
	c.m.Store(&next)
	return v
}

// len is how many children the cache holds.
func (c *cache[K, V]) len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}
