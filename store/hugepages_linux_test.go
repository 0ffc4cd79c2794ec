//go:build linux

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// heapVMFlags returns the VmFlags of the mapping holding addr
// (/proc/self/smaps, proc(5)), padded with spaces.
func heapVMFlags(t *testing.T, addr uintptr) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for l := range strings.SplitSeq(string(b), "\n") {
		var lo, hi uintptr
		if dash := strings.IndexByte(l, '-'); dash > 0 && dash < strings.IndexByte(l+" ", ' ') {
			if _, err := parseRange(l, &lo, &hi); err == nil {
				in = lo <= addr && addr < hi
				continue
			}
		}
		if f, ok := strings.CutPrefix(l, "VmFlags:"); ok && in {
			return " " + strings.TrimSpace(f) + " "
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return ""
}

// A large ingest (the file over BatchBytes) asks for huge pages for the
// Go heap it grows (internal/hugemem.HeapAdvisor; docs/benchmarks.md,
// "fewer fresh pages"): the heap's mapping carries the MADV_HUGEPAGE flag
// ("hg") after the sync (the Go runtime never sets it;
// hugemem.TestAdviseHeapMarksHeapMapping checks that).
func TestLargeIngestAdvisesHeap(t *testing.T) {
	root := t.TempDir()
	genSession(t, filepath.Join(root, "gen.jsonl"), 1)
	obj := make([]byte, 8<<20) // heap memory mapped before the sync
	addr := reflect.ValueOf(obj).Pointer()
	// (Not checked unadvised first: an earlier test's ingest in this
	// process may have advised it; nothing else in the process does, so
	// without the advice the check below fails.)
	x, err := OpenIndex(t.Context(), root, filepath.Join(t.TempDir(), "index"), Options{BatchBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if ss, err := x.SyncAll(t.Context()); err != nil || len(ss) != 1 {
		t.Fatalf("sync: %v, %d sessions", err, len(ss))
	}
	if f := heapVMFlags(t, addr); !strings.Contains(f, " hg ") {
		t.Errorf("heap mapping VmFlags %q after a 1 MiB ingest in 64 KiB batches, want hg", f)
	}
	runtime.KeepAlive(obj)
}

// parseRange parses the "lo-hi" at the start of a maps line.
func parseRange(l string, lo, hi *uintptr) (int, error) {
	return fmt.Sscanf(l, "%x-%x", lo, hi)
}
