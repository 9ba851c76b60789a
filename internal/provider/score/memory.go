package score

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/paygate/paygate/internal/paygate"
)

// Memory is a Scorer of this process alone: rings of the last attempts,
// under one lock held for a few map reads at a time.
type Memory struct {
	mu     sync.Mutex
	groups map[Group]*group
}

var _ Scorer = (*Memory)(nil)

// NewMemory returns an empty in-process scorer.
func NewMemory() *Memory {
	return &Memory{groups: map[Group]*group{}}
}

// group is one mode, currency and brand: each provider's window of counted
// attempts, and the ring of which provider each recent attempt went to.
type group struct {
	windows map[string]*window
	traffic ring[string]
	counts  map[string]int64 // attempts per provider in traffic
}

// window is a provider's last counted attempts: true when approved.
type window struct {
	ring     ring[bool]
	approved int64
}

// ring keeps the last entries pushed, up to its size.
type ring[T any] struct {
	buf  []T
	next int // where the next entry goes once buf is full
}

// push adds v, keeping at most size entries, and calls out with each entry
// that falls out (the oldest).
func (r *ring[T]) push(v T, size int, out func(T)) {
	if len(r.buf) > size {
		// The route's window got shorter: drop the oldest.
		r.rotate()
		for len(r.buf) > size {
			out(r.buf[0])
			r.buf = r.buf[1:]
		}
	}
	if len(r.buf) == size {
		old := r.buf[r.next]
		r.buf[r.next] = v
		r.next = (r.next + 1) % size
		out(old)
		return
	}
	r.rotate()
	r.buf = append(r.buf, v)
}

// rotate puts the oldest entry first, so that buf can grow or shrink.
func (r *ring[T]) rotate() {
	if r.next == 0 {
		return
	}
	r.buf = append(slices.Clone(r.buf[r.next:]), r.buf[:r.next]...)
	r.next = 0
}

// Record implements Scorer.
func (m *Memory) Record(_ context.Context, g Group, provider string, size int, o Outcome) {
	if size < 1 {
		size = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gr := m.groups[g]
	if gr == nil {
		gr = &group{windows: map[string]*window{}, counts: map[string]int64{}}
		m.groups[g] = gr
	}
	gr.counts[provider]++
	gr.traffic.push(provider, size, func(old string) {
		if gr.counts[old]--; gr.counts[old] == 0 {
			delete(gr.counts, old)
		}
	})
	if o == Uncounted {
		return
	}
	w := gr.windows[provider]
	if w == nil {
		w = &window{}
		gr.windows[provider] = w
	}
	if o == Approved {
		w.approved++
	}
	w.ring.push(o == Approved, size, func(old bool) {
		if old {
			w.approved--
		}
	})
}

// Stats implements Scorer.
func (m *Memory) Stats(g Group, providers []string, out []Stat) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gr := m.groups[g]
	for i, p := range providers {
		out[i] = Stat{}
		if gr == nil {
			continue
		}
		out[i] = gr.stat(p)
	}
}

func (gr *group) stat(p string) Stat {
	var s Stat
	if w := gr.windows[p]; w != nil {
		s.Attempts, s.Approved = int64(len(w.ring.buf)), w.approved
	}
	s.Traffic = gr.counts[p]
	if n := len(gr.traffic.buf); n > 0 {
		s.Share = float64(s.Traffic) / float64(n)
	}
	return s
}

// Scores implements Scorer: every provider with a window or traffic.
func (m *Memory) Scores() []paygate.RoutingScore {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []paygate.RoutingScore
	for g, gr := range m.groups {
		seen := map[string]bool{}
		add := func(p string) {
			if seen[p] {
				return
			}
			seen[p] = true
			out = append(out, routingScore(g, p, gr.stat(p)))
		}
		for p := range gr.windows {
			add(p)
		}
		for p := range gr.counts {
			add(p)
		}
	}
	SortScores(out)
	return out
}

func routingScore(g Group, provider string, s Stat) paygate.RoutingScore {
	return paygate.RoutingScore{
		Mode: g.Mode, ProviderID: provider, Currency: g.Currency, Brand: g.Brand,
		Attempts: s.Attempts, Approved: s.Approved, Score: s.Score(), Share: s.Share,
	}
}

// SortScores sorts scores by mode, currency, brand and provider, as the
// store returns them.
func SortScores(scores []paygate.RoutingScore) {
	sort.Slice(scores, func(i, j int) bool {
		a, b := scores[i], scores[j]
		if a.Mode != b.Mode {
			return a.Mode < b.Mode
		}
		if a.Currency != b.Currency {
			return a.Currency < b.Currency
		}
		if a.Brand != b.Brand {
			return a.Brand < b.Brand
		}
		return a.ProviderID < b.ProviderID
	})
}
