package store

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	var names []string
	for _, dir := range []string{"pi-sessions", "pi-tree"} {
		m, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.jsonl"))
		for _, p := range m {
			copyFile(t, p, filepath.Join(root, filepath.Base(p)))
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) < 5 {
		t.Fatalf("only %d fixture files", len(names))
	}
	hashes := map[string][32]byte{}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(root, n))
		hashes[n] = sha256.Sum256(b)
	}
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
			got.Entries = append([]session.Entry(nil), v.Tree.Entries...)
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

// TestTreePreviewMaxBytes: a file of PreviewMaxBytes or more is indexed in
// one phase even by a tree-only sync (the preview's tree and the full
// index's tree together outgrow the memory budget): ReadTree right after
// it sees the full index, items included.
func TestTreePreviewMaxBytes(t *testing.T) {
	oldMin, oldMax := PreviewMinBytes, PreviewMaxBytes
	t.Cleanup(func() { PreviewMinBytes, PreviewMaxBytes = oldMin, oldMax })
	root := t.TempDir()
	copyFile(t, filepath.Join("..", "testdata", "pi-tree", "local-basic.jsonl"), filepath.Join(root, "a.jsonl"))
	fi, err := os.Stat(filepath.Join(root, "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	PreviewMinBytes, PreviewMaxBytes = 0, fi.Size()
	x := MustOpenIndex(t, root)
	// Were a preview built, the background index would wait here, so the
	// check below cannot race it (released before the index closes).
	release := make(chan struct{})
	beforeBackgroundSync = func() { <-release }
	t.Cleanup(func() { close(release); beforeBackgroundSync = nil })
	ss, err := x.SyncAll(TreeOnly(t.Context()))
	if err != nil || len(ss) != 1 {
		t.Fatalf("sync: %v, %d sessions", err, len(ss))
	}
	if p := ss[0].previewNow(); p != nil {
		t.Fatalf("a preview was built for a file of PreviewMaxBytes")
	}
	if err := ss[0].ReadTree(func(v *View) error {
		if v.State != StateOK || v.Tree == nil || len(v.Items) == 0 {
			t.Errorf("tree view: state %q, tree %v, %d items; want the full index", v.State, v.Tree != nil, len(v.Items))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
