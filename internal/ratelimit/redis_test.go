package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// count returns how many of the lines logged so far are at level.
func count(logs *testenv.Buffer, level string) int {
	return strings.Count(logs.String(), "level="+level+" ")
}

func newLogger() (*slog.Logger, *testenv.Buffer) {
	buf := &testenv.Buffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// newClient returns a client for addr tuned as Open tunes it, closed when
// the test ends.
func newClient(t *testing.T, rawURL string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("parse %s: %v", rawURL, err)
	}
	applyDefaults(opt, rawURL)
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newTestRedis returns a Redis limiter whose calls may take long enough
// for a starved test machine (-race, every package at once on two cores):
// tests that expect Redis to decide must not see it time out.
func newTestRedis(client *redis.Client, fallback Limiter, logger *slog.Logger) *Redis {
	r := NewRedis(client, fallback, logger)
	r.Timeout = 10 * time.Second
	return r
}

// randomKey returns a key no other test (or earlier run) uses.
func randomKey(t *testing.T) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "test:" + hex.EncodeToString(b[:])
}

func TestRedisLimitSharedAcrossInstances(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	key := randomKey(t)
	const perMinute = 30 // one request per 2 s: the test ends before any refill

	// Two instances, as two server processes would have: their own client,
	// their own fallback.
	logger, logs := newLogger()
	instances := []*Redis{
		newTestRedis(newClient(t, url), NewMemory(), logger),
		newTestRedis(newClient(t, url), NewMemory(), logger),
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 10 {
				d, err := instances[w%2].Allow(context.Background(), key, perMinute)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != perMinute {
		t.Errorf("%d allowed across two instances, want exactly %d", got, perMinute)
	}
	if s := logs.String(); s != "" {
		t.Errorf("Redis was up, yet the limiter logged:\n%s", s)
	}

	// The state lives under paygate's prefix and expires by itself.
	c := newClient(t, url)
	ttl, err := c.TTL(context.Background(), KeyPrefix+key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > time.Minute+time.Second {
		t.Errorf("TTL of %s = %v, want a positive expiry of at most a minute", KeyPrefix+key, ttl)
	}
	if n, _ := c.Exists(context.Background(), "rate:"+key, "rate:"+KeyPrefix+key).Result(); n != 0 {
		t.Errorf("found a key outside %s", KeyPrefix)
	}
}

func TestRedisDecisionValues(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	r := newTestRedis(newClient(t, url), NewMemory(), nil)
	for _, perMinute := range []int{1, 7, 30, 100, 1000} {
		key := randomKey(t)
		interval := time.Minute / time.Duration(perMinute)
		// Use the whole budget where that takes well under one interval;
		// at 1000/min one request frees every 60 ms, so look at the first.
		n := perMinute
		if perMinute > 100 {
			n = 1
		}
		for i := 1; i <= n; i++ {
			d := allow(t, r, key, perMinute)
			if !d.Allowed || d.Limit != perMinute || d.Remaining != perMinute-i || d.RetryAfter != 0 {
				t.Fatalf("%d/min, request %d: got %+v, want allowed, Remaining %d", perMinute, i, d, perMinute-i)
			}
			// The request just made frees first, an interval after it was made.
			if d.ResetAfter <= interval-time.Second || d.ResetAfter > interval {
				t.Fatalf("%d/min, request %d: ResetAfter %v, want about %v", perMinute, i, d.ResetAfter, interval)
			}
		}
		if n < perMinute {
			continue
		}
		d := allow(t, r, key, perMinute)
		if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > interval || d.ResetAfter != d.RetryAfter {
			t.Fatalf("%d/min, over the limit: got %+v, want refused with 0 < RetryAfter = ResetAfter <= %v", perMinute, d, interval)
		}
	}
}

func TestRedisFallbackWhenUnreachable(t *testing.T) {
	t.Parallel()
	logger, logs := newLogger()
	fallback := newTestMemory(newFakeClock())
	r := NewRedis(newClient(t, "redis://127.0.0.1:1/0"), fallback, logger) // nothing listens on port 1

	const perMinute = 50
	allowed := 0
	for range 200 {
		d := allow(t, r, fallbackKey, perMinute)
		if d.Allowed {
			allowed++
		}
	}
	if allowed != perMinute {
		t.Errorf("%d allowed, want the fallback's %d", allowed, perMinute)
	}
	if n := count(logs, "WARN"); n != 1 {
		t.Errorf("%d warnings for 200 requests, want exactly 1; log:\n%s", n, logs)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Errorf("%d log lines, want 1; log:\n%s", n, logs)
	}
}

// fallbackKey needs no randomness: the tests using it never reach Redis.
const fallbackKey = "key:0c6f2d8e-3b1a-4d5e-8f70-9a1b2c3d4e5f"

// proxy forwards connections to Redis while up; while down it cuts every
// connection, as a Redis restart or a network partition would.
type proxy struct {
	t        *testing.T
	ln       net.Listener
	target   string
	accepted atomic.Int64

	mu    sync.Mutex
	up    bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, up: true, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.setUp(false)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if !p.up {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(s, c); _ = s.Close() })
		p.wg.Go(func() { _, _ = io.Copy(c, s); _ = c.Close() })
	}
}

func (p *proxy) setUp(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if !up {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}

func (p *proxy) url() string { return "redis://" + p.ln.Addr().String() + "/0" }

func TestRedisFailsOverAndRecovers(t *testing.T) {
	t.Parallel()
	opt, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, opt.Addr)
	logger, logs := newLogger()
	clock := newFakeClock()
	r := newTestRedis(newClient(t, p.url()), newTestMemory(clock), logger)
	r.Now = clock.Now
	key := randomKey(t)
	const perMinute = 10

	// Up: Redis decides.
	if d := allow(t, r, key, perMinute); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("through Redis: got %+v, want allowed with Remaining 9", d)
	}

	// Down: the fallback decides, with a budget of its own; Redis is asked
	// once, then left alone for the backoff.
	p.setUp(false)
	allowed := 0
	for range 20 {
		if allow(t, r, key, perMinute).Allowed {
			allowed++
		}
	}
	if allowed != perMinute {
		t.Errorf("while down: %d allowed, want the fallback's %d", allowed, perMinute)
	}
	before := p.accepted.Load()
	clock.Add(r.backoffForTest() / 2)
	for range 20 {
		allow(t, r, key, perMinute)
	}
	if after := p.accepted.Load(); after != before {
		t.Errorf("Redis was dialled %d times during the backoff, want 0", after-before)
	}
	if n := count(logs, "WARN"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1; log:\n%s", n, logs)
	}

	// Back up: after the backoff a probe finds Redis, which still holds
	// the state from before the outage (9 left, now 8).
	p.setUp(true)
	clock.Add(r.backoffForTest())
	if d := allow(t, r, key, perMinute); !d.Allowed || d.Remaining != 8 {
		t.Fatalf("after recovery: got %+v, want Redis's decision, allowed with Remaining 8", d)
	}
	if n := count(logs, "INFO"); n != 1 {
		t.Errorf("%d info lines on recovery, want 1; log:\n%s", n, logs)
	}
	for range 5 {
		allow(t, r, key, perMinute)
	}
	if n := strings.Count(logs.String(), "\n"); n != 2 {
		t.Errorf("%d log lines for one outage and recovery, want 2; log:\n%s", n, logs)
	}

	// A second outage is reported again.
	p.setUp(false)
	allow(t, r, key, perMinute)
	if n := count(logs, "WARN"); n != 2 {
		t.Errorf("%d warnings after a second outage, want 2; log:\n%s", n, logs)
	}
}

