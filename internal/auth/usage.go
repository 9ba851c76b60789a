package auth

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/paygate/paygate/internal/paygate"
)

// UsageGranularity is how coarsely key use is recorded: at most one time
// per key per UsageGranularity, written at most once per
// UsageGranularity.
const UsageGranularity = time.Minute

// usageFinalFlush bounds the last write when Run's context ends.
const usageFinalFlush = 5 * time.Second

// UsageStore is what a UsageRecorder writes to (a paygate.Store).
type UsageStore interface {
	// Commit applies a unit; the recorder's units hold one
	// paygate.APIKeyUsage, which moves each key's LastUsedAt forward to
	// the given time.
	Commit(ctx context.Context, u paygate.Unit) error
}

// UsageRecorder records when API keys are used, off the request path: Seen
// notes a use in memory, and Run writes what was noted to the store every
// minute. The dashboard shows the time, so minute precision is enough, and
// a request never waits for a write.
//
// Times not yet written are lost if the process dies; a store error keeps
// them for the next write.
type UsageRecorder struct {
	store    UsageStore
	log      *slog.Logger
	interval time.Duration

	mu      sync.Mutex
	last    map[string]time.Time // the last time noted per key
	pending map[string]time.Time // noted and not yet written
}

// NewUsageRecorder returns a recorder writing to store every
// UsageGranularity. log receives write failures; nil discards them.
func NewUsageRecorder(store UsageStore, log *slog.Logger) *UsageRecorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &UsageRecorder{
		store:    store,
		log:      log,
		interval: UsageGranularity,
		last:     make(map[string]time.Time),
		pending:  make(map[string]time.Time),
	}
}

// Seen notes that the key was used at at. It takes a mutex and touches a
// map, nothing more; a key noted less than UsageGranularity before at is
// not noted again.
func (u *UsageRecorder) Seen(keyID string, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if last, ok := u.last[keyID]; ok && at.Before(last.Add(UsageGranularity)) {
		return
	}
	u.last[keyID] = at
	u.pending[keyID] = at
}

// Flush writes the noted times now. On a store error the times are kept
// (merged with any noted meanwhile) for the next flush, and the error is
// returned.
func (u *UsageRecorder) Flush(ctx context.Context) error {
	u.mu.Lock()
	batch := u.pending
	u.pending = make(map[string]time.Time, len(batch))
	u.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := u.store.Commit(ctx, paygate.Unit{Ops: []paygate.Op{paygate.APIKeyUsage{Used: batch}}})

	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		for id, t := range batch {
			if cur, ok := u.pending[id]; !ok || t.After(cur) {
				u.pending[id] = t
			}
		}
		return fmt.Errorf("auth: record API key usage: %w", err)
	}
	// Forget keys not seen for a while, so that the map holds only keys in
	// use: the next use of a forgotten key is noted at once, as it should.
	var newest time.Time
	for _, t := range batch {
		if t.After(newest) {
			newest = t
		}
	}
	stale := newest.Add(-2 * UsageGranularity)
	for id, t := range u.last {
		if _, waiting := u.pending[id]; !waiting && t.Before(stale) {
			delete(u.last, id)
		}
	}
	return nil
}

// Run flushes every UsageGranularity until ctx ends, then flushes once more
// (for at most a few seconds) and returns. Failed flushes are logged and
// retried at the next tick.
func (u *UsageRecorder) Run(ctx context.Context) {
	t := time.NewTicker(u.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), usageFinalFlush)
			defer cancel()
			if err := u.Flush(fctx); err != nil {
				u.log.Warn("could not record API key usage before stopping", "error", err)
			}
			return
		case <-t.C:
			if err := u.Flush(ctx); err != nil && ctx.Err() == nil {
				u.log.Warn("could not record API key usage; retrying at the next tick", "error", err)
			}
		}
	}
}
