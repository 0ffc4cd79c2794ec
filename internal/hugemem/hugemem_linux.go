//go:build linux

package hugemem

import (
	"reflect"
	"sync"
	"syscall"
)

// Alloc returns a zeroed buffer of n bytes (len and cap n) and the func
// that frees it. A buffer of MinBytes or more is mapped outside the Go
// heap: after release it must not be used (it is unmapped, and a read or
// write faults), nor may any slice of it be kept. release is never nil;
// calls after the first do nothing.
//
// A mapped buffer counts against the Go heap's soft limit while it is
// held (limit.go).
func Alloc(n int) (buf []byte, release func()) {
	buf, unmap, ok := Reserve(n)
	if !ok {
		return make([]byte, n), func() {}
	}
	charge(int64(n))
	var once sync.Once
	return buf, func() {
		once.Do(func() {
			unmap()
			charge(-int64(n))
		})
	}
}

// Reserve is Alloc for a buffer that may be used only in part: its pages
// are faulted in where they are first written, so a reservation costs
// address space, not memory, beyond the bytes used. ok is false, and buf
// nil, when n is under MinBytes or the mapping failed: then the caller
// sizes its buffer from the heap instead.
func Reserve(n int) (buf []byte, release func(), ok bool) {
	if n < MinBytes {
		return nil, func() {}, false
	}
	// One huge page more than needed, so that n bytes fit from the first
	// 2 MiB boundary of the mapping (untouched pages cost nothing).
	size := roundUp(n) + pageBytes
	m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, func() {}, false
	}
	// The mapping's address, to align the buffer to a huge page (no
	// unsafe: reflect reports a slice's data pointer as a uintptr).
	addr := reflect.ValueOf(m).Pointer()
	off := int((pageBytes - addr%pageBytes) % pageBytes)
	// Advice only: without transparent huge pages the buffer still works
	// with 4 KiB pages, so an error is not one for the caller.
	_ = syscall.Madvise(m[off:off+roundUp(n)], syscall.MADV_HUGEPAGE)
	var once sync.Once
	return m[off : off+n : off+n], func() { once.Do(func() { _ = syscall.Munmap(m) }) }, true
}

// roundUp rounds n up to a multiple of pageBytes.
func roundUp(n int) int { return (n + pageBytes - 1) / pageBytes * pageBytes }
