package coordinator

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"contextd/session"
	"contextd/store"
)

// memoTree is a tree grown one entry at a time, with the generation of
// each state (as the store numbers its snapshots: one per publish).
type memoTree struct {
	sess *store.Session
	tr   *session.Tree
	gen  uint64
}

func newMemoTree() *memoTree {
	return &memoTree{sess: new(store.Session), tr: session.NewTree(session.Header{ID: "s"})}
}

// add appends an entry and publishes the next state (a new generation).
func (m *memoTree) add(id, parent string) {
	m.tr.Add(session.Entry{ID: id, ParentID: parent, Seq: m.tr.Len(), Type: session.TypeMessage})
	m.gen++
}

func (m *memoTree) key(leaf string, kind memoKind) memoKey {
	return memoKey{sess: m.sess, gen: m.gen, leaf: leaf, rules: session.NewestRules, kind: kind}
}

// branch is the branch of leaf in the current state, through the memo.
func (m *memoTree) branch(t *testing.T, c *memo, leaf string) *branchVal {
	t.Helper()
	k := m.key(leaf, kindBranch)
	tr := m.tr.Snapshot()
	bv, err := memoized(c, k, func() (*branchVal, int, error) { return deriveBranch(c, k, tr) })
	if err != nil {
		t.Fatal(err)
	}
	return bv
}

// A branch stored for one leaf is never changed by the extension of
// another: here e0←e1←e2←e3, e3's branch extended in place from e2's,
// e2's entry evicted and derived again, and e4 appended as a second child
// of e2 (Pi's /tree, then continue), its branch extended from e2's. e3's
// stored branch must stay [0 1 2 3]. Before the spare capacity of a
// branch's array was claimed by the array (arrayTail), an entry re-added
// with the same branch and a fresh claim let e4's branch write its seq
// into the slot e3's branch owns, making it [0 1 2 4].
func TestCachedBranchKeepsItsSeqsAfterSiblingExtension(t *testing.T) {
	c := &memo{maxEntries: 64, perSession: 64, maxBytes: 1 << 20}
	m := newMemoTree()
	m.add("e0", "")
	m.add("e1", "e0")
	m.branch(t, c, "e1")
	m.add("e2", "e1")
	b2 := m.branch(t, c, "e2") // extended from e1's: a new array with room
	if b2.tail == nil || cap(b2.seqs) == len(b2.seqs) {
		t.Fatalf("e2's branch %v (cap %d, tail %v) was not extended into an array with room", b2.seqs, cap(b2.seqs), b2.tail)
	}
	m.add("e3", "e2")
	b3 := m.branch(t, c, "e3") // extended in place: e2's array
	if want := []int{0, 1, 2, 3}; !slices.Equal(b3.seqs, want) || &b3.seqs[0] != &b2.seqs[0] {
		t.Fatalf("e3's branch = %v, want %v in e2's array", b3.seqs, want)
	}

	// e2's branch of this state is derived, evicted, then derived
	// again.
	m.branch(t, c, "e2")
	c.mu.Lock()
	c.remove(c.entries[m.key("e2", kindBranch)])
	c.mu.Unlock()
	again := m.branch(t, c, "e2")
	if want := []int{0, 1, 2}; !slices.Equal(again.seqs, want) {
		t.Fatalf("e2's branch derived again = %v, want %v", again.seqs, want)
	}

	// e4 is a second child of e2.
	m.add("e4", "e2")
	b4 := m.branch(t, c, "e4")
	if want := []int{0, 1, 2, 4}; !slices.Equal(b4.seqs, want) {
		t.Errorf("e4's branch = %v, want %v", b4.seqs, want)
	}
	// And e2's first branch (sharing e3's array), extended by 4 as a
	// request of the state before would: a copy.
	seqs, _ := appendOwned(b2.seqs, b2.tail, 4)
	if want := []int{0, 1, 2, 4}; !slices.Equal(seqs, want) {
		t.Errorf("e2's first branch extended by 4 = %v, want %v", seqs, want)
	}
	if want := []int{0, 1, 2, 3}; !slices.Equal(b3.seqs, want) {
		t.Errorf("e3's stored branch = %v, want %v", b3.seqs, want)
	}
	m.gen-- // the state in which e3 was the last entry
	if got := m.branch(t, c, "e3"); !slices.Equal(got.seqs, []int{0, 1, 2, 3}) {
		t.Errorf("e3's branch from the memo = %v, want [0 1 2 3]", got.seqs)
	}
}

