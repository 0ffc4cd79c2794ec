package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file cut while its tree preview reads it (a rewrite in place
// truncates, then writes) is read again from a new stat, as a sync reads
// it (cutReader), instead of giving a preview that takes the missing
// bytes for an in-flight line. Here the first read of the preview finds
// the file cut after a1 (cutAt bytes): the preview is then built from a
// new stat of cutAt bytes, so it covers the whole file it describes
// (Bytes = FileSize = cutAt, the header and a1). Before the preview read
// through cutReader it kept the first stat's size (len(full)) with only
// cutAt bytes read: a2's bytes stood as an in-flight line.
func TestTreePreviewFileCutWhileRead(t *testing.T) {
	old := PreviewMinBytes
	PreviewMinBytes = 0
	release := make(chan struct{})
	beforeBackgroundSync = func() { <-release }
	t.Cleanup(func() { PreviewMinBytes, beforeBackgroundSync, beforePreviewRead = old, nil, nil })
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	full := strings.Join(cutLines, "")
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(ctx, root, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	defer close(release)
	cutAt := int64(len(cutLines[0]) + len(cutLines[1]))
	reads := 0
	beforePreviewRead = func(off int64) {
		reads++
		if reads == 1 {
			if err := os.Truncate(path, cutAt); err != nil {
				t.Error(err)
			}
		}
	}
	s := x.Session(path)
	if err := s.Sync(TreeOnly(ctx)); err != nil {
		t.Fatal(err)
	}
	if reads < 2 {
		t.Errorf("the preview read the file %d times, want it read again after the cut", reads)
	}
	if err := s.ReadTree(func(v *View) error {
		if v.Tree == nil {
			t.Fatal("no preview tree")
		}
		if v.Bytes != cutAt || v.FileSize != cutAt {
			t.Errorf("preview covers %d bytes of a file of %d, want %d of %d", v.Bytes, v.FileSize, cutAt, cutAt)
		}
		if v.Tree.Len() != 1 {
			t.Errorf("preview has %d entries, want 1 (a1)", v.Tree.Len())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
