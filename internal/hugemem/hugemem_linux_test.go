//go:build linux

package hugemem

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// vmaOf returns the /proc/self/smaps block of the mapping holding addr
// ("" if none).
func vmaOf(t *testing.T, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line[:strings.IndexByte(line, ' ')], "-") {
			if in {
				break
			}
			in = lo <= addr && addr < hi
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// A 3 MiB buffer: len and cap 3 MiB, zeroed, writable, starting on a 2 MiB
// boundary, in a mapping marked for huge pages ("hg" in smaps' VmFlags,
// proc(5)), not allocated from the Go heap (TotalAlloc grows by less than
// a MiB), and unmapped by release.
func TestAllocMapsAlignedHugePageBuffer(t *testing.T) {
	const n = 3 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, release := Alloc(n)
	runtime.ReadMemStats(&after)
	if len(b) != n || cap(b) != n {
		t.Fatalf("len %d cap %d, want %d", len(b), cap(b), n)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d >= 1<<20 {
		t.Errorf("Alloc(%d) took %d bytes from the Go heap, want the buffer mapped outside it", n, d)
	}
	addr := reflect.ValueOf(b).Pointer()
	if addr%(2<<20) != 0 {
		t.Errorf("buffer at %#x, want a 2 MiB boundary", addr)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d = %d, want a zeroed buffer", i, b[i])
		}
		b[i] = byte(i)
	}
	if want := byte((n - 1) % 256); b[n-1] != want {
		t.Fatalf("last byte %d, want %d", b[n-1], want)
	}
	vma := vmaOf(t, addr)
	if vma == "" {
		t.Fatalf("no mapping holds %#x", addr)
	}
	flags := ""
	for l := range strings.SplitSeq(vma, "\n") {
		if f, ok := strings.CutPrefix(l, "VmFlags:"); ok {
			flags = f
		}
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("mapping VmFlags %q, want hg (MADV_HUGEPAGE)", flags)
	}
	release()
	if vma := vmaOf(t, addr); vma != "" {
		t.Errorf("after release the buffer is still mapped:\n%s", vma)
	}
}

// vmaRssKB returns the Rss of the mapping holding addr, in kB (smaps).
func vmaRssKB(t *testing.T, addr uintptr) int {
	t.Helper()
	for l := range strings.SplitSeq(vmaOf(t, addr), "\n") {
		if f, ok := strings.CutPrefix(l, "Rss:"); ok {
			var kb int
			if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d kB", &kb); err != nil {
				t.Fatalf("Rss line %q: %v", l, err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}

// A reservation of 64 MiB (the longest line allowed by default) costs no
// memory until written: its mapping's Rss is 0 kB, then at most 4 MiB
// (two huge pages, or the 3 MiB written in small pages) after its first
// 3 MiB are written; release unmaps it. Below MinBytes nothing is
// reserved (ok false, nil buffer).
func TestReserveFaultsInOnlyWhatIsWritten(t *testing.T) {
	const n, used = 64 << 20, 3 << 20
	b, release, ok := Reserve(n)
	if !ok || len(b) != n {
		t.Fatalf("Reserve(%d): ok %v, len %d; want true, %d", n, ok, len(b), n)
	}
	addr := reflect.ValueOf(b).Pointer()
	if kb := vmaRssKB(t, addr); kb != 0 {
		t.Errorf("Rss %d kB before any write, want 0", kb)
	}
	for i := range used {
		b[i] = 'x'
	}
	if kb := vmaRssKB(t, addr); kb < used>>10 || kb > 4<<10 {
		t.Errorf("Rss %d kB after writing %d kB, want %d to %d", kb, used>>10, used>>10, 4<<10)
	}
	release()
	if vma := vmaOf(t, addr); vma != "" {
		t.Errorf("after release the reservation is still mapped:\n%s", vma)
	}
	if b, _, ok := Reserve(MinBytes - 1); ok || b != nil {
		t.Errorf("Reserve(MinBytes-1): ok %v, buffer of %d bytes; want false, nil", ok, len(b))
	}
}

// While mapped buffers are held the Go heap's soft limit is lowered by
// their bytes, and put back when the last is released: with a limit of
// 1 GiB, 3 MiB and then 5 MiB held give 1 GiB - 3 MiB, then 1 GiB - 8
// MiB; releasing the first (twice: the second call does nothing) gives
// 1 GiB - 5 MiB; releasing the second, 1 GiB. A buffer from the heap
// (under MinBytes) and a reservation change nothing; with no limit, the
// limit stays none.
func TestAllocCountsAgainstMemoryLimit(t *testing.T) {
	const limit = 1 << 30
	old := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(old)
	check := func(when string, want int64) {
		t.Helper()
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Errorf("%s: limit %d, want %d", when, got, want)
		}
	}
	_, r1 := Alloc(3 << 20)
	check("3 MiB held", limit-3<<20)
	_, r2 := Alloc(5 << 20)
	check("3 and 5 MiB held", limit-8<<20)
	_, r0 := Alloc(MinBytes - 1)
	_, rr, _ := Reserve(64 << 20)
	check("a heap buffer and a reservation more", limit-8<<20)
	r0()
	rr()
	r1()
	r1()
	check("5 MiB held", limit-5<<20)
	r2()
	check("none held", limit)

	debug.SetMemoryLimit(math.MaxInt64)
	_, r3 := Alloc(3 << 20)
	check("no limit, 3 MiB held", math.MaxInt64)
	r3()
	check("no limit, none held", math.MaxInt64)
}

// Below MinBytes the buffer comes from the Go heap: zeroed, len and cap n.
func TestAllocSmallFromHeap(t *testing.T) {
	const n = MinBytes - 1
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, release := Alloc(n)
	runtime.ReadMemStats(&after)
	defer release()
	if len(b) != n || cap(b) != n {
		t.Fatalf("len %d cap %d, want %d", len(b), cap(b), n)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d < n {
		t.Errorf("Alloc(%d) took %d bytes from the Go heap, want at least %d", n, d, n)
	}
}

// heapAdvised is set once this process's heap was advised (-count=N
// runs the test again on an advised heap).
var heapAdvised bool

// vmFlags returns the VmFlags of the mapping holding addr.
func vmFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	for l := range strings.SplitSeq(vmaOf(t, addr), "\n") {
		if f, ok := strings.CutPrefix(l, "VmFlags:"); ok {
			return " " + strings.TrimSpace(f) + " "
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return ""
}

// The Go runtime asks for no huge pages: a heap object's mapping has no
// "hg" flag until AdviseHeap, and has it after (HeapAdvisor's Check on a
// heap that grew does the same).
func TestAdviseHeapMarksHeapMapping(t *testing.T) {
	obj := make([]byte, 8<<20) // maps heap memory (a large object)
	addr := reflect.ValueOf(obj).Pointer()
	if !heapAdvised && strings.Contains(vmFlags(t, addr), " hg ") {
		t.Fatalf("heap mapping already advised before AdviseHeap: the check would pass vacuously")
	}
	heapAdvised = true
	if n := AdviseHeap(); n == 0 {
		t.Fatal("AdviseHeap advised no mapping")
	}
	if f := vmFlags(t, addr); !strings.Contains(f, " hg ") {
		t.Errorf("heap mapping VmFlags %q after AdviseHeap, want hg", f)
	}
	runtime.KeepAlive(obj)

	var a HeapAdvisor
	a.Check()
	grown := make([]byte, 64<<20) // a new arena's worth: memory mapped after the first advice
	gaddr := reflect.ValueOf(grown).Pointer()
	a.Check()
	if f := vmFlags(t, gaddr); !strings.Contains(f, " hg ") {
		t.Errorf("grown heap mapping VmFlags %q after HeapAdvisor.Check, want hg", f)
	}
	runtime.KeepAlive(grown)
}
