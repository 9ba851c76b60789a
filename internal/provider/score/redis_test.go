package score

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/paygate/paygate/internal/paygate"
	"github.com/paygate/paygate/internal/testenv"
)

// testGroup is a group no other test (or earlier run) uses.
func testGroup(t *testing.T) Group {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return Group{Mode: paygate.ModeTest, Currency: "EUR", Brand: "test-" + hex.EncodeToString(b[:])}
}

// redisClient returns a client of addr tuned as OpenRedis tunes it.
func redisClient(t *testing.T, rawURL, addr string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if addr != "" {
		opt.Addr = addr
	}
	opt.ContextTimeoutEnabled, opt.DialerRetries, opt.MaxRetries = true, 1, -1
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRedisSharedBetweenNodes(t *testing.T) {
	u := testenv.RedisURL(t)
	g := testGroup(t)
	clock := testenv.NewClock(time.Now())
	cfg := RedisConfig{Timeout: 10 * time.Second, Clock: clock}
	a := NewRedis(redisClient(t, u, ""), cfg)
	b := NewRedis(redisClient(t, u, ""), cfg)

	fill(a, g, "sandbox-a", 5, 4, 3)
	fill(b, g, "sandbox-a", 5, 3, 3) // the window of 5: a's last two (1 approved) and b's three
	b.Record(context.Background(), g, "sandbox-b", 5, Failed)
	b.Record(context.Background(), g, "sandbox-b", 5, Uncounted)
	// b's last record answered the group's counters: b knows a's attempts.
	got := stats(b, g, "sandbox-a", "sandbox-b")
	if got[0].Attempts != 5 || got[0].Approved != 4 {
		t.Fatalf("node b's view of sandbox-a: %+v, want the shared window (5 attempts, 4 approved)", got[0])
	}
	if got[1].Attempts != 1 || got[1].Approved != 0 {
		t.Fatalf("node b's view of sandbox-b: %+v, want 1 counted attempt", got[1])
	}
	// The group's last 5 attempts: 3 at sandbox-a, 2 at sandbox-b.
	if got[0].Traffic != 3 || got[0].Share != 0.6 || got[1].Traffic != 2 || got[1].Share != 0.4 {
		t.Fatalf("traffic: %+v, want sandbox-a 3 and sandbox-b 2 of the last 5", got)
	}

	// Node a last read before b's records; after CacheFor its Stats read
	// again in the background.
	if got := stats(a, g, "sandbox-b")[0]; got.Attempts != 0 {
		t.Fatalf("node a saw b's records before reading: %+v", got)
	}
	clock.Add(DefaultCacheFor)
	_ = stats(a, g, "sandbox-b")
	waitFor(t, "node a to read the shared counters", func() bool {
		return stats(a, g, "sandbox-b")[0].Attempts == 1
	})
	scores := a.Scores()
	var mine []paygate.RoutingScore
	for _, s := range scores {
		if s.Brand == g.Brand {
			mine = append(mine, s)
		}
	}
	if len(mine) != 2 || mine[0].ProviderID != "sandbox-a" || mine[0].Score != 0.8 || mine[1].Attempts != 1 {
		t.Fatalf("node a's scores: %+v", mine)
	}
}

// TestRedisTrafficWindow checks that the traffic ring slides as the
// windows do.
func TestRedisTrafficWindow(t *testing.T) {
	u := testenv.RedisURL(t)
	g := testGroup(t)
	r := NewRedis(redisClient(t, u, ""), RedisConfig{Timeout: 10 * time.Second})
	fill(r, g, "a", 4, 4, 4)
	fill(r, g, "b", 4, 3, 0)
	got := stats(r, g, "a", "b")
	if got[0].Traffic != 1 || got[1].Traffic != 3 || got[1].Share != 0.75 {
		t.Fatalf("traffic over the last 4 attempts: %+v", got)
	}
	if got[0].Attempts != 4 || got[0].Approved != 4 || got[1].Attempts != 3 || got[1].Approved != 0 {
		t.Fatalf("windows: %+v", got)
	}
}

// cutProxy forwards TCP connections to Redis while up and cuts them all
// while down.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	up     bool
	conns  []net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, up: true}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if !p.up {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				_ = c.Close()
				continue
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); p.set(false) })
	return p
}

