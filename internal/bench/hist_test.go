package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketLayout(t *testing.T) {
	// Every bucket's bounds map back to it, and buckets tile the range.
	prevHi := uint64(0)
	for i := range numBuckets {
		lo, hi := bucketBounds(i)
		if i > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d [%d,%d]: bucketOf gives %d, %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo > 0 && float64(hi-lo) > float64(lo)/128 {
			t.Fatalf("bucket %d [%d,%d] is wider than 1/128 of its values", i, lo, hi)
		}
		prevHi = hi
	}
	if prevHi != maxValue {
		t.Fatalf("last bucket ends at %d, want %d", prevHi, uint64(maxValue))
	}
}

func TestQuantilesOfKnownDurations(t *testing.T) {
	var h Histogram
	// 1..10000 microseconds, shuffled: the q-quantile is q*10000 µs.
	vals := make([]time.Duration, 10000)
	for i := range vals {
		vals[i] = time.Duration(i+1) * time.Microsecond
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	for _, v := range vals {
		h.Record(v)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := time.Duration(q*10000) * time.Microsecond
		got := h.Quantile(q)
		if d := got - want; d < -want/100 || d > want/100 {
			t.Errorf("Quantile(%v) = %v, want %v within 1%%", q, got, want)
		}
	}
	if h.Count() != 10000 || h.Min() != time.Microsecond || h.Max() != 10*time.Millisecond {
		t.Errorf("count %d min %v max %v", h.Count(), h.Min(), h.Max())
	}
	if got, want := h.Mean(), 5000500*time.Nanosecond; got != want {
		t.Errorf("mean %v, want %v", got, want)
	}
	if h.Quantile(1) != h.Max() || h.Quantile(0) != h.Min() {
		t.Errorf("Quantile(0) %v Quantile(1) %v, want min and max", h.Quantile(0), h.Quantile(1))
	}
}

func TestQuantilesOfTwoModes(t *testing.T) {
	// 90% at 1 ms, 10% at 20 ms: p50 and p90 are 1 ms, p99 20 ms.
	var h Histogram
	for i := range 1000 {
		if i%10 == 9 {
			h.Record(20 * time.Millisecond)
		} else {
			h.Record(time.Millisecond)
		}
	}
	check := func(q float64, want time.Duration) {
		t.Helper()
		if got := h.Quantile(q); got < want-want/100 || got > want+want/100 {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	check(0.5, time.Millisecond)
	check(0.9, time.Millisecond)
	check(0.91, 20*time.Millisecond)
	check(0.99, 20*time.Millisecond)
}

func TestHistogramEdges(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Min() != 0 || h.Buckets() != nil {
		t.Fatal("an empty histogram must report zeros")
	}
	h.Record(-time.Second)
	h.Record(time.Hour) // beyond the range: counted at the top
	if h.Min() != 0 || h.Max() != time.Duration(maxValue) || h.Count() != 2 {
		t.Fatalf("min %v max %v count %d", h.Min(), h.Max(), h.Count())
	}
	var a, b Histogram
	a.Record(time.Millisecond)
	b.Record(3 * time.Millisecond)
	b.Record(time.Microsecond)
	a.Merge(&b)
	if a.Count() != 3 || a.Min() != time.Microsecond || a.Max() != 3*time.Millisecond {
		t.Fatalf("merged: count %d min %v max %v", a.Count(), a.Min(), a.Max())
	}
	bs := a.Buckets()
	if len(bs) != 3 || !slices.IsSortedFunc(bs, func(x, y Bucket) int { return int(x.Lo - y.Lo) }) {
		t.Fatalf("buckets %+v", bs)
	}
}

func TestRecordConcurrently(t *testing.T) {
	var h Histogram
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000+i+1) * time.Microsecond)
			}
			done <- struct{}{}
		}()
	}
	for range 8 {
		<-done
	}
	if h.Count() != 8000 || h.Max() != 8*time.Millisecond || h.Min() != time.Microsecond {
		t.Fatalf("count %d min %v max %v", h.Count(), h.Min(), h.Max())
	}
}
