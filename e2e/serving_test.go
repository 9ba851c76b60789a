package e2e

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Serving hardening (decisions §15, issue 17 findings 4 and 6), against
// the real binary. The behaviour does not depend on the database, so these
// run on SQLite only.

// rawRequest writes head (a complete request head) on a fresh connection
// and returns the status of the answer.
func rawRequest(t *testing.T, addr, head string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatalf("write %d bytes of head: %v", len(head), err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read the answer to %d bytes of head: %v", len(head), err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// headOf returns a GET of path whose head (request line, headers, final
// empty line) is exactly size bytes, padded with an X-Pad header.
func headOf(path, key string, size int) string {
	start := "GET " + path + " HTTP/1.1\r\nHost: paygate.test\r\n"
	if key != "" {
		start += "X-API-Key: " + key + "\r\n"
	}
	const padName, end = "X-Pad: ", "\r\n\r\n"
	return start + padName + strings.Repeat("a", size-len(start)-len(padName)-len(end)) + end
}

// TestHeaderLimit checks that a request whose head is over 64 KiB is
// answered 431 by the running server, and that one of exactly 64 KiB (63
// KiB of padding and more) is still served.
func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	db := sqliteEngine().url(t)
	m := createMerchant(t, db, "Headers")
	g := startGateway(t, db)
	addr := strings.TrimPrefix(g.url, "http://")
	path := "/v1/payments?merchantRef=nothing"
	for _, c := range []struct {
		name string
		size int
		want int
	}{
		{"63KiB", 63 << 10, http.StatusNotFound},
		{"Exactly64KiB", 64 << 10, http.StatusNotFound},
		{"OneByteOver", 64<<10 + 1, http.StatusRequestHeaderFieldsTooLarge},
		{"1MiB", 1 << 20, http.StatusRequestHeaderFieldsTooLarge},
	} {
		if got := rawRequest(t, addr, headOf(path, m.TestSecretKey, c.size)); got != c.want {
			t.Errorf("%s (%d bytes of head): status %d, want %d", c.name, c.size, got, c.want)
		}
	}
}

// TestMaxConnections checks --max-connections: with two idle keep-alive
// connections open, a third connection's request is not served until one
// of them closes.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	g := startGateway(t, sqliteEngine().url(t), "--max-connections", "2")
	addr := strings.TrimPrefix(g.url, "http://")
	const get = "GET /healthz HTTP/1.1\r\nHost: paygate.test\r\n\r\n"
	open := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte(get)); err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	status := func(c net.Conn, br *bufio.Reader, within time.Duration) (int, error) {
		_ = c.SetReadDeadline(time.Now().Add(within))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	first, firstR := open()
	second, secondR := open()
	for i, c := range []struct {
		c  net.Conn
		br *bufio.Reader
	}{{first, firstR}, {second, secondR}} {
		if code, err := status(c.c, c.br, 30*time.Second); err != nil || code != http.StatusOK {
			t.Fatalf("connection %d: status %d, %v", i+1, code, err)
		}
	}
	// Both stay open, idle; the third waits.
	third, thirdR := open()
	if code, err := status(third, thirdR, time.Second); err == nil {
		t.Fatalf("a third connection was served (%d) while two were open", code)
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("third connection: %v, want a timeout", err)
	}
	first.Close()
	// The timed-out read above left the reader in error; read afresh.
	if code, err := status(third, bufio.NewReader(third), 30*time.Second); err != nil || code != http.StatusOK {
		t.Fatalf("third connection after one closed: status %d, %v", code, err)
	}
	// The second connection is still usable.
	if _, err := second.Write([]byte(get)); err != nil {
		t.Fatal(err)
	}
	if code, err := status(second, secondR, 30*time.Second); err != nil || code != http.StatusOK {
		t.Fatalf("second connection, second request: status %d, %v", code, err)
	}
}

// TestTrustedProxies checks --trusted-proxies end to end (finding 6):
// behind a trusted proxy the failed-authentication limit counts per
// forwarded client; without the flag the header is ignored.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	const wrongKey = "smtgw_sk_test_wrongwrongwrongwrongwrongwrongwrong"
	fail := func(g *gateway, xff string) int {
		return g.call(http.MethodGet, "/v1/payments?merchantRef=x", wrongKey, nil, "X-Forwarded-For", xff).Status
	}
	t.Run("Trusted", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, sqliteEngine().url(t), "--rate-limit-unauthenticated", "3", "--trusted-proxies", "127.0.0.1,::1")
		for i := range 3 {
			if code := fail(g, "198.51.100.7"); code != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d, want 401", i+1, code)
			}
		}
		if code := fail(g, "198.51.100.7"); code != http.StatusTooManyRequests {
			t.Errorf("client over its budget: %d, want 429", code)
		}
		if code := fail(g, "198.51.100.8"); code != http.StatusUnauthorized {
			t.Errorf("another client behind the proxy: %d, want 401", code)
		}
	})
	t.Run("Untrusted", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, sqliteEngine().url(t), "--rate-limit-unauthenticated", "3")
		for i := range 3 {
			if code := fail(g, "198.51.100."+itoa(i+1)); code != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d, want 401", i+1, code)
			}
		}
		if code := fail(g, "198.51.100.99"); code != http.StatusTooManyRequests {
			t.Errorf("the peer with a fresh X-Forwarded-For: %d, want 429", code)
		}
	})
}
