// Package bench is the engine of `paygate bench`: it drives concurrent
// merchant clients against a gateway, records every request's latency in
// log-linear histograms, and renders the report (text, JSON, SVG).
package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram layout: values are nanoseconds; below 2^subBits each value has
// its own bucket, above it every power of two is split into 2^(subBits-1)
// equal buckets, so a bucket's width is at most 1/128 of its values: the
// error of a reported percentile is under 1%.
const (
	subBits    = 8
	subCount   = 1 << (subBits - 1) // buckets per power of two
	maxShift   = 37 - subBits       // values up to 2^37 ns (137 s)
	maxValue   = 1<<37 - 1
	numBuckets = (maxShift+1)*subCount + subCount
)

// Histogram counts durations in log-linear buckets. Record is safe for
// concurrent use (atomic adds); the readers expect recording to be over.
type Histogram struct {
	counts [numBuckets]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	max    atomic.Int64
	min    atomic.Int64 // 0 while empty, else the smallest value + 1
}

// bucketOf returns the bucket index of v nanoseconds (0 <= v <= maxValue).
func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	shift := bits.Len64(v) - subBits // >= 1
	mant := v >> uint(shift)         // in [2^(subBits-1), 2^subBits)
	return shift*subCount + int(mant)
}

// bucketBounds returns the smallest and largest value of bucket i.
func bucketBounds(i int) (lo, hi uint64) {
	if i < 1<<subBits {
		return uint64(i), uint64(i)
	}
	shift := uint(i/subCount - 1)
	mant := uint64(i%subCount + subCount)
	lo = mant << shift
	return lo, lo + (1 << shift) - 1
}

// Record counts one duration. Negative durations count as zero; durations
// beyond 137 s count as 137 s.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	if v > maxValue {
		v = maxValue
	}
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if int64(v) <= m || h.max.CompareAndSwap(m, int64(v)) {
			break
		}
	}
	for {
		m := h.min.Load()
		if (m != 0 && int64(v)+1 >= m) || h.min.CompareAndSwap(m, int64(v)+1) {
			break
		}
	}
}

// Count returns how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Max returns the largest duration recorded, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min returns the smallest duration recorded, exactly; 0 when empty.
func (h *Histogram) Min() time.Duration {
	m := h.min.Load()
	if m == 0 {
		return 0
	}
	return time.Duration(m - 1)
}

// Mean returns the average duration; 0 when empty.
func (h *Histogram) Mean() time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the duration below or at which a fraction q (0..1) of
// the recorded durations lie: the midpoint of the bucket holding the
// ceil(q*count)-th smallest value, clamped to the exact min and max. 0 when
// empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	switch rank { // the extremes are known exactly
	case 1:
		return h.Min()
	case n:
		return h.Max()
	}
	var seen uint64
	for i := range h.counts {
		c := h.counts[i].Load()
		if c == 0 {
			continue
		}
		seen += c
		if seen >= rank {
			lo, hi := bucketBounds(i)
			v := time.Duration(lo + (hi-lo)/2)
			return min(max(v, h.Min()), h.Max())
		}
	}
	return h.Max()
}

// Merge adds every count of o into h.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.total.Add(o.total.Load())
	h.sum.Add(o.sum.Load())
	if m := o.max.Load(); m > h.max.Load() {
		h.max.Store(m)
	}
	if m := o.min.Load(); m != 0 && (h.min.Load() == 0 || m < h.min.Load()) {
		h.min.Store(m)
	}
}

// Bucket is one non-empty bucket of a histogram, for the distribution
// chart.
type Bucket struct {
	Lo, Hi time.Duration
	Count  uint64
}

// Buckets returns the non-empty buckets, in increasing order.
func (h *Histogram) Buckets() []Bucket {
	var out []Bucket
	for i := range h.counts {
		if c := h.counts[i].Load(); c != 0 {
			lo, hi := bucketBounds(i)
			out = append(out, Bucket{Lo: time.Duration(lo), Hi: time.Duration(hi), Count: c})
		}
	}
	return out
}
