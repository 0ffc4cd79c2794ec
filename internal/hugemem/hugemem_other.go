//go:build !linux

package hugemem

// Alloc returns a zeroed buffer of n bytes from the Go heap and a no-op
// release (huge pages are asked for on Linux only).
func Alloc(n int) (buf []byte, release func()) {
	return make([]byte, n), func() {}
}

// Reserve reports that no buffer is mapped here (ok false): the caller
// sizes its buffer from the heap (Reserve on Linux).
func Reserve(n int) (buf []byte, release func(), ok bool) {
	return nil, func() {}, false
}

// Charge does nothing here: Reserve maps nothing outside Linux.
func Charge(n int64) {}
