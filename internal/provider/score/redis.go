package score

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paygate/paygate/internal/paygate"
)

// Defaults of the Redis scorer.
const (
	// DefaultRedisTimeout bounds each Redis call: a slow Redis costs an
	// attempt at most this much before the scorer falls back.
	DefaultRedisTimeout = 250 * time.Millisecond
	// DefaultCacheFor is how long the windows read from Redis serve
	// routing decisions before they are read again (in the background).
	// Each recorded attempt also brings its group's windows back.
	DefaultCacheFor = time.Second
	// DefaultRetryAfter is how long after a failed call the scorer uses
	// this node's own windows alone before it tries Redis again.
	DefaultRetryAfter = time.Second
	// KeyTTL is how long a group's windows outlive its last attempt.
	KeyTTL = 24 * time.Hour
)

// KeyPrefix starts every key the scorer writes in Redis.
const KeyPrefix = "paygate:score:"

// RedisConfig configures a Redis scorer; zero fields take the defaults.
type RedisConfig struct {
	Timeout    time.Duration
	CacheFor   time.Duration
	RetryAfter time.Duration
	Clock      paygate.Clock
	Logger     *slog.Logger
	// OnError is called for each Redis call that failed (the metrics'
	// paygate_routing_score_errors_total); nil: none.
	OnError func()
}

// Redis is a Scorer shared by every node using the same Redis server.
//
// A group (mode, currency, brand) is a hash of counters (per provider: its
// window's attempts and approvals, and its recent traffic), a list of the
// providers of its last attempts, and per provider a list of its window's
// outcomes; all of a group's keys share a hash tag, so they live on one
// Redis Cluster slot. Record is one Lua script, so atomic and one round
// trip, and it answers the group's counters, which this node keeps for
// its decisions; Stats reads only that copy, and reads the counters again
// in the background when they are older than CacheFor. Every attempt is
// also kept in a Memory: while Redis fails, decisions use this node's
// windows, the failure is logged once and every failed call counted
// (OnError), and Redis is tried again after RetryAfter.
type Redis struct {
	client redis.UniversalClient
	cfg    RedisConfig
	local  *Memory

	mu         sync.Mutex
	cache      map[Group]*cached
	failing    bool
	retryAfter time.Time
}

// cached is a group's counters as Redis last answered them.
type cached struct {
	stats      map[string]Stat
	at         time.Time
	refreshing bool
}

var _ Scorer = (*Redis)(nil)

// NewRedis returns a scorer on client; the caller closes the client.
func NewRedis(client redis.UniversalClient, cfg RedisConfig) *Redis {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultRedisTimeout
	}
	if cfg.CacheFor <= 0 {
		cfg.CacheFor = DefaultCacheFor
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = paygate.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Redis{client: client, cfg: cfg, local: NewMemory(), cache: map[Group]*cached{}}
}

// keys returns the group's counters, traffic list and the provider's
// window list.
func keys(g Group, provider string) (counters, traffic, window string) {
	base := KeyPrefix + "{" + string(g.Mode) + ":" + g.Currency + ":" + g.Brand + "}:"
	return base + "c", base + "t", base + "w:" + provider
}

