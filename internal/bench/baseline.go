package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// BaselineConfig is a run without the gateway: concurrency goroutines each
// call Tx in a loop, the way the gateway's clients create payments. Tx is a
// payment's writes to the database alone (--baseline), or the calls a
// connector makes to its provider alone (--provider stripe-mock).
type BaselineConfig struct {
	Concurrency int
	Duration    time.Duration // of the measurement, after the warmup
	Requests    int64         // when positive, measure that many calls instead
	// Rate, when positive, starts calls at a steady Rate per second (an
	// open loop, as Config.Rate) instead of as fast as they end.
	Rate   float64
	Warmup time.Duration
	// Tx performs one payment's work (the writes of one payment in one
	// transaction, or a connector's calls); n is unique within the run.
	Tx func(ctx context.Context, n int64) error
	// AtMeasure, when set, is called when the warmup ends (Config's).
	AtMeasure func()
}

// RunBaseline runs cfg.Tx as fast as the database allows (or at cfg.Rate)
// and records each call's latency. Failed calls are counted under
// BASELINE_FAILED, the first one's error in the result's ErrorSample.
func RunBaseline(ctx context.Context, cfg BaselineConfig) (*Result, error) {
	if cfg.Concurrency < 1 {
		return nil, errors.New("concurrency must be at least 1")
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return nil, errors.New("a duration or a number of requests is required")
	}
	pace := newPacer(cfg.Warmup, cfg.Duration, cfg.Requests, cfg.Rate)
	rec := NewRecorder(pace.measure)
	var seq atomic.Int64
	var failSample atomic.Value
	if cfg.AtMeasure != nil {
		t := time.AfterFunc(cfg.Warmup, cfg.AtMeasure)
		defer t.Stop()
	}
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for {
				start, measured, ok := pace.take(ctx)
				if !ok {
					return
				}
				err := cfg.Tx(ctx, seq.Add(1))
				if !measured || ctx.Err() != nil {
					continue
				}
				o := Outcome{Status: 201}
				if err != nil {
					failSample.CompareAndSwap(nil, err.Error())
					o = Outcome{Status: 500, Name: "BASELINE_FAILED"}
				}
				rec.Record(KindPayment, start, time.Since(start), o)
				pace.finished()
			}
		})
	}
	wg.Wait()
	res := &Result{Rec: rec, Interrupted: ctx.Err() != nil}
	pace.result(res)
	if s, ok := failSample.Load().(string); ok {
		res.ErrorSample = s
	}
	return res, nil
}
