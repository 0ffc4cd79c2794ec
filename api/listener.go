package api

import (
	"net"
	"sync"
)

// DefaultMaxConns is the default cap on connections served at once
// (--max-conns). One Pi process keeps a few keep-alive connections, so 512
// leaves room for many sessions while bounding goroutines and descriptors.
const DefaultMaxConns = 512

// LimitListener returns a listener that keeps at most n accepted
// connections open at once (the golang.org/x/net/netutil.LimitListener
// semantics, without the dependency). While n are open, Accept waits: new
// connections queue in the kernel's accept queue (the listen backlog,
// net.core.somaxconn) and, when that is full, the kernel refuses or drops
// them; nothing already accepted is disturbed. A slot is freed when the
// accepted connection is closed (idle and slow clients are closed by the
// server's ReadHeaderTimeout and IdleTimeout, see HTTPServer). Closing the
// listener wakes a waiting Accept, which then returns the listener's error.
// n < 1 means no limit: l is returned unchanged.
func LimitListener(l net.Listener, n int) net.Listener {
	if n < 1 {
		return l
	}
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		// Closed: the inner Accept fails at once with the closed error.
		return l.Listener.Accept()
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn frees its slot on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
