//go:build linux

package hugemem

import (
	"math"
	"runtime/debug"
	"sync"
)

// A buffer Alloc maps outside the Go heap is memory the heap's soft limit
// (runtime/debug.SetMemoryLimit; cmd/contextd --memory-limit) does not
// see: held on top of a heap at its limit, it raised the peak RSS by its
// size. So while mapped buffers are held the limit is lowered by their
// bytes, and the collector keeps the heap that much smaller; it is put
// back when the last one is released (docs/benchmarks.md, "Long lines read
// once"). Without a limit (math.MaxInt64) nothing changes. A reservation
// (Reserve) is not counted: it costs only the pages written, which its
// caller holds for a moment.
var charged struct {
	sync.Mutex
	bytes int64 // mapped bytes held
	base  int64 // the limit before the first of them
}

// minLimitShare bounds how far the limit is lowered: to a quarter of its
// base at most, so a heap is never squeezed to nothing by huge buffers.
const minLimitShare = 4

// charge counts n more mapped bytes against the heap's limit (n < 0:
// released).
func charge(n int64) {
	c := &charged
	c.Lock()
	defer c.Unlock()
	if c.bytes == 0 {
		c.base = debug.SetMemoryLimit(-1)
	}
	c.bytes += n
	if c.base == math.MaxInt64 {
		return
	}
	if c.bytes == 0 {
		debug.SetMemoryLimit(c.base)
		return
	}
	debug.SetMemoryLimit(max(c.base-c.bytes, c.base/minLimitShare))
}

// Charge counts n bytes of a mapping held outside the Go heap against the
// heap's soft limit, as Alloc does for its buffers (n < 0 uncounts them).
// It is for a reservation (Reserve) kept between uses, whose written pages
// stay resident: its holder charges them as they grow and uncharges them
// when it unmaps it.
func Charge(n int64) { charge(n) }
