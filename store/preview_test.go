package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/bench/sessiongen"
	"contextd/session"
)

// TestTreePreview: a tree-only sync of files never indexed (every file
// takes the preview path here) gives ReadTree the same header, entries,
// line counts and bytes as a full index of the same files; a full Sync
// afterwards waits for the background index and sees exactly what a cold
// one-phase index sees (items and texts included); no file is written.
func TestTreePreview(t *testing.T) {
	old := PreviewMinBytes
	PreviewMinBytes = 0
	// The background index waits until the tree views are checked, so
	// that they are the previews.
	release := make(chan struct{})
	beforeBackgroundSync = func() { <-release }
	t.Cleanup(func() { PreviewMinBytes, beforeBackgroundSync = old, nil })
	root := t.TempDir()
	names, hashes := copyFixtures(t, root)
	ctx := context.Background()
	ref := MustOpenIndex(t, root)
	if _, err := ref.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]snapshot{}
	for _, s := range ref.Sessions() {
		want[s.Path()] = snap(t, s)
	}

	x := MustOpenIndex(t, root)
	ss, err := x.SyncAll(TreeOnly(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != len(names) {
		t.Fatalf("sessions = %d, want %d", len(ss), len(names))
	}
	for _, s := range ss {
		w := want[s.Path()]
		var got snapshot
		if err := s.ReadTree(func(v *View) error {
			if v.State != StateOK || v.Tree == nil {
				t.Errorf("%s: tree view state %q, tree %v", s.Path(), v.State, v.Tree != nil)
				return nil
			}
			if len(v.Items) != 0 {
				t.Errorf("%s: tree view has %d items before the background index, want the preview's 0", s.Path(), len(v.Items))
			}
			got.Header, got.Stats, got.Bytes = v.Tree.Header, v.Stats, v.Bytes
			got.Entries = v.Tree.Entries()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if s.SessionID() != w.Header.ID {
			t.Errorf("%s: SessionID %q, want %q", s.Path(), s.SessionID(), w.Header.ID)
		}
		w.Items, w.Texts = nil, nil
		if d := cmp.Diff(w, got); d != "" {
			t.Errorf("%s tree view (-full index +tree view):\n%s", s.Path(), d)
		}
	}
	// A second tree-only sync of an unchanged file returns at once.
	for _, s := range ss {
		if err := s.Sync(TreeOnly(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	// A full sync waits for the background index: then everything equals
	// the one-phase index, and ReadTree reads it too.
	for _, s := range ss {
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want[s.Path()], snap(t, s)); d != "" {
			t.Errorf("%s after the full sync (-one phase +two phases):\n%s", s.Path(), d)
		}
		if err := s.ReadTree(func(v *View) error {
			if len(v.Items) != v.Tree.Len() {
				t.Errorf("%s: ReadTree after the full sync has %d items for %d entries", s.Path(), len(v.Items), v.Tree.Len())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(root, n))
		if sha256.Sum256(b) != hashes[n] {
			t.Errorf("%s was modified", n)
		}
	}
}

// genSession writes a generated session of about mb MiB (bench/sessiongen,
// 8-hex ids, huge results of 64 KiB) to path.
func genSession(t *testing.T, path string, mb float64) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := sessiongen.Generate(&buf, sessiongen.Options{Bytes: int64(mb * (1 << 20)), Seed: 7, WindowEvery: 50, Big: []int{64 << 10}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// treePreviewOf runs a tree-only sync of the one session under root with
// the background index held, and returns the session and the preview's
// tree; release lets the background index go.
func treePreviewOf(t *testing.T, root string) (s *Session, tree *session.Tree, release func()) {
	t.Helper()
	old := PreviewMinBytes
	PreviewMinBytes = 0
	held := make(chan struct{})
	beforeBackgroundSync = func() { <-held }
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(func() { release(); PreviewMinBytes, beforeBackgroundSync = old, nil })
	x, err := OpenIndex(t.Context(), root, filepath.Join(t.TempDir(), "index"), Options{BatchBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	ss, err := x.SyncAll(TreeOnly(t.Context()))
	if err != nil || len(ss) != 1 {
		t.Fatalf("sync: %v, %d sessions", err, len(ss))
	}
	p := ss[0].previewNow()
	if p == nil || p.tree == nil || p.tree.Len() == 0 {
		t.Fatal("no tree preview")
	}
	return ss[0], p.tree, release
}

// TestTreePreviewTreeReused: the full index that follows a tree preview
// (in batches of 64 KiB here, so the reuse spans many) keeps the
// preview's entries rather than a second copy of them (docs/benchmarks.md: two
// trees of a 1 GiB session peaked at 176 MiB), and its answers equal a
// one-phase index's, items and texts included.
func TestTreePreviewTreeReused(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "gen.jsonl")
	genSession(t, path, 1)
	want := onePhaseSnap(t, root, path)
	if len(want.Entries) < 200 {
		t.Fatalf("only %d entries generated", len(want.Entries))
	}

	s, pt, release := treePreviewOf(t, root)
	release()
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, snap(t, s)); d != "" {
		t.Errorf("two phases (-one phase +two phases):\n%s", d)
	}
	if err := s.Read(func(v *View) error {
		if !v.Tree.SharesEntries(pt) || v.Tree.Reusing() {
			t.Errorf("the full index built its own entries (reusing %v) instead of keeping the preview's", v.Tree.Reusing())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if s.previewNow() != nil {
		t.Error("the preview is still kept after the full index")
	}
}

// TestTreePreviewFileRewritten: a file rewritten between the preview and
// the full index (one id changed in the middle, same size) is indexed as
// it is now: the full index's tree stops sharing the preview's at that
// entry, its answers equal a one-phase index of the new bytes, the
// preview's tree is unchanged, and no file is written.
func TestTreePreviewFileRewritten(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "gen.jsonl")
	genSession(t, path, 1)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, pt, release := treePreviewOf(t, root)
	mid := pt.Entry(pt.Len() / 2)
	changed := bytes.Clone(orig)
	line := changed[mid.Offset : mid.Offset+int64(mid.Length)]
	i := bytes.Index(line, []byte(`"id":"`+mid.ID+`"`))
	if i < 0 {
		t.Fatalf("id of entry %d not found in its line", mid.Seq)
	}
	line[i+6] ^= 1 // another hex digit: a new id, same length
	if err := os.WriteFile(path, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	release()
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := onePhaseSnap(t, root, path)
	if want.Entries[mid.Seq].ID == mid.ID {
		t.Fatal("the rewrite did not change the id")
	}
	if d := cmp.Diff(want, snap(t, s)); d != "" {
		t.Errorf("after a rewrite between the phases (-one phase +two phases):\n%s", d)
	}
	if pt.ID(mid.Seq) != mid.ID {
		t.Error("the preview's tree was changed")
	}
	if err := s.Read(func(v *View) error {
		if v.Tree.Reusing() || v.Tree.SharesEntries(pt) {
			t.Error("the full index's tree still shares the preview's after a changed entry")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Equal(b, changed) {
		t.Error("the session file was modified")
	}
}

// onePhaseSnap indexes the file at path under root in one phase (no tree
// preview), in batches of 64 KiB, on a fresh index, and returns its
// snapshot: what a two-phase index must equal.
func onePhaseSnap(t *testing.T, root, path string) snapshot {
	t.Helper()
	ref, err := OpenIndex(t.Context(), root, filepath.Join(t.TempDir(), "ref"), Options{BatchBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	one := ref.Session(path)
	if err := one.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	return snap(t, one)
}