func (r *Redis) backoffForTest() time.Duration {
	if r.Backoff > 0 {
		return r.Backoff
	}
	return DefaultBackoff
}

// A Redis that accepts connections but never answers costs one Timeout,
// then nothing until the backoff ends.
func TestRedisHungServerCostsOneTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var held sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = ln.Close(); held.Wait() })
	held.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held.Go(func() { <-done; _ = c.Close() })
		}
	})

	logger, logs := newLogger()
	clock := newFakeClock()
	r := NewRedis(newClient(t, "redis://"+ln.Addr().String()+"/0"), newTestMemory(clock), logger)
	r.Now = clock.Now
	r.Timeout = 100 * time.Millisecond

	start := time.Now()
	if d := allow(t, r, "k", 10); !d.Allowed {
		t.Fatalf("got %+v, want the fallback to allow", d)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("first request took %v with a 100ms timeout", elapsed)
	}
	before := accepted.Load()
	for range 50 {
		allow(t, r, "k", 10)
	}
	if after := accepted.Load(); after != before {
		t.Errorf("Redis was dialled %d more times during the backoff, want 0", after-before)
	}
	if n := count(logs, "WARN"); n != 1 {
		t.Errorf("%d warnings, want 1; log:\n%s", n, logs)
	}
}

func TestRedisCallerCancelIsNotAnOutage(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	logger, logs := newLogger()
	r := newTestRedis(newClient(t, url), NewMemory(), logger)
	key := randomKey(t)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := r.Allow(ctx, key, 10)
	if err != nil || !d.Allowed {
		t.Fatalf("with a cancelled context: got %+v, %v; want the fallback's decision", d, err)
	}
	if s := logs.String(); s != "" {
		t.Errorf("a cancelled caller was logged as a Redis outage:\n%s", s)
	}
	// Redis is still in use.
	allow(t, r, key, 10)
	if n, _ := newClient(t, url).Exists(context.Background(), KeyPrefix+key).Result(); n != 1 {
		t.Errorf("the next request did not reach Redis")
	}
}

