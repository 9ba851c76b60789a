package payment

import (
	"context"
	"sync"
	"time"
)

// job is the life of one of this package's background jobs (recovery, the
// refund worker, the 3-D Secure expirer, the token sweeper): a goroutine
// that runs the job's work at once, then at every tick (and every kick),
// until stop.
type job struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// start launches run: at once, then every interval and whenever kick
// receives (a nil kick never does), until stop. The job's context is
// detached from ctx's cancellation: only stop ends it.
func (j *job) start(ctx context.Context, interval time.Duration, kick <-chan struct{}, run func(context.Context)) {
	ctx, j.cancel = context.WithCancel(context.WithoutCancel(ctx))
	j.done = make(chan struct{})
	go func() {
		defer close(j.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			run(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-kick:
			}
		}
	}()
}

// stop cancels the job's context and returns once its goroutine has
// exited. It may be called more than once, and before start.
func (j *job) stop() {
	j.once.Do(func() {
		if j.cancel == nil {
			return
		}
		j.cancel()
		<-j.done
	})
}
