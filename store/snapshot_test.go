package store

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"contextd/session"
)

// viewState is what a cache keyed by generation relies on being the same
// for two views of one generation: the tree (its snapshot and length),
// the item table, the bytes indexed, the text and the file state.
type viewState struct {
	tree      *session.Tree
	n, items  int
	bytes     int64
	fileSize  int64
	state     FileState
	stateMsg  string
	text      *textSnap
	filterGen uint64
	inFlight  int64
}

func stateOf(v *View) viewState {
	st := viewState{items: len(v.Items), bytes: v.Bytes, fileSize: v.FileSize, state: v.State, stateMsg: v.StateMsg,
		text: v.text, filterGen: v.filters.gen, inFlight: v.InFlightTooLong}
	if v.Tree != nil {
		st.tree, st.n = v.Tree, v.Tree.Len()
	}
	return st
}

// TestGenerationPerPublish: every change a sync publishes (an appended
// entry, a rewrite, a truncation, a deleted file, a rebuild) gives the
// session's views a greater generation; a sync that finds nothing new
// and repeated reads keep it; and, with readers reading while a writer
// appends and syncs, two views of one generation are the same state
// (snapshot.go).
func TestGenerationPerPublish(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "g.jsonl")
	x, s := syncedFile(t, root, path, genLines("x", 10))
	gen := func() (uint64, viewState) {
		t.Helper()
		var g uint64
		var st viewState
		if err := s.Read(func(v *View) error { g, st = v.Generation(), stateOf(v); return nil }); err != nil {
			t.Fatal(err)
		}
		return g, st
	}
	appendLine := func(i int) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		id := "u" + strconv.Itoa(i)
		parent := "a1"
		if i > 0 {
			parent = "u" + strconv.Itoa(i-1)
		}
		if _, err := f.WriteString(`{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-12-01T00:00:02.000Z","message":{"role":"user","content":"m` + id + `"}}` + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	sync1 := func() {
		t.Helper()
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}

	g0, st0 := gen()
	if g0 == 0 || st0.n != 1 {
		t.Fatalf("after the first sync: generation %d, %d entries; want a generation > 0 and 1 entry", g0, st0.n)
	}
	if g, st := gen(); g != g0 || st != st0 {
		t.Errorf("a second read: generation %d (%+v), want %d (%+v)", g, st, g0, st0)
	}
	sync1() // nothing new: no publish
	if g, _ := gen(); g != g0 {
		t.Errorf("a sync that found nothing new: generation %d, want %d kept", g, g0)
	}

	last := g0
	step := func(what string, wantEntries int) {
		t.Helper()
		g, st := gen()
		if g <= last {
			t.Errorf("%s: generation %d, want more than %d", what, g, last)
		}
		if st.n != wantEntries {
			t.Errorf("%s: %d entries, want %d", what, st.n, wantEntries)
		}
		last = g
	}
	appendLine(0)
	sync1()
	step("one appended entry", 2)

	// A rewrite (shorter, other entries): a reset, a new tree.
	if err := os.WriteFile(path, []byte(genLines("y", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	sync1()
	step("a rewrite", 1)
	// Deleted: the state changes.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	sync1()
	g, st := gen()
	if g <= last || st.state != StateMissing {
		t.Errorf("a deleted file: generation %d, state %s; want more than %d, missing", g, st.state, last)
	}
	last = g
	if err := os.WriteFile(path, []byte(genLines("z", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	sync1()
	step("the file back", 1)
	if err := x.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	sync1()
	step("a rebuild", 1)

	// Readers record the state of every generation they see while
	// entries are appended and synced: one state per generation.
	seen := map[uint64]viewState{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.Read(func(v *View) error {
					g, st := v.Generation(), stateOf(v)
					mu.Lock()
					defer mu.Unlock()
					if old, ok := seen[g]; ok && old != st {
						t.Errorf("generation %d read as two states: %+v and %+v", g, old, st)
					}
					seen[g] = st
					return nil
				})
			}
		}()
	}
	for i := range 50 {
		appendLine(i)
		sync1()
	}
	close(stop)
	wg.Wait()
	g, st = gen()
	if st.n != 51 || g <= last {
		t.Errorf("after 50 appends: generation %d, %d entries; want more than %d, 51", g, st.n, last)
	}
	if len(seen) < 2 {
		t.Errorf("the readers saw %d generations during 50 appends, want several", len(seen))
	}
}

// TestGenerationOfPreview: while a cold index serves its tree preview,
// ReadTree's view (the preview's tree, no items) has a generation of its
// own, not the one of Read's view of the same snapshot; the full index
// that follows publishes a greater one.
func TestGenerationOfPreview(t *testing.T) {
	root := t.TempDir()
	genSession(t, filepath.Join(root, "gen.jsonl"), 1)
	s, pt, release := treePreviewOf(t, root)
	var preview, full uint64
	if err := s.ReadTree(func(v *View) error {
		if v.Tree != pt || len(v.Items) != 0 {
			t.Errorf("ReadTree's view is not the preview's (%d items)", len(v.Items))
		}
		preview = v.Generation()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Read(func(v *View) error { full = v.Generation(); return nil }); err != nil {
		t.Fatal(err)
	}
	if preview == 0 || preview == full {
		t.Errorf("the preview's generation is %d, Read's %d: want a number of its own", preview, full)
	}
	release()
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadTree(func(v *View) error {
		if g := v.Generation(); g <= preview || len(v.Items) == 0 {
			t.Errorf("after the full index: generation %d, %d items; want more than %d and the items", g, len(v.Items), preview)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
