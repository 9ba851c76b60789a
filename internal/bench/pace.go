package bench

import (
	"context"
	"sync/atomic"
	"time"
)

// pacer hands the start of each operation of a run to the clients that
// share it, the same way for the gateway's load (Run) and the database's
// (RunBaseline): in a closed loop an operation starts when its client is
// free; in an open loop the operations are due one every interval from t0,
// whoever is free takes the next, and an operation's latency counts from
// when it was due. It counts the operations measured (started after the
// warmup) and missed (due before the end but started after it, every client
// being busy), and the end of the last measured one.
type pacer struct {
	t0       time.Time // start of the run, warmup included
	measure  time.Time // end of the warmup
	end      time.Time // end of the measurement; zero when counting
	interval time.Duration
	requests int64 // operations to measure when counting

	next     atomic.Int64 // index of the next operation (open loop)
	measured atomic.Int64
	missed   atomic.Int64
	lastEnd  atomic.Int64 // unix nanos of the last measured completion
	stopped  atomic.Bool
}

// newPacer starts a run now: a warmup, then a measurement of duration or,
// when requests is positive, of that many operations; rate, when positive,
// makes it an open loop.
func newPacer(warmup, duration time.Duration, requests int64, rate float64) *pacer {
	p := &pacer{t0: time.Now(), requests: requests}
	p.measure = p.t0.Add(warmup)
	if requests <= 0 {
		p.end = p.measure.Add(duration)
	}
	if rate > 0 {
		p.interval = time.Duration(float64(time.Second) / rate)
	}
	return p
}

// intendedAt is the intended start of operation i of an open loop that
// starts at t0 with one operation every interval.
func intendedAt(t0 time.Time, interval time.Duration, i int64) time.Time {
	return t0.Add(time.Duration(i) * interval)
}

// take waits for the calling client's next operation and returns when it
// started (was due, in an open loop) and whether it is measured; ok is
// false when the run is over.
func (p *pacer) take(ctx context.Context) (start time.Time, measured, ok bool) {
	for ctx.Err() == nil && !p.stopped.Load() {
		if p.interval > 0 {
			start = intendedAt(p.t0, p.interval, p.next.Add(1)-1)
			if !p.end.IsZero() && !start.Before(p.end) {
				return time.Time{}, false, false
			}
			if now := time.Now(); start.After(now) {
				t := time.NewTimer(start.Sub(now))
				select {
				case <-ctx.Done():
					t.Stop()
					return time.Time{}, false, false
				case <-t.C:
				}
			} else if !p.end.IsZero() && !now.Before(p.end) {
				// Due before the end, but every client was busy until
				// after it: the load the tool could not deliver.
				p.missed.Add(1)
				continue
			}
		} else {
			start = time.Now()
			if !p.end.IsZero() && !start.Before(p.end) {
				return time.Time{}, false, false
			}
		}
		measured = !start.Before(p.measure)
		if measured {
			if n := p.measured.Add(1); p.requests > 0 && n > p.requests {
				p.stopped.Store(true)
				return time.Time{}, false, false
			}
		}
		return start, measured, true
	}
	return time.Time{}, false, false
}

// finished notes the end of a measured operation.
func (p *pacer) finished() {
	now := time.Now().UnixNano()
	for {
		l := p.lastEnd.Load()
		if now <= l || p.lastEnd.CompareAndSwap(l, now) {
			return
		}
	}
}

// result fills the counts of res: operations measured and missed, and the
// measurement's length (from the end of the warmup to the end of the last
// measured operation).
func (p *pacer) result(res *Result) {
	res.Operations, res.Missed = p.measured.Load(), p.missed.Load()
	if p.requests > 0 {
		res.Operations = min(res.Operations, p.requests)
	}
	if l := p.lastEnd.Load(); l > 0 {
		res.Elapsed = time.Unix(0, l).Sub(p.measure)
	}
}
