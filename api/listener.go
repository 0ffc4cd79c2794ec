package api

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultMaxConns is the default cap on connections served at once
// (--max-conns). One Pi process keeps a few keep-alive connections, so 512
// leaves room for many sessions while bounding goroutines and descriptors.
const DefaultMaxConns = 512

// LimitListener returns a listener that keeps at most n accepted
// connections open at once (the golang.org/x/net/netutil.LimitListener
// semantics, without the dependency). While n are open, Accept first
// closes the connection that has been idle longest (a kept-alive
// connection between requests, as reported to TrackConnState by
// HTTPServer's ConnState hook), so idle sockets never starve new clients
// (issue 12 item 4); when none is idle it waits, closing the next one to go
// idle: new connections queue in
// the kernel's accept queue (the listen backlog, net.core.somaxconn) and,
// when that is full, the kernel refuses or drops them; nothing in the
// middle of a request is disturbed. A slot is freed when the accepted
// connection is closed (idle and slow clients are also closed by the
// server's IdleTimeout and ReadHeaderTimeout, see HTTPServer). Closing the
// listener wakes a waiting Accept, which then returns the listener's
// error. n < 1 means no limit: l is returned unchanged.
func LimitListener(l net.Listener, n int) net.Listener {
	if n < 1 {
		return l
	}
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{}), idle: map[*limitConn]uint64{}}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}

	mu   sync.Mutex
	seq  uint64
	idle map[*limitConn]uint64 // idle connections, by when they became idle
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		// Closed: the inner Accept fails at once with the closed error.
		return l.Listener.Accept()
	default:
		// At the cap: make room by closing the longest-idle connection,
		// then wait for a slot, closing the next connection to go idle
		// meanwhile (checked every 50 ms).
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			l.closeOldestIdle()
			select {
			case l.sem <- struct{}{}:
				break wait
			case <-l.done:
				return l.Listener.Accept()
			case <-tick.C:
			}
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	lc := &limitConn{Conn: c, l: l}
	lc.release = func() { l.setIdle(lc, false); <-l.sem }
	return lc, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

func (l *limitListener) setIdle(c *limitConn, idle bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if idle {
		l.seq++
		l.idle[c] = l.seq
	} else {
		delete(l.idle, c)
	}
}

// closeOldestIdle closes the connection idle the longest, if any.
func (l *limitListener) closeOldestIdle() {
	l.mu.Lock()
	var oldest *limitConn
	var at uint64
	for c, s := range l.idle {
		if oldest == nil || s < at {
			oldest, at = c, s
		}
	}
	if oldest != nil {
		delete(l.idle, oldest)
	}
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

// TrackConnState is an http.Server ConnState hook (HTTPServer sets it):
// it tells the LimitListener that accepted c which of its connections are
// idle between requests. Connections from other listeners are ignored.
func TrackConnState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	switch st {
	case http.StateIdle:
		lc.l.setIdle(lc, true)
	case http.StateActive, http.StateHijacked, http.StateClosed:
		lc.l.setIdle(lc, false)
	}
}

// limitConn frees its slot on the first Close.
type limitConn struct {
	net.Conn
	l       *limitListener
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
