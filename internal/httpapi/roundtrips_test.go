package httpapi_test

import (
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/paygate/paygate/internal/id"
	"github.com/paygate/paygate/internal/store/postgres"
	"github.com/paygate/paygate/internal/testenv"
)

// TestPaymentRoundTripsOnPostgres counts, on the wire, the round trips a
// captured test-mode payment makes to PostgreSQL through the real handler
// and wiring (decisions.md section 22): the key's authentication with the
// idempotency record read ahead; the reservation with the insert; the
// outcome's unit with the sandbox's ledger entry. A replay and a GET are one
// each. A proxy between the store and the database counts the client's
// Sync and Query messages: with the extended protocol the client waits for
// the server only after a Sync, so they are the round trips.
func TestPaymentRoundTripsOnPostgres(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testenv.PostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	p := startCountingProxy(t, u.Host)
	u.Host = p.addr
	q := u.Query()
	q.Set("sslmode", "disable") // the proxy reads the messages
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	st, err := postgres.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := wireServer(t, st)

	// The first payment and GET prepare the connection's statements.
	warm := s.create(t, 1, "warm-"+id.New())
	if w := s.do(http.MethodGet, "/v1/payments/"+warm, s.secret, "", nil); w.Code != http.StatusOK {
		t.Fatalf("get: %d %s", w.Code, w.Body.String())
	}
	key := "counted-" + id.New()
	p.start()
	paymentID := s.create(t, 2, key)
	if got := p.stop(); got != 3 {
		t.Errorf("a captured test-mode payment: %d round trips, want 3", got)
	}
	p.start()
	if w := s.do(http.MethodPost, "/v1/payments", s.secret, key, benchBody(2)); w.Code != http.StatusCreated {
		t.Fatalf("replay: %d %s", w.Code, w.Body.String())
	}
	if got := p.stop(); got != 1 {
		t.Errorf("a replay: %d round trips, want 1", got)
	}
	p.start()
	if w := s.do(http.MethodGet, "/v1/payments/"+paymentID, s.secret, "", nil); w.Code != http.StatusOK {
		t.Fatalf("get: %d %s", w.Code, w.Body.String())
	}
	if got := p.stop(); got != 1 {
		t.Errorf("a GET: %d round trips, want 1", got)
	}
}

// countingProxy forwards connections to a PostgreSQL server and counts the
// Sync and Query messages clients send while counting is on.
type countingProxy struct {
	addr     string
	mu       sync.Mutex
	counting bool
	n        int
}

func (p *countingProxy) start() {
	p.mu.Lock()
	p.counting, p.n = true, 0
	p.mu.Unlock()
}

func (p *countingProxy) stop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counting = false
	return p.n
}

func (p *countingProxy) message(typ byte) {
	p.mu.Lock()
	if p.counting && (typ == 'S' || typ == 'Q') {
		p.n++
	}
	p.mu.Unlock()
}

func startCountingProxy(t *testing.T, upstream string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{addr: ln.Addr().String()}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				p.serve(c, upstream)
			}()
		}
	}()
	return p
}

// serve forwards one connection: the server's bytes as they come, the
// client's message by message, counted.
func (p *countingProxy) serve(c net.Conn, upstream string) {
	defer c.Close()
	s, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer s.Close()
	go func() {
		_, _ = io.Copy(c, s)
		_ = c.Close()
	}()
	// The startup message has no type byte; every later message has one.
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return
	}
	startup := make([]byte, binary.BigEndian.Uint32(head[:])-4)
	if _, err := io.ReadFull(c, startup); err != nil {
		return
	}
	if _, err := s.Write(append(head[:], startup...)); err != nil {
		return
	}
	var h [5]byte
	for {
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(h[1:])-4)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		p.message(h[0])
		if _, err := s.Write(append(h[:], body...)); err != nil {
			return
		}
	}
}
