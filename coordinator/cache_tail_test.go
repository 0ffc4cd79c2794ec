package coordinator

import (
	"slices"
	"testing"

	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// A branch cached for one leaf is never changed by the extension of
// another: here e0←e1←e2←e3, e2's cache entry is evicted and re-added
// with the same branch (a request that read before e3 was appended), and
// e4 is appended as a second child of e2 (Pi's /tree, then continue).
// e3's cached branch must stay [0 1 2 3]; before the spare capacity of a
// branch's array was claimed by the array, the re-added entry's fresh
// claim let e4's branch write its seq into the slot e3's branch owns,
// making it [0 1 2 4].
func TestCachedBranchKeepsItsSeqsAfterSiblingExtension(t *testing.T) {
	sess := new(store.Session)
	tr := session.NewTree(session.Header{ID: "s"})
	add := func(id, parent string) {
		tr.Add(session.Entry{ID: id, ParentID: parent, Seq: tr.Len(), Type: session.TypeMessage})
	}
	key := func(leaf string) windowKey {
		return windowKey{sess: sess, tree: tr, n: tr.Len(), items: tr.Len(), leaf: leaf, rules: session.NewestRules}
	}
	c := &windowCache{max: 8, perSession: 8}
	add("e0", "")
	add("e1", "e0")
	add("e2", "e1")
	k2 := key("e2")
	// The branch of e2 as Tree.Branch returns it: room to grow.
	seqs2 := make([]int, 3, 8)
	copy(seqs2, []int{0, 1, 2})
	c.addBranch(k2, seqs2, nil, false, 2)

	// Pi appends e3: its branch extends e2's.
	add("e3", "e2")
	k3 := key("e3")
	seqs3, tail3, ok := c.extendBranch(k3, tr)
	if !ok {
		t.Fatal("e3's branch was not extended from e2's")
	}
	c.addBranch(k3, seqs3, tail3, false, 3)

	// e2's entry is evicted, then re-added by a request holding its
	// branch (the same slice).
	c.mu.Lock()
	c.evict(func(o *windowEntry) bool { return o.key == k2 })
	c.mu.Unlock()
	if _, _, _, ok := c.branch(k2); ok {
		t.Fatal("e2's entry is still cached after its eviction")
	}
	c.windows(k2, seqs2, nil, false, func([]history.Window, int) []history.Window { return nil })

	// e4 is a second child of e2.
	add("e4", "e2")
	k4 := key("e4")
	seqs4, tail4, ok := c.extendBranch(k4, tr)
	if !ok {
		t.Fatal("e4's branch was not extended from e2's")
	}
	c.addBranch(k4, seqs4, tail4, false, 4)

	if want := []int{0, 1, 2, 4}; !slices.Equal(seqs4, want) {
		t.Errorf("e4's branch = %v, want %v", seqs4, want)
	}
	got, _, _, ok := c.branch(k3)
	if !ok {
		t.Fatal("e3's branch is no longer cached")
	}
	if want := []int{0, 1, 2, 3}; !slices.Equal(got, want) || !slices.Equal(seqs3, want) {
		t.Errorf("e3's cached branch = %v (slice held: %v), want %v", got, seqs3, want)
	}
}

// modeHint's scans are kept for at most maxHints sessions, and a scan of
// a session's tree extends the last one while the tree grows.
func TestMarksBounded(t *testing.T) {
	c := newWindowCache()
	tr := session.NewTree(session.Header{ID: "s"})
	tr.Add(session.Entry{ID: "a", Seq: 0, Type: session.TypeCustom, CustomType: session.CustomTypeTreeArchive})
	var sessions []*store.Session
	for range maxHints + 10 {
		sess := new(store.Session)
		sessions = append(sessions, sess)
		if m := c.marks(sess, tr.Snapshot()); !m.archive || m.n != 1 {
			t.Fatalf("marks = %+v, want an archive among 1 entry", m)
		}
	}
	if n := len(c.hints); n != maxHints {
		t.Errorf("%d sessions' marks kept, want %d", n, maxHints)
	}
	last := sessions[len(sessions)-1]
	tr.Add(session.Entry{ID: "b", ParentID: "a", Seq: 1, Type: session.TypeMessage})
	if m := c.marks(last, tr.Snapshot()); m.n != 2 || !m.archive {
		t.Errorf("marks after an append = %+v, want 2 entries scanned, an archive", m)
	}
}
