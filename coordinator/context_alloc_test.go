package coordinator

import (
	"runtime"
	"testing"
)

// manyUsers is a session file of n tiny user messages on one chain (the
// shape of a hostile or huge session: many entries, little text).
func manyUsers(n int) []byte {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = hUser("x")
	}
	return handLines("many", entries...)
}

// contextAllocated is the bytes one Context call on session "many"
// allocates (runtime.MemStats.TotalAlloc, which counts every goroutine:
// the search filters that a sync queues are built first, or their
// buffers, about 700 KB here, would count as the call's).
func contextAllocated(t *testing.T, svc *Service) uint64 {
	t.Helper()
	if _, err := svc.Resolve(t.Context(), "many"); err != nil { // indexes the file
		t.Fatal(err)
	}
	svc.Index.FiltersIdle()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	if _, err := svc.Context(t.Context(), "many", ContextRequest{}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestContextRepeatAllocation: a second /context on an unchanged branch of
// n = 20,000 messages reuses the cached branch and pair list, so it
// allocates no per-message copy. Before, it copied the whole pair list
// (withoutHidden: 136 bytes a message, 2.7 MB here; 259 MB at 2,000,000
// entries). The bound, 16 bytes a message plus 64 KiB, leaves room for
// PlanPairing's maps of the calls (none here) and the answer itself.
func TestContextRepeatAllocation(t *testing.T) {
	const n = 20000
	svc, _ := localService(t, map[string][]byte{"many.jsonl": manyUsers(n)})
	contextAllocated(t, svc) // indexes the file and fills the caches
	got := contextAllocated(t, svc)
	if limit := uint64(16*n + 64<<10); got > limit {
		t.Errorf("repeated Context on %d messages allocated %d bytes (%d a message), want at most %d", n, got, got/n, limit)
	}
}

// TestContextFirstAllocation: the first /context on an indexed branch of
// n = 20,000 messages (no cache yet) builds the projection (Tree.Project,
// 32 bytes a message), the branch (Tree.Branch, 8) and the cached pair
// list (a PairMessage, 104 bytes), and nothing else per message: at most
// 150 bytes a message plus 64 KiB. Before, the pair list was 128 bytes a
// message (call ids and tool names in two slices) and copied once more
// (withoutHidden, 136), and PlanPairing made a map per message (48).
func TestContextFirstAllocation(t *testing.T) {
	const n = 20000
	svc, _ := localService(t, map[string][]byte{"many.jsonl": manyUsers(n)})
	if _, err := svc.Resolve(t.Context(), "many"); err != nil { // indexes the file
		t.Fatal(err)
	}
	got := contextAllocated(t, svc)
	if limit := uint64(150*n + 64<<10); got > limit {
		t.Errorf("first Context on %d messages allocated %d bytes (%d a message), want at most %d", n, got, got/n, limit)
	}
}
