// Package ratelimit decides whether a request may proceed under a
// requests-per-minute budget (decisions.md section 6): per API key, and per
// client address for failed authentications.
//
// Two limiters implement one contract. Memory keeps the budget in this
// process; Redis shares it across every instance through one Redis server
// and, when Redis fails, decides in process instead of failing the request.
// Both implement GCRA (the generic cell rate algorithm): a burst of
// perMinute requests, refilled at perMinute per minute, one request every
// minute/perMinute.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// Decision is the outcome of one Allow.
type Decision struct {
	// Allowed reports whether the request may proceed. A refused request
	// does not use up any of the budget.
	Allowed bool
	// Limit is the budget the decision was made under, in requests per
	// minute (X-RateLimit-Limit).
	Limit int
	// Remaining is how many more requests would be allowed right now, after
	// this one (X-RateLimit-Remaining).
	Remaining int
	// ResetAfter is the time until the window frees one more request
	// (X-RateLimit-Reset, to be rounded up to whole seconds). It is never
	// negative; for a refused request it equals RetryAfter.
	ResetAfter time.Duration
	// RetryAfter is, for a refused request, the wait before a retry can be
	// allowed (Retry-After; the HTTP layer rounds it up to at least one
	// second). It is zero for an allowed request.
	RetryAfter time.Duration
}

// Limiter decides whether a request under key may proceed, at perMinute
// requests per minute with a burst of perMinute.
//
// Keys from different budgets (an API key and a client address, say) must
// not collide: callers give each kind its own prefix ("key:", "ip:"). A key
// must not be a secret: the Redis limiter writes it into a Redis key name,
// so limit an API key by its id, never by the key itself.
type Limiter interface {
	// Allow counts one request under key and reports whether it may
	// proceed. It fails only with ErrInvalidLimit when perMinute < 1; a
	// limiter backed by a remote store decides locally rather than
	// returning the store's error.
	Allow(ctx context.Context, key string, perMinute int) (Decision, error)
}

// ErrInvalidLimit is returned by Allow for a perMinute below 1: such a
// budget is a configuration mistake, and neither allowing nor refusing
// every request would be a safe guess.
var ErrInvalidLimit = errors.New("ratelimit: perMinute must be at least 1")

// KeyPrefix starts the name of every key the Redis limiter writes, so that
// paygate shares a Redis server with other programs without collisions.
const KeyPrefix = "paygate:rl:"

// Open returns the limiter an instance should use, and a function that
// releases it. An empty redisURL gives a Memory limiter (budgets per
// process). Otherwise the budgets are shared through the Redis server at
// redisURL (redis:// or rediss://, as redis.ParseURL reads them), with a
// Memory limiter deciding while Redis is unreachable; Redis is not contacted
// until the first request, so an unreachable server is reported on the
// logger then, not here.
//
// Open fails only when redisURL cannot be parsed; the error never repeats
// the URL, which may hold a password. The close function closes the Redis
// client; call it once, after the last Allow.
func Open(redisURL string, logger *slog.Logger) (Limiter, func() error, error) {
	if redisURL == "" {
		return NewMemory(), func() error { return nil }, nil
	}
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error quotes the whole URL, password included
		}
		return nil, nil, fmt.Errorf("ratelimit: invalid Redis URL: %w", err)
	}
	applyDefaults(opt, redisURL)
	if logger != nil {
		// go-redis prints its own connection errors to stderr through a
		// process-wide logger; route them to our JSON log at debug level,
		// since the limiter already reports an outage once.
		redis.SetLogger(slogBridge{logger})
	}
	client := redis.NewClient(opt)
	return NewRedis(client, NewMemory(), logger), client.Close, nil
}

// applyDefaults tunes a client for rate limiting where the URL does not say
// otherwise: the per-call context deadline also bounds socket reads and
// writes (without it a Redis that accepts but never answers would hold
// every request for the read timeout), a refused connection fails at once
// instead of being dialled again after 100 ms pauses that outlast the
// per-call timeout, and a failed call is not retried, since the fallback
// decides at once and a retried script could count a request twice.
func applyDefaults(opt *redis.Options, rawURL string) {
	opt.ContextTimeoutEnabled = true
	opt.DialerRetries = 1
	if u, err := url.Parse(rawURL); err == nil && !u.Query().Has("max_retries") {
		opt.MaxRetries = -1
	}
}

// slogBridge adapts go-redis's internal logger to slog.
type slogBridge struct{ log *slog.Logger }

// Printf logs one go-redis message at debug level.
func (b slogBridge) Printf(ctx context.Context, format string, v ...any) {
	b.log.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}
