package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSyncOpensDirectUnlessSymlink: a sync of a file reached without a
// symlink opens it in one openat2 (openDirect); a path that now has a
// symlink on the way takes the full resolve and confined open, so a file
// replaced by a symlink to another file inside is read through it, and
// the sessions directory moved away and replaced by a symlink to where it
// went (the file keeps its inode) is found outside at the next append, as
// before the direct open.
func TestSyncOpensDirectUnlessSymlink(t *testing.T) {
	ctx := context.Background()
	x, s, path, _ := twoLineSession(t, "s-direct")
	defer x.Close()
	root := filepath.Dir(path)
	appendLine := func(p, id, parent string) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(`{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"user","content":"more"}}` + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	sync := func(step string, wantOpens, wantDirect int64, wantState FileState, wantLeaf string) {
		t.Helper()
		opens, direct := sessionOpens.Load(), directOpens.Load()
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if n, d := sessionOpens.Load()-opens, directOpens.Load()-direct; n != wantOpens || d != wantDirect {
			t.Errorf("%s: %d opens, %d direct, want %d and %d", step, n, d, wantOpens, wantDirect)
		}
		if err := s.Read(func(v *View) error {
			leaf := ""
			if v.Tree != nil {
				leaf = v.Tree.Leaf()
			}
			if v.State != wantState || leaf != wantLeaf {
				t.Errorf("%s: state %v, leaf %q, want %v and %q", step, v.State, leaf, wantState, wantLeaf)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	sync("first sync", 1, 1, StateOK, "a1")
	appendLine(path, "a2", "a1")
	sync("after an append", 1, 1, StateOK, "a2")

	// The file replaced by a symlink to a copy inside with one more line.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other.jsonl")
	if err := os.WriteFile(other, data, 0o600); err != nil {
		t.Fatal(err)
	}
	appendLine(other, "a3", "a2")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	sync("swapped for a symlink inside", 1, 0, StateOK, "a3")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	appendLine(path, "a4", "a3")
	sync("a file again", 1, 1, StateOK, "a4")

	// The sessions directory moved away and replaced by a symlink to it:
	// the same inode, now outside.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(root, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, root); err != nil {
		t.Fatal(err)
	}
	appendLine(path, "a5", "a4")
	sync("its directory moved outside", 0, 0, StateOutside, "a4")
}
