package api

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConns is the default cap on connections served at once
// (--max-conns). One Pi process keeps a few keep-alive connections, so 512
// leaves room for many sessions while bounding goroutines and descriptors.
const DefaultMaxConns = 512

// PartialHeaderGrace and SilentGrace are how long the server may wait in
// a read for a new connection's first request headers before
// LimitListener may close it to make room: PartialHeaderGrace once some
// bytes of the request came (a client writes its request at once, so one
// that stops in the middle is slow), SilentGrace while none has (a client
// may be slow to write under load).
const (
	PartialHeaderGrace = 50 * time.Millisecond
	SilentGrace        = time.Second
)

// LimitListener returns a listener that keeps at most n accepted
// connections open at once (the golang.org/x/net/netutil.LimitListener
// semantics, without the dependency). While n are open, Accept makes room
// by closing connections that hold a slot without a request being served,
// as reported to TrackConnState by HTTPServer's ConnState hook: first the
// one idle longest (a kept-alive connection between requests, or one
// slowly sending its next request); when none is idle and no slot frees
// within a tick (10 ms), every connection still waiting for its first
// request's headers (StateNew: a slow or silent client, of which a local
// user may open thousands) whose server has waited in a read for more
// than PartialHeaderGrace after part of the request came, or SilentGrace
// before any did. So slow and idle sockets never starve new clients
// (docs/security.md), and a client that sends its request at once is
// never closed. Meanwhile Accept waits, checking every tick: new
// connections queue in the kernel's
// accept queue (the listen backlog, net.core.somaxconn) and, when that is
// full, the kernel refuses or drops them; nothing in the middle of a
// request is disturbed. A slot is freed when the accepted connection is
// closed (slow clients are also closed by the server's ReadHeaderTimeout,
// idle ones by IdleTimeout, see HTTPServer). Closing the listener wakes a
// waiting Accept, which then returns the listener's error.
//
// m, when not nil, counts the open connections by phase and those closed
// to make room (ConnMetrics). n < 1 means no limit: l is returned
// unchanged when m is nil, else wrapped only to count.
func LimitListener(l net.Listener, n int, m *ListenerMetrics) net.Listener {
	if n < 1 && m == nil {
		return l
	}
	ll := &limitListener{Listener: l, done: make(chan struct{}), metrics: m}
	if n >= 1 {
		ll.sem = make(chan struct{}, n)
	}
	return ll
}

type limitListener struct {
	net.Listener
	sem       chan struct{} // nil: no cap
	closeOnce sync.Once
	done      chan struct{}
	metrics   *ListenerMetrics // nil: not counted

	mu     sync.Mutex
	header list.List // *limitConn waiting for their first headers, oldest first
	idle   list.List // *limitConn idle between requests, oldest first
}

// connPhase is where an accepted connection is: waiting for its first
// request's headers, idle between requests, serving a request (or
// hijacked), or closed.
type connPhase uint8

const (
	phaseHeader connPhase = iota
	phaseIdle
	phaseActive
	phaseClosed
)

func (l *limitListener) Accept() (net.Conn, error) {
	if l.sem == nil {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		return l.track(c), nil
	}
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		// Closed: the inner Accept fails at once with the closed error.
		return l.Listener.Accept()
	default:
		// At the cap: make room by closing the longest-idle connection;
		// when none is idle, wait for a slot, closing each one that goes
		// idle meanwhile and, every tick without a slot, every slow one.
		l.closeIdle()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			select {
			case l.sem <- struct{}{}:
				break wait
			case <-l.done:
				return l.Listener.Accept()
			case <-tick.C:
				if !l.closeIdle() {
					l.closeSlow()
				}
			}
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return l.track(c), nil
}

