package session

import (
	"fmt"
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
