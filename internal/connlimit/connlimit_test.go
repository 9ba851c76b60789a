package connlimit

import (
	"errors"
	"net"
	"testing"
	"time"
)

func TestListener(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(inner, 2)
	accepted := make(chan net.Conn, 10)
	errc := make(chan error, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				errc <- err
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	next := func(within time.Duration) net.Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(within):
			return nil
		}
	}
	dial()
	dial()
	first, second := next(5*time.Second), next(5*time.Second)
	if first == nil || second == nil {
		t.Fatal("the first two connections were not accepted")
	}
	dial()
	if c := next(300 * time.Millisecond); c != nil {
		t.Fatal("a third connection was accepted while two were open")
	}
	first.Close()
	first.Close() // a second Close frees nothing more
	third := next(5 * time.Second)
	if third == nil {
		t.Fatal("the third connection was not accepted after one closed")
	}
	dial()
	if c := next(300 * time.Millisecond); c != nil {
		t.Fatal("a fourth connection was accepted while two were open (a double Close freed two slots)")
	}
	// Close wakes the waiting Accept.
	l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
	second.Close()
	third.Close()
}
