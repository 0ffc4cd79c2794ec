package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// Requests that go before scans.
//
// scanCores leaves one core to the requests that hold no scan, but a
// /context (which Pi's extension runs before every model call) still
// shares that core with the runtime's GC workers, the checkpointer's cgo
// call and the other process on the machine, and the scans keep the
// rest: on two CPUs under 1-byte searches, a /context was runnable for
// half of its p99 (docs/benchmarks.md). So a request marks itself urgent
// while it runs (Urgent), and a scan, between two pieces (a fraction of
// a millisecond each), waits until no urgent request runs, at most
// maxUrgentWait, before it reads the next: the scans give the request
// both cores within a piece's time, and still progress when urgent
// requests come back to back.

// maxUrgentWait bounds how long one scan piece waits for urgent requests
// to end (no scan starves).
const maxUrgentWait = 5 * time.Millisecond

// urgent counts the requests running that go before scans; calm, while
// n > 0, is closed when it drops back to 0.
var urgent struct {
	mu   sync.Mutex
	n    int
	calm chan struct{}
}

// Urgent marks a request that goes before scans (POST /context) as
// running until the returned func is called (once).
func Urgent() (done func()) {
	urgent.mu.Lock()
	if urgent.n == 0 {
		urgent.calm = make(chan struct{})
	}
	urgent.n++
	urgent.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			urgent.mu.Lock()
			urgent.n--
			if urgent.n == 0 {
				close(urgent.calm)
			}
			urgent.mu.Unlock()
		})
	}
}

// urgentWaits counts the waits of yieldToUrgent (tests).
var urgentWaits atomic.Int64

// yieldToUrgent waits until no urgent request runs, at most
// maxUrgentWait; it reports whether it waited.
func yieldToUrgent() bool {
	urgent.mu.Lock()
	n, calm := urgent.n, urgent.calm
	urgent.mu.Unlock()
	if n == 0 {
		return false
	}
	urgentWaits.Add(1)
	t := time.NewTimer(maxUrgentWait)
	defer t.Stop()
	select {
	case <-calm:
	case <-t.C:
	}
	return true
}
