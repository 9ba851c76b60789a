package idempotency

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// Purger deletes idempotency records older than paygate.IdempotencyTTL, on
// start and then every interval. Records past the TTL are already ignored
// by reservation; purging only keeps the table small, so several nodes
// purging at once is harmless.
type Purger struct {
	store    paygate.Store
	clock    paygate.Clock
	interval time.Duration
	log      *slog.Logger

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewPurger returns a stopped Purger.
func NewPurger(store paygate.Store, clock paygate.Clock, interval time.Duration, log *slog.Logger) *Purger {
	return &Purger{store: store, clock: clock, interval: interval, log: log}
}

// Start launches the purge loop. It returns at once.
func (p *Purger) Start(ctx context.Context) error {
	ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			p.PurgeOnce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// PurgeOnce deletes the expired records now and returns how many.
func (p *Purger) PurgeOnce(ctx context.Context) int64 {
	n, err := p.store.PurgeIdempotency(ctx, p.clock.Now().Add(-paygate.IdempotencyTTL))
	if err != nil {
		if ctx.Err() == nil {
			p.log.Error("purge idempotency records", "error", err)
		}
		return 0
	}
	if n > 0 {
		p.log.Info("purged expired idempotency records", "count", n)
	}
	return n
}

// Stop ends the loop and returns once it has exited.
func (p *Purger) Stop() {
	p.once.Do(func() {
		if p.cancel != nil {
			p.cancel()
			<-p.done
		}
	})
}
