package session

import (
	"fmt"
	"runtime"
	"testing"
)

// TestBranchRepeatedIDCostsNoMore: one repeated id among 20,000 entries
// leaves Branch's answer Pi's (the later entry with the id wins) and its
// cost that of a tree without one: the same allocations as walking a tree
// of unique ids, plus at most the answer's own growth (at a03e7ac a map of
// every step made the walk 8 to 10 times slower; bench/run.sh measures
// the time). A parent cycle is still found and reported.
func TestBranchRepeatedIDCostsNoMore(t *testing.T) {
	const n = 20000
	build := func(dup bool) *Tree {
		tr := NewTree(Header{ID: "dup"})
		for i := range n {
			e := Entry{Seq: i, ID: fmt.Sprintf("e%05d", i), Type: "message"}
			if i > 0 {
				e.ParentID = fmt.Sprintf("e%05d", i-1)
			}
			if dup && i == 1 {
				e.ID = "e00000" // a repeated id: entry 1 is now e00000, entry 0 unreachable
				e.ParentID = ""
			}
			if dup && i == 2 {
				e.ParentID = "e00000"
			}
			tr.Add(e)
		}
		return tr
	}
	unique, dup := build(false), build(true)
	seqs, cycle, err := dup.Branch("")
	if err != nil || cycle || len(seqs) != n-1 || seqs[0] != 1 || seqs[len(seqs)-1] != n-1 {
		t.Fatalf("branch with a repeated id: %d entries from %v, cycle %v, %v; want %d from entry 1", len(seqs), seqs[:1], cycle, err, n-1)
	}
	base := testing.AllocsPerRun(5, func() { unique.Branch("") })
	got := testing.AllocsPerRun(5, func() { dup.Branch("") })
	if got > base+2 {
		t.Errorf("Branch with one repeated id: %v allocations, want at most %v (a tree of unique ids: %v)", got, base+2, base)
	}
	// A cycle (a parent that comes later and points back) is still reported.
	cyc := NewTree(Header{ID: "cyc"})
	cyc.Add(Entry{Seq: 0, ID: "a", ParentID: "b", Type: "message"})
	cyc.Add(Entry{Seq: 1, ID: "b", ParentID: "a", Type: "message"})
	if seqs, cycle, err := cyc.Branch("b"); err != nil || !cycle || fmt.Sprint(seqs) != "[0 1]" {
		t.Errorf("cycle: %v %v %v, want [0 1] and cycle", seqs, cycle, err)
	}
}

// TestBranchBoundaryIDCollisionCostsNoMore: a hostile file whose entry
// halfway down a 50,000-entry chain reuses the id of the boundary at its
// root (docs/security.md N11) makes the chain a parent cycle under Pi's
// byId (the later entry wins: entry 1's parent is now the middle entry).
// Branch answers every entry but the shadowed boundary, root to leaf
// (Seqs 1…n), with cycle true, and costs what a tree of unique ids costs:
// at most 2 more allocations and n/8 bytes (a bit per entry) more. At
// a03e7ac the walk went round the cycle once by id lookups, then again
// with a map of every step (14 s at 2,000,000 entries on the loaded
// 2-core machine, and a request paid it at every Branch). A snapshot
// taken before the collision still answers the tree as it was.
func TestBranchBoundaryIDCollisionCostsNoMore(t *testing.T) {
	const n = 50000
	build := func(collide bool) (*Tree, *Tree) {
		tr := NewTree(Header{ID: "collide"})
		tr.Add(Entry{Seq: 0, ID: "bnd00000", Type: TypeCustomMessage, CustomType: "codex-context-window"})
		parent := "bnd00000"
		var before *Tree
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf("e%07d", i)
			if i == n/2 {
				before = tr.Snapshot()
				if collide {
					id = "bnd00000"
				}
			}
			tr.Add(Entry{Seq: i, ID: id, ParentID: parent, Type: TypeMessage})
			parent = id
		}
		return tr, before
	}
	unique, _ := build(false)
	collided, before := build(true)
	seqs, cycle, err := collided.Branch("")
	if err != nil || !cycle || len(seqs) != n || seqs[0] != 1 || seqs[n-1] != n {
		t.Fatalf("branch with the boundary id repeated: %d entries, first %v, cycle %v, %v; want Seqs 1…%d and cycle", len(seqs), seqs[:min(1, len(seqs))], cycle, err, n)
	}
	for i, s := range seqs {
		if s != i+1 {
			t.Fatalf("seqs[%d] = %d, want %d", i, s, i+1)
		}
	}
	if seqs, cycle, err := before.Branch(""); err != nil || cycle || len(seqs) != n/2 || seqs[0] != 0 {
		t.Errorf("snapshot before the collision: %d entries from %v, cycle %v, %v; want Seqs 0…%d, no cycle", len(seqs), seqs[:min(1, len(seqs))], cycle, err, n/2-1)
	}
	baseAllocs := testing.AllocsPerRun(3, func() { unique.Branch("") })
	gotAllocs := testing.AllocsPerRun(3, func() { collided.Branch("") })
	if gotAllocs > baseAllocs+2 {
		t.Errorf("Branch with a boundary-id collision: %v allocations, want at most %v (unique ids: %v)", gotAllocs, baseAllocs+2, baseAllocs)
	}
	allocated := func(tr *Tree) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		tr.Branch("")
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	base, got := allocated(unique), allocated(collided)
	if limit := base + n/8 + 4096; got > limit {
		t.Errorf("Branch with a boundary-id collision allocated %d bytes, want at most %d (unique ids: %d, plus a bit per entry)", got, limit, base)
	}
}
