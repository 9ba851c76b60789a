package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// BaselineConfig is a database-only run: concurrency goroutines each call
// Tx in a loop, the way the gateway's clients create payments.
type BaselineConfig struct {
	Concurrency int
	Duration    time.Duration // of the measurement, after the warmup
	Requests    int64         // when positive, measure that many calls instead
	Warmup      time.Duration
	// Tx performs the writes of one payment in one transaction; n is
	// unique within the run.
	Tx func(ctx context.Context, n int64) error
}

// RunBaseline runs cfg.Tx as fast as the database allows and records each
// call's latency. Failed calls are counted under BASELINE_FAILED, the first
// one's error in the result's ErrorSample.
func RunBaseline(ctx context.Context, cfg BaselineConfig) (*Result, error) {
	if cfg.Concurrency < 1 {
		return nil, errors.New("concurrency must be at least 1")
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return nil, errors.New("a duration or a number of requests is required")
	}
	t0 := time.Now()
	measure := t0.Add(cfg.Warmup)
	var end time.Time
	if cfg.Requests <= 0 {
		end = measure.Add(cfg.Duration)
	}
	rec := NewRecorder(measure)
	var seq, measured, lastEnd atomic.Int64
	var failSample atomic.Value
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				if !end.IsZero() && !start.Before(end) {
					return
				}
				in := !start.Before(measure)
				if in && cfg.Requests > 0 && measured.Add(1) > cfg.Requests {
					return
				} else if in && cfg.Requests <= 0 {
					measured.Add(1)
				}
				err := cfg.Tx(ctx, seq.Add(1))
				if !in || ctx.Err() != nil {
					continue
				}
				o := Outcome{Status: 201}
				if err != nil {
					failSample.CompareAndSwap(nil, err.Error())
					o = Outcome{Status: 500, Name: "BASELINE_FAILED"}
				}
				rec.Record(KindPayment, start, time.Since(start), o)
				now := time.Now().UnixNano()
				for {
					l := lastEnd.Load()
					if now <= l || lastEnd.CompareAndSwap(l, now) {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	res := &Result{Rec: rec, Operations: measured.Load(), Interrupted: ctx.Err() != nil}
	if cfg.Requests > 0 {
		res.Operations = min(measured.Load(), cfg.Requests)
	}
	if l := lastEnd.Load(); l > 0 {
		res.Elapsed = time.Unix(0, l).Sub(measure)
	}
	if s, ok := failSample.Load().(string); ok {
		res.ErrorSample = s
	}
	return res, nil
}
