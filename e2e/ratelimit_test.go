package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/testenv"
)

const probePath = "/v1/payments/00000000-0000-0000-0000-000000000000"

// TestRateLimitInProcess covers decisions §6 with the in-process limiter.
func TestRateLimitInProcess(t *testing.T) {
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Limits Ltd")
	g := startGateway(t, db, "--rate-limit-test", "5", "--rate-limit-unauthenticated", "3")
	for i := range 5 {
		r := g.call(http.MethodGet, probePath, m.TestSecretKey, nil)
		expect(t, r, 404)
		if r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) || r.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("headers on request %d: %v", i, r.Header)
		}
	}
	r := g.call(http.MethodGet, probePath, m.TestSecretKey, nil)
	expect(t, r, 429, "RATE_LIMITED")
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	// Live keys have their own budget.
	expect(t, g.call(http.MethodGet, probePath, m.LiveSecretKey, nil), 404)

	// Failed authentications are limited per address; a valid key is not.
	bad := "smtgw_sk_test_" + strings.Repeat("Z", 40)
	for range 3 {
		expect(t, g.call(http.MethodGet, probePath, bad, nil), 401, "UNAUTHORIZED")
	}
	expect(t, g.call(http.MethodGet, probePath, bad, nil), 429, "RATE_LIMITED")
	expect(t, g.call(http.MethodGet, probePath, "", nil), 429, "RATE_LIMITED")
	expect(t, g.call(http.MethodGet, probePath, m.LiveSecretKey, nil), 404)
}

// TestRateLimitSharedThroughRedis runs two gateways on one database and one
// Redis: together they allow exactly the limit. A Redis call slower than the
// limiter's timeout is decided by the in-process fallback by design, and the
// gateway logs it; on a loaded machine that can happen, so a round in which a
// gateway fell back is repeated with a fresh key, while an overshoot without a
// fallback fails at once.
func TestRateLimitSharedThroughRedis(t *testing.T) {
	redisURL := testenv.RedisURL(t)
	db := postgresEngine().url(t)
	g1 := startGateway(t, db, "--redis-url", redisURL, "--rate-limit-test", "10")
	g2 := startGateway(t, db, "--redis-url", redisURL, "--rate-limit-test", "10")
	fellBack := func() bool {
		return strings.Contains(g1.Logs(), "Redis unavailable") || strings.Contains(g2.Logs(), "Redis unavailable")
	}
	for round := 1; ; round++ {
		m := createMerchant(t, db, fmt.Sprintf("Shared Ltd %d", round))
		var mu sync.Mutex
		allowed, limited := 0, 0
		var wg sync.WaitGroup
		for i := range 30 {
			g := g1
			if i%2 == 1 {
				g = g2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := g.call(http.MethodGet, probePath, m.TestSecretKey, nil)
				mu.Lock()
				defer mu.Unlock()
				switch r.Status {
				case 404:
					allowed++
				case 429:
					limited++
				default:
					t.Errorf("unexpected %d: %s", r.Status, r.Raw)
				}
			}()
		}
		wg.Wait()
		if allowed == 10 && limited == 20 {
			return
		}
		if !fellBack() || round == 3 {
			t.Fatalf("round %d: allowed %d limited %d across two nodes, want 10 and 20 (fell back to in-process limits: %v)",
				round, allowed, limited, fellBack())
		}
		t.Logf("round %d: a gateway fell back to in-process limits (slow Redis); repeating with a fresh key", round)
		// Wait until both gateways use Redis again; the limiter probes it
		// only when a request arrives, so keep asking.
		eventually(t, 30*time.Second, "Redis available again", func() bool {
			g1.call(http.MethodGet, probePath, m.TestSecretKey, nil)
			g2.call(http.MethodGet, probePath, m.TestSecretKey, nil)
			return strings.Count(g1.Logs(), "Redis available again") >= strings.Count(g1.Logs(), "Redis unavailable") &&
				strings.Count(g2.Logs(), "Redis available again") >= strings.Count(g2.Logs(), "Redis unavailable")
		})
	}
}

// TestRateLimitRedisDown checks that a gateway whose Redis is unreachable
// still serves under the in-process limit and says so once.
func TestRateLimitRedisDown(t *testing.T) {
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "NoRedis Ltd")
	g := startGateway(t, db, "--redis-url", "redis://127.0.0.1:1/0", "--rate-limit-test", "4")
	for range 4 {
		expect(t, g.call(http.MethodGet, probePath, m.TestSecretKey, nil), 404)
	}
	expect(t, g.call(http.MethodGet, probePath, m.TestSecretKey, nil), 429, "RATE_LIMITED")
	time.Sleep(100 * time.Millisecond)
	logs := g.Logs()
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(strings.ToLower(line), "redis") && strings.Contains(line, `"level":"WARN"`) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d Redis warnings, want exactly 1:\n%s", n, logs)
	}
}

// TestRateLimitCardFrame: the card frame asked for with keys that are not
// active public keys spends the client address's budget of failed
// authentications, the API's: a flood of bad keys gets 429, on the frame
// and on the API alike, while a valid key still works.
func TestRateLimitCardFrame(t *testing.T) {
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Frames Ltd")
	g := startGateway(t, db, "--rate-limit-unauthenticated", "3")
	frame := func(key string) int {
		resp, err := http.Get(g.url + "/js/v1/card-frame.html?key=" + url.QueryEscape(key) + "&origin=" + url.QueryEscape("http://localhost:3000"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 3 {
		if code := frame("smtgw_pk_test_" + strings.Repeat(string(rune('A'+i)), 40)); code != http.StatusUnauthorized {
			t.Fatalf("bad key %d: %d, want 401", i+1, code)
		}
	}
	if code := frame("smtgw_pk_test_" + strings.Repeat("Z", 40)); code != http.StatusTooManyRequests {
		t.Fatalf("bad key over the budget: %d, want 429", code)
	}
	expect(t, g.call(http.MethodGet, probePath, "smtgw_sk_test_"+strings.Repeat("Z", 40), nil), 429, "RATE_LIMITED")
	if code := frame(m.TestPublicKey); code != http.StatusOK {
		t.Fatalf("the frame with a valid key from the limited address: %d", code)
	}
}
