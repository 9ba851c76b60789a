package testenv

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// RoundTrips counts, on the wire, the round trips clients make to a
// PostgreSQL server through a loopback proxy: the Sync and Query messages
// they send while counting is on. With the extended protocol a client waits
// for the server only after a Sync (the simple protocol: after a Query), so
// these are its round trips.
type RoundTrips struct {
	// URL is the database URL through the proxy: TLS off (the proxy reads
	// the messages) and a pool of one connection, so that counts are of one
	// connection's waits.
	URL string

	mu       sync.Mutex
	counting bool
	n        int
}

// CountRoundTrips starts a proxy in front of the server of databaseURL for
// the test's lifetime.
func CountRoundTrips(t testing.TB, databaseURL string) *RoundTrips {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := u.Host
	u.Host = ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	rt := &RoundTrips{URL: u.String()}
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
				rt.serve(c, upstream)
			}()
		}
	}()
	return rt
}

// Start zeroes the count and starts counting.
func (rt *RoundTrips) Start() {
	rt.mu.Lock()
	rt.counting, rt.n = true, 0
	rt.mu.Unlock()
}

// Stop stops counting and returns the round trips since Start.
func (rt *RoundTrips) Stop() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.counting = false
	return rt.n
}

func (rt *RoundTrips) message(typ byte) {
	rt.mu.Lock()
	if rt.counting && (typ == 'S' || typ == 'Q') {
		rt.n++
	}
	rt.mu.Unlock()
}

// serve forwards one connection: the server's bytes as they come, the
// client's message by message, counted.
func (rt *RoundTrips) serve(c net.Conn, upstream string) {
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
		rt.message(h[0])
		if _, err := s.Write(append(h[:], body...)); err != nil {
			return
		}
	}
}