// A memo hit returns the payload stored, not a copy: the same branch
// array, the same windows value.
func TestMemoHitIsIdentical(t *testing.T) {
	c := newMemo()
	m := newMemoTree()
	m.add("e0", "")
	m.add("e1", "e0")
	first := m.branch(t, c, "e1")
	second := m.branch(t, c, "e1")
	if first != second || &first.seqs[0] != &second.seqs[0] {
		t.Errorf("the second request got %p (%v), want the stored %p", second, second.seqs, first)
	}
	derived := 0
	k := m.key("e1", kindProjection)
	msgs := func() []session.ContextMessage {
		got, err := memoized(c, k, func() ([]session.ContextMessage, int, error) {
			derived++
			return []session.ContextMessage{{Seq: 0, Role: "user"}, {Seq: 1, Role: "user"}}, 48, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b := msgs(), msgs()
	if derived != 1 || &a[0] != &b[0] {
		t.Errorf("derived %d times (want 1); the hit shares the payload: %v", derived, &a[0] == &b[0])
	}
}

// Concurrent requests for one key derive it once; a failed derivation is
// not kept, and the next request derives again.
func TestMemoDerivesOnce(t *testing.T) {
	c := newMemo()
	m := newMemoTree()
	m.add("e0", "")
	k := m.key("e0", kindSearch)
	var runs atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	got := make([]int, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := memoized(c, k, func() (int, int, error) {
				runs.Add(1)
				<-release
				return 7, 8, nil
			})
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	close(release)
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Errorf("16 concurrent requests derived %d times, want 1", n)
	}
	for i, v := range got {
		if v != 7 {
			t.Errorf("request %d got %d, want 7", i, v)
		}
	}

	k2 := m.key("e0", kindPairs)
	boom := errors.New("boom")
	if _, err := memoized(c, k2, func() (int, int, error) { return 0, 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if v, err := memoized(c, k2, func() (int, int, error) { return 5, 8, nil }); err != nil || v != 5 {
		t.Errorf("after a failed derivation: %d, %v; want 5 derived again", v, err)
	}
}

// When a newer generation of a session is asked for, the memo drops the
// entries of the generations before the one it replaces as the newest,
// keeps the previous one's (the bases of extension), stores nothing for
// an older one, and leaves other sessions alone.
func TestMemoDropsOlderGenerations(t *testing.T) {
	c := newMemo()
	m := newMemoTree()
	other := newMemoTree()
	other.add("o0", "")
	other.branch(t, c, "o0")
	held := func(tree *memoTree) map[uint64]int {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := map[uint64]int{}
		for k := range c.entries {
			if k.sess == tree.sess {
				out[k.gen]++
			}
		}
		return out
	}
	m.add("e0", "")
	m.branch(t, c, "e0") // generation 1
	m.add("e1", "e0")
	m.branch(t, c, "e1") // generation 2
	m.branch(t, c, "e0")
	if got := held(m); got[1] != 1 || got[2] != 2 || len(got) != 2 {
		t.Errorf("after generation 2: entries by generation %v, want map[1:1 2:2]", got)
	}
	m.add("e2", "e1")
	b := m.branch(t, c, "e2") // generation 3: generation 1's entries go
	if got := held(m); got[2] != 2 || got[3] != 1 || len(got) != 2 {
		t.Errorf("after generation 3: entries by generation %v, want map[2:2 3:1]", got)
	}
	if !slices.Equal(b.seqs, []int{0, 1, 2}) || b.tail == nil {
		t.Errorf("e2's branch = %v (tail %v), want [0 1 2] extended from generation 2's e1", b.seqs, b.tail)
	}
	// A request still reading generation 1 is answered, not stored.
	m.gen = 1
	m.branch(t, c, "e0")
	m.gen = 3
	if got := held(m); got[1] != 0 {
		t.Errorf("a request of generation 1 stored %d entries, want none", got[1])
	}
	if got := held(other); got[1] != 1 {
		t.Errorf("the other session's entries: %v, want its one entry kept", got)
	}
}

// The memo holds at most maxEntries entries, perSession of one session
// (searches of them search answers), and maxBytes of payload (the entry just stored stays even alone over
// it), evicting the least recently used.
func TestMemoBounds(t *testing.T) {
	c := &memo{maxEntries: 5, perSession: 3, maxBytes: 100}
	a, b := newMemoTree(), newMemoTree()
	a.add("a0", "")
	b.add("b0", "")
	put := func(m *memoTree, leaf string, size int) {
		t.Helper()
		if _, err := memoized(c, m.key(leaf, kindProjection), func() (int, int, error) { return size, size, nil }); err != nil {
			t.Fatal(err)
		}
	}
	has := func(m *memoTree, leaf string) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.entries[m.key(leaf, kindProjection)]
		return ok
	}
	check := func(step string, entries, bytes int) {
		t.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.entries) != entries || c.bytes != bytes {
			t.Errorf("%s: %d entries of %d bytes, want %d of %d", step, len(c.entries), c.bytes, entries, bytes)
		}
	}
	for _, leaf := range []string{"1", "2", "3", "4"} {
		put(a, leaf, 10)
	}
	check("4 entries of one session", 3, 30)
	if has(a, "1") || !has(a, "4") {
		t.Error("the session's least recently used entry was not the one evicted")
	}
	put(a, "2", 10) // a hit: 2 becomes the most recently used
	for _, leaf := range []string{"1", "2", "3"} {
		put(b, leaf, 10)
	}
	check("6 entries of two sessions", 5, 50)
	if has(a, "3") || !has(a, "2") {
		t.Error("the least recently used entry of all was not the one evicted")
	}
	// b's fourth entry evicts b's first (3 per session), and its 70 bytes
	// the least recently used of the rest (a's 4): 100 bytes.
	put(b, "4", 70)
	check("a 70-byte entry", 4, 100)
	if has(b, "1") || has(a, "4") || !has(a, "2") {
		t.Error("the 70-byte entry did not evict b's first entry and a's least recently used one")
	}
	put(b, "5", 200) // alone over the bound: kept alone
	check("a 200-byte entry", 1, 200)
	if !has(b, "5") {
		t.Error("the entry just stored was evicted")
	}

	// Search answers: at most searches of them per session; a new one
	// evicts the session's least recently used answer, not its other
	// entries.
	c = &memo{maxEntries: 10, perSession: 10, searches: 2, maxBytes: 1000}
	put(a, "p", 10)
	search := func(q string) memoKey {
		k := a.key("a0", kindSearch)
		k.search = searchKey{query: q}
		if _, err := memoized(c, k, func() (int, int, error) { return 1, 10, nil }); err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := search("one")
	search("two")
	search("three")
	check("a projection and three searches", 3, 30)
	c.mu.Lock()
	_, firstKept := c.entries[first]
	c.mu.Unlock()
	if firstKept || !has(a, "p") {
		t.Errorf("the third search kept the first (%v) or evicted the projection (kept: %v)", firstKept, has(a, "p"))
	}

	// Over the global bound, the search answers of other sessions go
	// before an older entry of another kind: b's projection, used before
	// every answer here, stays.
	c = &memo{maxEntries: 3, perSession: 10, searches: 10, maxBytes: 1000}
	put(b, "p", 10)
	search("one")
	search("two")
	search("three")
	check("a projection and three searches over 3 entries", 3, 30)
	if !has(b, "p") {
		t.Error("a search answer evicted another session's older projection instead of an older search answer")
	}
}

// modeHint's marks are kept in the memo per session and generation, and a
// later state of the same tree extends the marks of the earlier one
// (marksOf): here the earlier marks are planted without the archive its
// first entry is, so marks that found it scanned the tree again.
func TestMarksExtendedAcrossGenerations(t *testing.T) {
	c := newMemo()
	m := newMemoTree()
	m.tr.Add(session.Entry{ID: "a", Seq: 0, Type: session.TypeCustom, CustomType: session.CustomTypeTreeArchive})
	m.gen++
	if mk := marksOf(c, m.sess, m.gen, m.tr.Snapshot()); !mk.archive || mk.n != 1 {
		t.Fatalf("marks = %+v, want an archive among 1 entry", mk)
	}
	c.mu.Lock()
	e := c.entries[memoKey{sess: m.sess, gen: m.gen, kind: kindMarks}]
	planted := e.val.(treeMarks)
	planted.archive = false
	e.val = planted
	c.mu.Unlock()
	m.add("b", "a")
	if mk := marksOf(c, m.sess, m.gen, m.tr.Snapshot()); mk.n != 2 || mk.archive {
		t.Errorf("marks after an append = %+v, want 2 entries, extended from the planted marks (no archive)", mk)
	}
	m.tr = session.NewTree(session.Header{ID: "s"}) // a rewrite: another tree
	m.add("a", "")
	m.add("b", "a")
	if mk := marksOf(c, m.sess, m.gen, m.tr.Snapshot()); mk.n != 2 || mk.archive {
		t.Errorf("marks of a rewritten tree = %+v, want 2 entries of its own, no archive", mk)
	}
}

// /context after Pi appended one entry derives from the memo's payloads
// of the state before: the new leaf's branch is the previous leaf's plus
// the entry, written into the previous branch's array (no walk of the
// whole branch), and so is the pairing list; the entries of the state
// two appends back are gone.
func TestContextAfterAppendExtends(t *testing.T) {
	svc, dir := localService(t, map[string][]byte{"s.jsonl": readFixture(t, "local-basic.jsonl")})
	file := filepath.Join(dir, "s.jsonl")
	stored := func(kind memoKind) (memoKey, any) {
		t.Helper()
		var key memoKey
		var val any
		svc.memo.mu.Lock()
		defer svc.memo.mu.Unlock()
		for k, e := range svc.memo.entries {
			if k.kind == kind && e.ready && k.gen > key.gen {
				key, val = k, e.val
			}
		}
		if val == nil {
			t.Fatalf("no entry of kind %d stored", kind)
		}
		return key, val
	}
	leaf := ""
	var branches []*branchVal
	var pairs []*pairsVal
	var gens []uint64
	for i := range 3 {
		if i > 0 {
			f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			id := "p" + itoa(i)
			_, err = f.WriteString(`{` + hUser("probe "+id) + `,"id":"` + id + `","parentId":"` + leaf + `","timestamp":"2026-08-01T10:00:09.000Z"}` + "\n")
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.Context(t.Context(), lbSession, ContextRequest{}); err != nil {
			t.Fatal(err)
		}
		k, bv := stored(kindBranch)
		_, pv := stored(kindPairs)
		leaf = k.leaf
		branches, pairs, gens = append(branches, bv.(*branchVal)), append(pairs, pv.(*pairsVal)), append(gens, k.gen)
	}
	if leaf != "p2" || gens[0] >= gens[1] || gens[1] >= gens[2] {
		t.Fatalf("leaf %q, generations %v: want p2 and three increasing generations", leaf, gens)
	}
	b1, b2 := branches[1], branches[2]
	if !slices.Equal(b2.seqs[:len(b1.seqs)], b1.seqs) || len(b2.seqs) != len(b1.seqs)+1 || &b2.seqs[0] != &b1.seqs[0] {
		t.Errorf("the branch after the second append (%d seqs) is not the first's (%d) plus one, in its array", len(b2.seqs), len(b1.seqs))
	}
	p1, p2 := pairs[1].pc.pairs, pairs[2].pc.pairs
	if len(p2) != len(p1)+1 || &p2[0] != &p1[0] || p2[len(p2)-1].EntryID != "p2" {
		t.Errorf("the pairing list after the second append (%d messages) is not the first's (%d) plus p2, in its array", len(p2), len(p1))
	}
	svc.memo.mu.Lock()
	defer svc.memo.mu.Unlock()
	for k := range svc.memo.entries {
		if k.gen <= gens[0] {
			t.Errorf("an entry of the first state (generation %d) is still held: kind %d, leaf %q", k.gen, k.kind, k.leaf)
		}
	}
}