// recordScript: KEYS the group's counters, its traffic list and the
// provider's window; ARGV the provider, the window's size, the outcome
// ("1" approved, "0" failed, "" uncounted) and the keys' time to live in
// ms. Counters are fields "n:" (attempts), "a:" (approved) and "t:"
// (traffic) followed by the provider. A key that expired or was evicted
// without the others is made consistent first, so that any eviction
// policy is safe: a provider's window list exists exactly when its "n:"
// counter does (each outcome pushed increments it, and trimming keeps it
// at least 1), so when one is missing both go, whichever provider's
// window it is (the counters hash may have lost every provider's: each
// provider's list is dropped at its next attempt, and until then the
// counters say it has no attempts); the traffic list and the "t:"
// counters likewise. It answers HGETALL of the counters.
var recordScript = redis.NewScript(`
local c, t, w = KEYS[1], KEYS[2], KEYS[3]
local p, size, o, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
if (redis.call('EXISTS', w) == 1) ~= (redis.call('HEXISTS', c, 'n:' .. p) == 1) then
  redis.call('DEL', w)
  redis.call('HDEL', c, 'n:' .. p, 'a:' .. p)
end
if redis.call('EXISTS', c) == 0 then
  redis.call('DEL', t)
elseif redis.call('EXISTS', t) == 0 then
  for _, f in ipairs(redis.call('HKEYS', c)) do
    if string.sub(f, 1, 2) == 't:' then
      redis.call('HDEL', c, f)
    end
  end
end
redis.call('LPUSH', t, p)
redis.call('HINCRBY', c, 't:' .. p, 1)
while redis.call('LLEN', t) > size do
  local old = redis.call('RPOP', t)
  if redis.call('HINCRBY', c, 't:' .. old, -1) <= 0 then
    redis.call('HDEL', c, 't:' .. old)
  end
end
if o ~= '' then
  redis.call('LPUSH', w, o)
  redis.call('HINCRBY', c, 'n:' .. p, 1)
  if o == '1' then
    redis.call('HINCRBY', c, 'a:' .. p, 1)
  end
  while redis.call('LLEN', w) > size do
    local old = redis.call('RPOP', w)
    redis.call('HINCRBY', c, 'n:' .. p, -1)
    if old == '1' then
      redis.call('HINCRBY', c, 'a:' .. p, -1)
    end
  end
  redis.call('PEXPIRE', w, ttl)
end
redis.call('PEXPIRE', t, ttl)
redis.call('PEXPIRE', c, ttl)
return redis.call('HGETALL', c)
`)

// Record implements Scorer: the attempt goes to this node's windows, and
// to Redis unless Redis failed less than RetryAfter ago.
func (r *Redis) Record(ctx context.Context, g Group, provider string, size int, o Outcome) {
	if size < 1 {
		size = 1
	}
	r.local.Record(ctx, g, provider, size, o)
	if !r.tryRedis() {
		return
	}
	c, t, w := keys(g, provider)
	arg := ""
	switch o {
	case Approved:
		arg = "1"
	case Failed:
		arg = "0"
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Timeout)
	defer cancel()
	res, err := recordScript.Run(ctx, r.client, []string{c, t, w}, provider, size, arg, KeyTTL.Milliseconds()).StringSlice()
	if err != nil {
		r.fail(fmt.Errorf("record: %w", err))
		return
	}
	r.store(g, res, false)
}

// tryRedis reports whether Redis is to be used now: it is not failing, or
// it failed at least RetryAfter ago and this caller is the one probe
// (claimProbe).
func (r *Redis) tryRedis() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.claimProbe(r.cfg.Clock.Now())
}

// claimProbe, with mu held, reports whether a call may go to Redis now.
// While Redis fails, once RetryAfter has passed, the first caller gets
// the probe and pushes retryAfter forward before trying, so that the
// payments running meanwhile keep routing on this node's scores rather
// than all waiting on a Redis that does not answer (single flight: one
// probe per RetryAfter; each payment still costs at most one round trip).
func (r *Redis) claimProbe(now time.Time) bool {
	if !r.failing {
		return true
	}
	if now.Before(r.retryAfter) {
		return false
	}
	r.retryAfter = now.Add(r.cfg.RetryAfter + r.cfg.Timeout)
	return true
}

// fail notes a failed call: counted, logged when Redis was working.
func (r *Redis) fail(err error) {
	if r.cfg.OnError != nil {
		r.cfg.OnError()
	}
	r.mu.Lock()
	was := r.failing
	r.failing, r.retryAfter = true, r.cfg.Clock.Now().Add(r.cfg.RetryAfter)
	r.mu.Unlock()
	if !was {
		r.cfg.Logger.Error("routing scores: Redis unavailable; routing on this node's own scores until it answers", "error", err)
	}
}