// track wraps an accepted connection, counted in the header phase until
// the server reports otherwise; its slot (if l has a cap) is freed on its
// first Close.
func (l *limitListener) track(c net.Conn) *limitConn {
	lc := &limitConn{Conn: c, l: l}
	lc.release = func() {
		l.setPhase(lc, phaseClosed)
		if l.sem != nil {
			<-l.sem
		}
	}
	l.setPhase(lc, phaseHeader)
	return lc
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// setPhase moves c to phase p: to the end of l.header or l.idle, or off
// both (it serves a request, or is gone). A closed connection stays
// closed, whatever the server reports after.
func (l *limitListener) setPhase(c *limitConn, p connPhase) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setPhaseLocked(c, p)
}

func (l *limitListener) setPhaseLocked(c *limitConn, p connPhase) {
	if c.tracked && c.phase == phaseClosed {
		return
	}
	if c.elem != nil {
		c.in.Remove(c.elem)
		c.elem, c.in = nil, nil
	}
	if c.tracked {
		l.metrics.add(c.phase, -1)
	}
	c.phase, c.tracked = p, true
	l.metrics.add(p, 1)
	var which *list.List
	switch p {
	case phaseHeader:
		which = &l.header
	case phaseIdle:
		which = &l.idle
	}
	if which != nil {
		c.since = time.Now()
		c.elem, c.in = which.PushBack(c), which
	}
}

// closeIdle closes the connection idle longest; false when none is.
func (l *limitListener) closeIdle() bool {
	l.mu.Lock()
	var victim *limitConn
	if e := l.idle.Front(); e != nil {
		victim = e.Value.(*limitConn)
		l.setPhaseLocked(victim, phaseClosed)
		l.metrics.shed(shedIdle)
	}
	l.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
	return victim != nil
}

// closeSlow closes every connection still waiting for its first request's
// headers whose read has been blocked for over PartialHeaderGrace after
// some bytes of the request came, or over SilentGrace before any did.
func (l *limitListener) closeSlow() {
	l.mu.Lock()
	var slow []*limitConn
	now := time.Now().UnixNano()
	for e := l.header.Front(); e != nil; {
		next := e.Next()
		c := e.Value.(*limitConn)
		grace := int64(SilentGrace)
		if c.headerBytes.Load() > 0 {
			grace = int64(PartialHeaderGrace)
		}
		if r := c.readingSince.Load(); r != 0 && now-r > grace {
			l.setPhaseLocked(c, phaseClosed)
			l.metrics.shed(shedSlowHeader)
			slow = append(slow, c)
		}
		e = next
	}
	l.mu.Unlock()
	for _, c := range slow {
		c.Close()
	}
}

// TrackConnState is an http.Server ConnState hook (HTTPServer sets it):
// it tells the LimitListener that accepted c which of its connections
// wait for their first request's headers (StateNew; net/http reports
// StateActive only once a request's headers are read) and which are idle
// between requests. Connections from other listeners are ignored.
func TrackConnState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	switch st {
	case http.StateNew:
		lc.l.setPhase(lc, phaseHeader)
	case http.StateIdle:
		lc.l.setPhase(lc, phaseIdle)
	case http.StateActive, http.StateHijacked:
		lc.l.setPhase(lc, phaseActive)
	case http.StateClosed:
		lc.l.setPhase(lc, phaseClosed)
	}
}

// limitConn frees its slot on the first Close.
type limitConn struct {
	net.Conn
	l       *limitListener
	once    sync.Once
	release func()

	// Guarded by l.mu: c's phase (once tracked), the list c waits in
	// (nil when serving or closed), its element there, and since when.
	phase   connPhase
	tracked bool
	in      *list.List
	elem    *list.Element
	since   time.Time

	// readingSince is when the Read in progress began (Unix ns), 0 when
	// none is; headerBytes counts the bytes read so far (the first
	// request's, while c waits in l.header).
	readingSince atomic.Int64
	headerBytes  atomic.Int64
}

// Read records how long the server waits for the client and how much
// came.
func (c *limitConn) Read(b []byte) (int, error) {
	c.readingSince.Store(time.Now().UnixNano())
	n, err := c.Conn.Read(b)
	c.readingSince.Store(0)
	c.headerBytes.Add(int64(n))
	return n, err
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