func (p *cutProxy) set(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if !up {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

func TestRedisOutageFallsBack(t *testing.T) {
	u := testenv.RedisURL(t)
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startCutProxy(t, opt.Addr)
	g := testGroup(t)
	clock := testenv.NewClock(time.Now())
	logs := &testenv.Buffer{}
	var errs atomic.Int64
	r := NewRedis(redisClient(t, u, proxy.ln.Addr().String()), RedisConfig{
		Timeout: 2 * time.Second, Clock: clock, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		OnError: func() { errs.Add(1) },
	})
	// Another node that keeps Redis, to tell shared from local.
	other := NewRedis(redisClient(t, u, ""), RedisConfig{Timeout: 10 * time.Second})

	fill(r, g, "a", 100, 10, 10)
	if errs.Load() != 0 {
		t.Fatalf("%d errors while Redis is up", errs.Load())
	}
	proxy.set(false)
	fill(r, g, "a", 100, 5, 0)
	if n := errs.Load(); n != 1 {
		t.Fatalf("%d errors counted after the first failure, want 1 (no retry within RetryAfter)", n)
	}
	// Decisions go on with this node's windows: all 15 attempts.
	if got := stats(r, g, "a")[0]; got.Attempts != 15 || got.Approved != 10 {
		t.Fatalf("during the outage: %+v, want this node's 15 attempts, 10 approved", got)
	}
	if len(r.Scores()) == 0 {
		t.Fatal("no scores during the outage")
	}
	// After RetryAfter it tries again, fails again, counted, logged once.
	clock.Add(DefaultRetryAfter)
	r.Record(context.Background(), g, "a", 100, Approved)
	if n := errs.Load(); n != 2 {
		t.Fatalf("%d errors after a retry during the outage, want 2", n)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d error lines for one outage, want 1:\n%s", n, logs)
	}

	// Redis returns: the next attempt after RetryAfter goes there again and
	// decisions use the shared window (only what reached Redis: 10 approved
	// before, 1 now, plus the other node's 2).
	proxy.set(true)
	fill(other, g, "a", 100, 2, 2)
	clock.Add(DefaultRetryAfter)
	r.Record(context.Background(), g, "a", 100, Approved)
	if got := stats(r, g, "a")[0]; got.Attempts != 13 || got.Approved != 13 {
		t.Fatalf("after Redis returned: %+v, want the shared window (13 attempts, 13 approved)", got)
	}
	if !strings.Contains(logs.String(), "Redis answers again") {
		t.Fatalf("the recovery was not logged:\n%s", logs)
	}
}

// blackhole listens on loopback, accepts connections and never answers.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// After RetryAfter, of the payments running at once against a Redis that
// does not answer, only one probes it; the others route on this node's
// scores without waiting.
func TestRedisRetrySingleFlight(t *testing.T) {
	t.Parallel()
	addr := blackhole(t)
	clock := testenv.NewClock(time.Now())
	var errs atomic.Int64
	r := NewRedis(redisClient(t, "redis://"+addr, ""), RedisConfig{
		Timeout: 100 * time.Millisecond, CacheFor: time.Hour, Clock: clock, OnError: func() { errs.Add(1) },
	})
	g := testGroup(t)
	r.Record(context.Background(), g, "a", 100, Approved)
	if n := errs.Load(); n != 1 {
		t.Fatalf("%d errors after the first call, want 1", n)
	}
	clock.Add(DefaultRetryAfter)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.Record(context.Background(), g, "a", 100, Approved)
		}()
		go func() {
			defer wg.Done()
			var out [1]Stat
			r.Stats(g, []string{"a"}, out[:])
		}()
	}
	wg.Wait()
	waitFor(t, "the probe to fail", func() bool { return errs.Load() >= 2 })
	time.Sleep(200 * time.Millisecond) // any other probe would have failed by now
	if n := errs.Load(); n != 2 {
		t.Fatalf("%d failed calls after RetryAfter with 40 concurrent callers, want 2 (one probe)", n)
	}
	var out [1]Stat
	r.Stats(g, []string{"a"}, out[:])
	if out[0].Attempts != 21 {
		t.Fatalf("local scores: %+v, want the 21 attempts", out[0])
	}
}

// When Redis evicts a group's counters hash (any eviction policy), every
// provider's window is started again at its next attempt, never counted
// against counters that no longer match it.
func TestRedisCountersEvicted(t *testing.T) {
	u := testenv.RedisURL(t)
	client := redisClient(t, u, "")
	r := NewRedis(client, RedisConfig{Timeout: 10 * time.Second})
	g := testGroup(t)
	ctx := context.Background()
	for range 3 {
		r.Record(ctx, g, "a", 3, Approved)
		r.Record(ctx, g, "b", 3, Approved)
	}
	c, tr, _ := keys(g, "")
	if err := client.Del(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	r.Record(ctx, g, "a", 3, Failed)
	for range 3 {
		r.Record(ctx, g, "b", 3, Failed)
	}
	got := stats(r, g, "a", "b")
	if got[0].Attempts != 1 || got[0].Approved != 0 || got[1].Attempts != 3 || got[1].Approved != 0 {
		t.Fatalf("after the counters' eviction: a %+v, b %+v; want a 1 attempt, b 3, none approved", got[0], got[1])
	}
	// The traffic list evicted alone: its counters start again.
	if err := client.Del(ctx, tr).Err(); err != nil {
		t.Fatal(err)
	}
	r.Record(ctx, g, "a", 3, Approved)
	got = stats(r, g, "a", "b")
	if got[0].Traffic != 1 || got[1].Traffic != 0 || got[0].Share != 1 {
		t.Fatalf("after the traffic list's eviction: a %+v, b %+v", got[0], got[1])
	}
}
