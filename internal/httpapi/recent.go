package httpapi

import (
	"hash/maphash"
	"sync"

	"github.com/paygate/paygate/internal/paygate"
)

// recentKeys remembers which idempotency keys this node has seen lately,
// by a hash of (merchant, mode, key), in two generations of at most
// recentGeneration entries each. A payment whose key is known
// (knownPayer) skips its reads and lets its insert verify the key and
// reserve the idempotency key, which costs a replay its validation and a
// write statement; an idempotency key seen before is most likely a retry,
// so its request reads the key and the record first (one round trip) and a
// replay is answered from the record. Either way is correct: a collision or
// a forgotten key only picks the other one.
type recentKeys struct {
	seed maphash.Seed
	mu   sync.Mutex
	cur  map[uint64]struct{}
	prev map[uint64]struct{}
}

const recentGeneration = 1 << 16

func newRecentKeys() *recentKeys {
	return &recentKeys{seed: maphash.MakeSeed(), cur: make(map[uint64]struct{})}
}

func (r *recentKeys) hash(merchantID string, mode paygate.Mode, key string) uint64 {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(merchantID)
	h.WriteByte(0)
	h.WriteString(string(mode))
	h.WriteByte(0)
	h.WriteString(key)
	return h.Sum64()
}

// seen records the key and reports whether it was seen before.
func (r *recentKeys) seen(merchantID string, mode paygate.Mode, key string) bool {
	k := r.hash(merchantID, mode, key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.cur[k]; ok {
		return true
	}
	_, ok := r.prev[k]
	if len(r.cur) >= recentGeneration {
		r.prev, r.cur = r.cur, make(map[uint64]struct{}, recentGeneration)
	}
	r.cur[k] = struct{}{}
	return ok
}
