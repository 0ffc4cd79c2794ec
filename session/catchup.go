package session

import (
	"sync"
	"time"

	"contextd/internal/hugemem"
)

// The long-line buffer of catch-ups. A catch-up (a scan without its own
// LongLines: the sync of appended lines) that meets a line longer than a
// read chunk reads it on into a reservation (hugemem.Reserve). Mapped for
// each such line and unmapped after it, the reservation's pages were
// faulted in and zeroed by the kernel every time: for a 4 MiB tool result
// (an image Pi's read tool attached) that was most of the CPU of the
// /context that followed it (docs/benchmarks.md, "A big append reads into
// a kept buffer"). So catch-ups share one reservation, kept while it is in
// use at least every catchUpIdle:
//
//   - One catch-up uses it at a time; another one meanwhile maps its own,
//     as before.
//   - Its written pages stay resident, up to catchUpKeepBytes: they are
//     counted against the Go heap's soft limit (hugemem.Charge) while it
//     is kept. A line that wrote more is read as before and the
//     reservation unmapped after it.
//   - It is unmapped once no catch-up used it for catchUpIdle.

// catchUpKeepBytes is the most written bytes the kept reservation holds
// resident between catch-ups (Pi's read tool attaches images of up to 4.5
// MiB of base64: DEFAULT_MAX_BYTES of its image resizing).
const catchUpKeepBytes = 16 << 20

// catchUpIdle is how long the kept reservation stays mapped after its last
// use (a variable: tests shorten it).
var catchUpIdle = 30 * time.Second

// catchUp is the kept reservation.
var catchUp catchUpState

// catchUpState is the kept reservation of catch-ups and who holds it.
type catchUpState struct {
	busy sync.Mutex // held by the catch-up using it, and by the idle release
	buf  []byte     // the reservation (nil: none mapped)
	free func()     // unmaps buf
	// charged is how many bytes of buf are counted against the heap's
	// limit: the most any line wrote.
	charged int
	idle    *time.Timer
}

// takeCatchUp returns n bytes of the kept reservation, mapping
// it first when there is none (or it is shorter), and the func to call
// with how many bytes of it were written once the line is handled. ok is
// false when another catch-up holds it or no reservation could be made:
// the caller reserves its own.
func takeCatchUp(n int) (buf []byte, done func(written int), ok bool) {
	c := &catchUp
	if !c.busy.TryLock() {
		return nil, nil, false
	}
	if len(c.buf) < n {
		c.unmapLocked()
		b, free, ok := reserveLine(n)
		if !ok {
			c.busy.Unlock()
			return nil, nil, false
		}
		c.buf, c.free = b, free
	}
	// n bytes exactly: the scan tells a line over its cap by the end of
	// the buffer.
	return c.buf[:n:n], func(written int) {
		if written > catchUpKeepBytes {
			c.unmapLocked()
		} else if written > c.charged {
			hugemem.Charge(int64(written - c.charged))
			c.charged = written
		}
		if c.buf != nil {
			if c.idle == nil {
				c.idle = time.AfterFunc(catchUpIdle, releaseIdleCatchUp)
			} else {
				c.idle.Reset(catchUpIdle)
			}
		}
		c.busy.Unlock()
	}, true
}

// releaseIdleCatchUp unmaps the kept reservation, unless a catch-up is
// using it (that one re-arms the timer when it is done).
func releaseIdleCatchUp() {
	c := &catchUp
	if !c.busy.TryLock() {
		return
	}
	c.unmapLocked()
	c.busy.Unlock()
}

// unmapLocked unmaps the kept reservation and uncounts its bytes; the
// caller holds busy.
func (c *catchUpState) unmapLocked() {
	if c.buf == nil {
		return
	}
	c.free()
	hugemem.Charge(-int64(c.charged))
	c.buf, c.free, c.charged = nil, nil, 0
}