func TestRedisErrInvalidLimit(t *testing.T) {
	t.Parallel()
	r := NewRedis(newClient(t, "redis://127.0.0.1:1/0"), nil, nil)
	if _, err := r.Allow(context.Background(), "k", 0); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("err = %v, want ErrInvalidLimit", err)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	t.Run("OKMemory", func(t *testing.T) {
		l, closeFn, err := Open("", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := l.(*Memory); !ok {
			t.Errorf("Open(\"\") = %T, want *Memory", l)
		}
		if err := closeFn(); err != nil {
			t.Error(err)
		}
	})
	t.Run("OKRedis", func(t *testing.T) {
		url := testenv.RedisURL(t)
		l, closeFn, err := Open(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := closeFn(); err != nil {
				t.Error(err)
			}
		}()
		r, ok := l.(*Redis)
		if !ok {
			t.Fatalf("Open(%q) = %T, want *Redis", url, l)
		}
		r.Timeout = 10 * time.Second // see newTestRedis
		key := randomKey(t)
		allow(t, l, key, 10)
		if n, _ := newClient(t, url).Exists(context.Background(), KeyPrefix+key).Result(); n != 1 {
			t.Errorf("no key %s in Redis after a request", KeyPrefix+key)
		}
	})
	t.Run("ErrBadURL", func(t *testing.T) {
		for _, u := range []string{"redis://user:s3cret@localhost:notaport/0", "http://localhost/0", "redis://localhost/0?bogus=1"} {
			_, _, err := Open(u, nil)
			if err == nil {
				t.Errorf("Open(%q): no error", u)
				continue
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Open(%q): error leaks the password: %v", u, err)
			}
		}
	})
	t.Run("OKDefaults", func(t *testing.T) {
		opt, _ := redis.ParseURL("redis://localhost/0")
		applyDefaults(opt, "redis://localhost/0")
		if !opt.ContextTimeoutEnabled || opt.MaxRetries != -1 {
			t.Errorf("defaults: ContextTimeoutEnabled %v, MaxRetries %d; want true, -1", opt.ContextTimeoutEnabled, opt.MaxRetries)
		}
		opt, _ = redis.ParseURL("redis://localhost/0?max_retries=2")
		applyDefaults(opt, "redis://localhost/0?max_retries=2")
		if opt.MaxRetries != 2 {
			t.Errorf("max_retries=2 in the URL became %d", opt.MaxRetries)
		}
	})
}
