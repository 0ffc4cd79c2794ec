package session

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// benchTreeEntries are n entries shaped as the store's tree keeps a
// session's (bench/sessiongen's mix): 8-hex ids in one chain, messages
// of alternating roles with an assistant stop reason, no timestamps
// (store.memEntry drops them), a window boundary every 400 entries.
func benchTreeEntries(n int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		e := Entry{Seq: i, Line: i + 2, Offset: int64(i) * 4096, Length: 4000, ID: fmt.Sprintf("%08x", 0x10000000+i*7919), Type: TypeMessage, Role: RoleUser}
		if i > 0 {
			e.ParentID = es[i-1].ID
		}
		if i%2 == 1 {
			e.Role, e.StopReason = RoleAssistant, "toolUse"
		}
		if i%400 == 0 {
			e.Type, e.Role, e.StopReason, e.CustomType = TypeCustomMessage, "", "", CustomTypeWindow
			e.Window = &WindowMarker{Kind: "window", CurrentWindowID: fmt.Sprint("w", i), WindowNumber: i / 400}
		}
		es[i] = e
	}
	return es
}

// BenchmarkTreeAdd builds the tree of a 1 GiB session (a quarter-million
// entries) with Tree.Add, as the indexer does (cpu-ms/op: the CPU of the
// whole process per tree, the collector's included), then reports what
// one forced collection costs while the tree is live (gc-ms: wall time of
// runtime.GC, the median of five): the marking the tree's memory asks of
// every GC cycle.
func BenchmarkTreeAdd(b *testing.B) {
	es := benchTreeEntries(250_000)
	var t *Tree
	stop := cpuPerOp(b)
	for b.Loop() {
		t = NewTree(Header{Version: 3, ID: "s"})
		t.Grow(len(es))
		for _, e := range es {
			t.Add(e)
		}
	}
	stop()
	es = nil
	var gcs []time.Duration
	for range 5 {
		start := time.Now()
		runtime.GC()
		gcs = append(gcs, time.Since(start))
	}
	slices.Sort(gcs)
	b.ReportMetric(float64(gcs[2])/float64(time.Millisecond), "gc-ms")
	runtime.KeepAlive(t)
}
