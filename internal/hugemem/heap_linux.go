//go:build linux

package hugemem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"reflect"
	"runtime/metrics"
	"syscall"
)

// heapSpan bounds the Go heap's address range as AdviseHeap sees it: the
// runtime maps its heap arenas upward from one base (64 MiB-aligned
// arenas, runtime/malloc.go), and a heap of this process stays far below
// 64 GiB.
const (
	arenaBytes = 64 << 20
	heapSpan   = 64 << 30
)

// AdviseHeap marks the Go heap's mapped memory MADV_HUGEPAGE, so that the
// parts of it not touched yet fault in 2 MiB pages. The runtime asks for
// no huge pages itself (since Go 1.21.1), and under the kernel's
// "madvise" mode of transparent huge pages (the bench VM's) every 4 KiB
// of a growing heap was a page fault of about 25 µs: a third of the CPU
// of indexing a never-indexed session (docs/benchmarks.md). It is advice
// only: the runtime's own madvise(MADV_DONTNEED) of memory it returns
// still works (the kernel splits a huge page for it), and without
// transparent huge pages nothing changes.
//
// The heap is found from the mapping that holds a fresh heap object: the
// anonymous read-write mappings from its 64 MiB-aligned arena base up to
// heapSpan. Memory the runtime maps after the call is a new mapping
// without the advice (mmap MAP_FIXED replaces the reserved range), so a
// caller growing the heap calls it again (HeapAdvisor). It returns the
// number of mappings advised.
func AdviseHeap() int {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	base := reflect.ValueOf(new([64]byte)).Pointer() &^ (arenaBytes - 1)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// "lo-hi perms offset dev inode [path]" (proc(5)); anonymous
		// mappings have no path.
		var lo, hi uintptr
		var perms, off, dev string
		var inode uint64
		var path string
		k, _ := fmt.Sscanf(sc.Text(), "%x-%x %s %s %s %d %s", &lo, &hi, &perms, &off, &dev, &inode, &path)
		if k != 6 || perms != "rw-p" || inode != 0 || hi <= base || lo >= base+heapSpan {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_HUGEPAGE); e == 0 {
			n++
		}
	}
	return n
}

// HeapAdvisor calls AdviseHeap when the memory the runtime has mapped has
// changed since its last call (runtime/metrics "/memory/classes/total:bytes",
// a read of a few hundred nanoseconds; /proc/self/maps is read only then).
// The zero value is ready; not safe for concurrent use.
type HeapAdvisor struct {
	mapped uint64
	sample []metrics.Sample
}

// Check advises the heap if it grew (or shrank) since the last Check.
func (a *HeapAdvisor) Check() {
	if a.sample == nil {
		a.sample = []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	}
	metrics.Read(a.sample)
	if a.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if v := a.sample[0].Value.Uint64(); v != a.mapped {
		a.mapped = v
		AdviseHeap()
	}
}
