// Package connlimit caps the connections a server holds open at once
// (serve --max-connections, decisions §15): memory per connection is
// bounded by the header limit, so the two together bound what a flood of
// connections can cost.
package connlimit

import (
	"net"
	"sync"
)

// Listener returns a listener that accepts from l while fewer than n of
// the connections it returned are open. Beyond n, Accept waits for one to
// close: new connections wait in the kernel's backlog (and time out there)
// instead of costing memory here. Closing the listener wakes a waiting
// Accept, which then returns l's error. n must be at least 1.
func Listener(l net.Listener, n int) net.Listener {
	if n < 1 {
		panic("connlimit: n must be at least 1")
	}
	return &listener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type listener struct {
	net.Listener
	slots     chan struct{} // one token per open connection
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// Accept waits for a free slot, then accepts.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &conn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the inner listener and wakes a waiting Accept.
func (l *listener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// conn frees its slot on its first Close.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
