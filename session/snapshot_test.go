package session

import (
	"sync"
	"testing"
)

// chainEntryAt is memEntryAt(i) with every parent present: the entry
// before it (a tree with a missing parent cannot be reused).
func chainEntryAt(i int) Entry {
	e := memEntryAt(i)
	e.ParentID = ""
	if i > 0 {
		e.ParentID = memEntryAt(i - 1).ID
	}
	return e
}

// checkTail checks the last k entries of s and the id lookup of each
// against chainEntryAt.
func checkTail(t *testing.T, s *Tree, k int) {
	t.Helper()
	for i := max(0, s.Len()-k); i < s.Len(); i++ {
		want := chainEntryAt(i)
		if got := s.Entry(i); !got.Same(&want) {
			t.Errorf("snapshot of %d entries: entry %d reads %+v, want %+v", s.Len(), i, got, want)
			return
		}
		if seq, ok := s.Lookup(want.ID); !ok || seq != i {
			t.Errorf("snapshot of %d entries: Lookup(%q) = %d %v, want %d", s.Len(), want.ID, seq, ok, i)
			return
		}
	}
}

// TestSnapshotReadWhileAdding: snapshots are read on other goroutines
// while Adds go on without a lock (Tree.Snapshot): each reads back the
// entries it holds, its arena's chunk being written included (run with
// -race: an Add must write only past what a snapshot reads). Then a tree
// reusing a finished one takes all of its entries (sharing its memory)
// and adds more while snapshots of both are read.
func TestSnapshotReadWhileAdding(t *testing.T) {
	h := Header{Version: 3, ID: "s"}
	read := func(snaps <-chan *Tree, wg *sync.WaitGroup) {
		defer wg.Done()
		for s := range snaps {
			checkTail(t, s, 40)
		}
	}
	tr := NewTree(h)
	snaps := make(chan *Tree, 8)
	var wg sync.WaitGroup
	wg.Add(2)
	go read(snaps, &wg)
	go read(snaps, &wg)
	const n = 6000
	for i := range n {
		tr.Add(chainEntryAt(i))
		if i%50 == 0 {
			snaps <- tr.Snapshot()
		}
	}
	close(snaps)
	wg.Wait()
	checkTail(t, tr, n)

	reused := NewTree(h)
	reused.Reuse(tr)
	if !reused.Reusing() {
		t.Fatal("Reuse did nothing")
	}
	snaps = make(chan *Tree, 8)
	wg.Add(2)
	go read(snaps, &wg)
	go read(snaps, &wg)
	for i := range n + 3000 {
		reused.Add(chainEntryAt(i))
		if i == n-1 && (reused.Reusing() || !reused.SharesEntries(tr)) {
			t.Error("the reusing tree copied the entries it was fed unchanged")
		}
		if i%50 == 0 {
			snaps <- tr.Snapshot()
			snaps <- reused.Snapshot()
		}
	}
	close(snaps)
	wg.Wait()
	checkTail(t, reused, n+3000)
	checkTail(t, tr, n)
}