// store keeps a group's counters (HGETALL's answer, field then value) as
// of now.
func (r *Redis) store(g Group, kv []string, refreshed bool) {
	stats := map[string]Stat{}
	var total int64
	for i := 0; i+1 < len(kv); i += 2 {
		kind, p, ok := strings.Cut(kv[i], ":")
		n, err := strconv.ParseInt(kv[i+1], 10, 64)
		if !ok || err != nil {
			continue
		}
		s := stats[p]
		switch kind {
		case "n":
			s.Attempts = n
		case "a":
			s.Approved = n
		case "t":
			s.Traffic = n
			total += n
		}
		stats[p] = s
	}
	for p, s := range stats {
		if total > 0 {
			s.Share = float64(s.Traffic) / float64(total)
		}
		stats[p] = s
	}
	r.mu.Lock()
	was := r.failing
	r.failing = false
	c := r.cache[g]
	if c == nil {
		c = &cached{}
		r.cache[g] = c
	}
	c.stats, c.at = stats, r.cfg.Clock.Now()
	if refreshed {
		c.refreshing = false
	}
	r.mu.Unlock()
	if was {
		r.cfg.Logger.Info("routing scores: Redis answers again; routing on the shared scores")
	}
}

// Stats implements Scorer: the group's counters as Redis last answered
// them (read again in the background when older than CacheFor), or this
// node's own while Redis fails or before it first answered for the group.
func (r *Redis) Stats(g Group, providers []string, out []Stat) {
	now := r.cfg.Clock.Now()
	r.mu.Lock()
	c := r.cache[g]
	useLocal := r.failing || c == nil || c.stats == nil
	if c == nil || !c.refreshing && now.Sub(c.at) >= r.cfg.CacheFor {
		if r.claimProbe(now) {
			if c == nil {
				c = &cached{}
				r.cache[g] = c
			}
			c.refreshing = true
			go r.refresh(g)
		}
	}
	if !useLocal {
		for i, p := range providers {
			out[i] = c.stats[p]
		}
	}
	r.mu.Unlock()
	if useLocal {
		r.local.Stats(g, providers, out)
	}
}

// refresh reads a group's counters again.
func (r *Redis) refresh(g Group) {
	c, _, _ := keys(g, "")
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	res, err := r.client.HGetAll(ctx, c).Result()
	if err != nil {
		r.mu.Lock()
		if cc := r.cache[g]; cc != nil {
			cc.refreshing = false
		}
		r.mu.Unlock()
		r.fail(fmt.Errorf("read: %w", err))
		return
	}
	kv := make([]string, 0, 2*len(res))
	for k, v := range res {
		kv = append(kv, k, v)
	}
	r.store(g, kv, true)
}

// Scores implements Scorer: what this node last read from Redis, or its
// own windows while Redis fails.
func (r *Redis) Scores() []paygate.RoutingScore {
	r.mu.Lock()
	if r.failing {
		r.mu.Unlock()
		return r.local.Scores()
	}
	var out []paygate.RoutingScore
	for g, c := range r.cache {
		for p, s := range c.stats {
			out = append(out, routingScore(g, p, s))
		}
	}
	r.mu.Unlock()
	SortScores(out)
	return out
}

// OpenRedis returns a Redis scorer for redisURL, with a client tuned as the
// guard's: the call's deadline bounds socket reads and writes, a refused
// connection fails at once, and a failed call is never retried (a retried
// Record could count an attempt twice). The returned function closes the
// client.
func OpenRedis(redisURL string, cfg RedisConfig) (*Redis, func() error, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error quotes the whole URL, password included
		}
		return nil, nil, fmt.Errorf("routing scores: invalid Redis URL: %w", err)
	}
	opt.ContextTimeoutEnabled = true
	opt.DialerRetries = 1
	opt.MaxRetries = -1
	client := redis.NewClient(opt)
	return NewRedis(client, cfg), client.Close, nil
}
