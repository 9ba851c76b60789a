package ratelimit

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Defaults for Redis.Timeout and Redis.Backoff.
const (
	DefaultTimeout = 250 * time.Millisecond
	DefaultBackoff = time.Second
)

// Redis is a limiter whose budgets are shared by every instance using the
// same Redis server: the limit holds across the cluster, not per process.
// It runs redis_rate's GCRA script, one round trip per request, under keys
// named KeyPrefix + key that expire once their budget is full again.
//
// When Redis fails (unreachable, timing out, answering errors), the request
// is decided by the fallback limiter instead, so budgets are then enforced
// per process; the request itself never fails. The first failure is logged
// once as a warning. After a failure Redis is left alone for Backoff, and
// then one request at a time probes it while the rest keep using the
// fallback, so a dead Redis costs at most one Timeout per Backoff (besides
// the requests already waiting on it when it died); the probe that
// succeeds logs once that Redis is back. The fallback starts
// from full budgets, so at the moment Redis fails each instance allows up
// to a full burst again.
//
// Redis is safe for concurrent use; set its fields before the first Allow.
type Redis struct {
	// Timeout bounds each Redis call; zero means DefaultTimeout. It bounds
	// socket reads and writes only if the client has ContextTimeoutEnabled
	// (Open sets it); otherwise a server that accepts connections but never
	// answers holds the probing request for the client's ReadTimeout. A
	// client built elsewhere should also set DialerRetries to 1, as Open
	// does, or a refused connection is dialled again until Timeout ends.
	Timeout time.Duration
	// Backoff is how long Redis is not asked after a failure; zero means
	// DefaultBackoff.
	Backoff time.Duration
	// Now reads the clock for the backoff; nil means time.Now.
	Now func() time.Time

	limiter  *redis_rate.Limiter
	fallback Limiter
	logger   *slog.Logger

	down      atomic.Bool // read without mu on every request; written under mu
	mu        sync.Mutex
	downSince time.Time
	retryAt   time.Time // while down: leave Redis alone until then
	probing   bool      // while down: one request is asking Redis
}

var _ Limiter = (*Redis)(nil)

// NewRedis returns a limiter sharing budgets through client. A nil fallback
// means a new Memory limiter; a nil logger discards the two lines Redis
// logs. The caller keeps ownership of client and closes it after the last
// Allow.
func NewRedis(client *redis.Client, fallback Limiter, logger *slog.Logger) *Redis {
	if fallback == nil {
		fallback = NewMemory()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Redis{
		limiter:  redis_rate.NewLimiter(namespaced{client}),
		fallback: fallback,
		logger:   logger,
	}
}

// Allow counts one request under key at perMinute requests per minute,
// across every instance sharing the Redis server. It fails with
// ErrInvalidLimit when perMinute < 1, and otherwise only with an error of
// the fallback (a Memory fallback has none): a Redis failure is never
// returned. If ctx ends during the Redis call, the fallback decides and
// Redis is not held to blame.
func (r *Redis) Allow(ctx context.Context, key string, perMinute int) (Decision, error) {
	if perMinute < 1 {
		return Decision{}, ErrInvalidLimit
	}
	use, probe := r.route()
	if !use {
		return r.fallback.Allow(ctx, key, perMinute)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	res, err := r.limiter.Allow(callCtx, key, redis_rate.PerMinute(perMinute))
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		r.abandoned(probe)
		return r.fallback.Allow(ctx, key, perMinute)
	case err != nil:
		r.failed(err, probe)
		return r.fallback.Allow(ctx, key, perMinute)
	case probe:
		r.recovered()
	}
	return fromRedis(res, perMinute), nil
}

// route says whether this request asks Redis, and whether it does so as the
// probe that decides Redis is back.
func (r *Redis) route() (use, probe bool) {
	if !r.down.Load() {
		return true, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.down.Load() {
		return true, false
	}
	if r.probing || r.now().Before(r.retryAt) {
		return false, false
	}
	r.probing = true
	return true, true
}

// failed records a Redis failure. Only the transition to down is logged,
// so a dead Redis makes one line, not one per request. A request that was
// already in flight when Redis went down fails too without logging again,
// and only a probe may bring Redis back up, so such stragglers cannot make
// the log flap.
func (r *Redis) failed(err error, probe bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	backoff := r.Backoff
	if backoff <= 0 {
		backoff = DefaultBackoff
	}
	r.retryAt = now.Add(backoff)
	if probe {
		r.probing = false
	}
	if r.down.Load() {
		return
	}
	r.down.Store(true)
	r.downSince = now
	r.logger.Warn("rate limiter: Redis unavailable; enforcing limits per instance until it answers",
		slog.String("error", err.Error()), slog.Duration("retry_every", backoff))
}

func (r *Redis) recovered() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing = false
	if !r.down.Load() {
		return
	}
	r.down.Store(false)
	r.logger.Info("rate limiter: Redis available again; limits shared across instances",
		slog.Duration("down_for", r.now().Sub(r.downSince)))
}

func (r *Redis) abandoned(probe bool) {
	if !probe {
		return
	}
	r.mu.Lock()
	r.probing = false
	r.mu.Unlock()
}

func (r *Redis) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// roundingSlack absorbs the float rounding of redis_rate's script, whose
// times are seconds since 2017 as doubles (about 0.1 µs of error).
const roundingSlack = 5 * time.Microsecond

// fromRedis converts redis_rate's result. Its ResetAfter is the time until
// the budget is full again; ours is the time until one more request is
// allowed, and Remaining is recomputed from it because the script truncates
// a remaining count such as 98.9999999 to 98.
func fromRedis(res *redis_rate.Result, perMinute int) Decision {
	if res.Allowed == 0 {
		wait := max(res.RetryAfter.Round(time.Microsecond), 0)
		return Decision{Limit: perMinute, ResetAfter: wait, RetryAfter: wait}
	}
	interval := max(time.Minute/time.Duration(perMinute), 1)
	untilFull := res.ResetAfter.Round(time.Microsecond)
	remaining, _ := capacity(untilFull-roundingSlack, interval, perMinute)
	spent := perMinute - remaining
	reset := min(max(untilFull-time.Duration(spent-1)*interval, 0), interval)
	return Decision{Allowed: true, Limit: perMinute, Remaining: remaining, ResetAfter: reset}
}

// namespaced renames the keys redis_rate writes ("rate:" + key) to
// KeyPrefix + key, so that paygate's keys are found, and kept apart from
// other programs', under one prefix.
type namespaced struct{ *redis.Client }

func rename(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = KeyPrefix + strings.TrimPrefix(k, "rate:")
	}
	return out
}

func (n namespaced) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return n.Client.Eval(ctx, script, rename(keys), args...)
}

func (n namespaced) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return n.Client.EvalSha(ctx, sha1, rename(keys), args...)
}

func (n namespaced) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return n.Client.EvalRO(ctx, script, rename(keys), args...)
}

func (n namespaced) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return n.Client.EvalShaRO(ctx, sha1, rename(keys), args...)
}

func (n namespaced) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return n.Client.Del(ctx, rename(keys)...)
}
