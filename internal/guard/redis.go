package guard

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisTimeout bounds each Redis call of the guard: a slow Redis
// costs a payment at most this much before the guard fails open.
const DefaultRedisTimeout = 250 * time.Millisecond

// KeyPrefix starts every key the guard writes in Redis.
const KeyPrefix = "paygate:guard:"

// Redis is a Counter shared by every node using the same Redis server. A
// counter is a sorted set of declines scored by their time in milliseconds
// (ZREMRANGEBYSCORE slides the window, ZCARD counts), which expires on its
// own one window after its last decline (PEXPIRE); a block is a key
// holding the time it ends, which expires with it (PX). Each Check and
// Record is one Lua script, so one round trip and atomic: two nodes that
// check at once cannot both miss a threshold.
//
// Times are the caller's clock, not Redis's: every node's clock should
// agree within a second or so, as for any cluster.
type Redis struct {
	client  redis.UniversalClient
	timeout time.Duration
}

var _ Counter = (*Redis)(nil)

// NewRedis returns a counter on client; timeout <= 0 means
// DefaultRedisTimeout. The caller closes the client.
func NewRedis(client redis.UniversalClient, timeout time.Duration) *Redis {
	if timeout <= 0 {
		timeout = DefaultRedisTimeout
	}
	return &Redis{client: client, timeout: timeout}
}

// Open returns a Redis counter for redisURL, with a client tuned as the
// rate limiter's: the call's deadline bounds socket reads and writes, a
// refused connection fails at once, and a failed call is never retried (a
// retried Record could count a decline twice). The returned function
// closes the client.
func Open(redisURL string) (*Redis, func() error, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error quotes the whole URL, password included
		}
		return nil, nil, fmt.Errorf("guard: invalid Redis URL: %w", err)
	}
	opt.ContextTimeoutEnabled = true
	opt.DialerRetries = 1
	opt.MaxRetries = -1
	client := redis.NewClient(opt)
	return NewRedis(client, 0), client.Close, nil
}

// checkScript: KEYS are (counter, block) pairs, one per rule; ARGV[1] the
// time in ms, then per rule its threshold, window and block in ms. It
// returns the 1-based index of the rule that blocks, 0 when none does.
var checkScript = redis.NewScript(`
local now = tonumber(ARGV[1])
for i = 1, #KEYS / 2 do
  local c, b = KEYS[2*i-1], KEYS[2*i]
  local untilMs = redis.call('GET', b)
  if untilMs and tonumber(untilMs) > now then
    return i
  end
  local th, win, blk = tonumber(ARGV[3*i-1]), tonumber(ARGV[3*i]), tonumber(ARGV[3*i+1])
  redis.call('ZREMRANGEBYSCORE', c, '-inf', now - win)
  if redis.call('ZCARD', c) >= th then
    redis.call('SET', b, tostring(now + blk), 'PX', blk)
    redis.call('DEL', c)
    return i
  end
end
return 0
`)

// recordScript: KEYS are the counters; ARGV[1] the time in ms, ARGV[2]
// the most entries a counter keeps, then per counter its member and window
// in ms.
var recordScript = redis.NewScript(`
local now, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 1, #KEYS do
  local c, m, win = KEYS[i], ARGV[2*i+1], tonumber(ARGV[2*i+2])
  redis.call('ZADD', c, now, m)
  redis.call('ZREMRANGEBYSCORE', c, '-inf', now - win)
  if redis.call('ZCARD', c) > keep then
    redis.call('ZREMRANGEBYRANK', c, 0, -(keep + 1))
  end
  redis.call('PEXPIRE', c, win)
end
return 0
`)

// Check implements Counter.
func (r *Redis) Check(ctx context.Context, now time.Time, rules []Key) (int, error) {
	keys := make([]string, 0, 2*len(rules))
	args := make([]any, 0, 1+3*len(rules))
	args = append(args, now.UnixMilli())
	for _, k := range rules {
		keys = append(keys, KeyPrefix+k.Name, KeyPrefix+k.Name+":block")
		args = append(args, k.Threshold, ms(k.Window), ms(k.Block))
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	i, err := checkScript.Run(ctx, r.client, keys, args...).Int()
	if err != nil {
		return -1, fmt.Errorf("guard: redis check: %w", err)
	}
	return i - 1, nil
}

// Record implements Counter.
func (r *Redis) Record(ctx context.Context, now time.Time, rules []Key) error {
	keys := make([]string, 0, len(rules))
	args := make([]any, 0, 2+2*len(rules))
	args = append(args, now.UnixMilli(), MaxEntries)
	for _, k := range rules {
		keys = append(keys, KeyPrefix+k.Name)
		args = append(args, k.Member, ms(k.Window))
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := recordScript.Run(ctx, r.client, keys, args...).Err(); err != nil {
		return fmt.Errorf("guard: redis record: %w", err)
	}
	return nil
}

// ms is a duration in whole milliseconds, at least 1 (PX and PEXPIRE
// refuse 0).
func ms(d time.Duration) string {
	n := d.Milliseconds()
	if n < 1 {
		n = 1
	}
	return strconv.FormatInt(n, 10)
}
