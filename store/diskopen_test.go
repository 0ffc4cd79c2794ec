package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"contextd/history"
)

// TestOpenDiskFileAsOpenFile: openDiskFile creates with the mode asked,
// writes where asked, and fails on a missing file with the *os.PathError
// of os.OpenFile (openText's ErrFileChanged tests fs.ErrNotExist).
func TestOpenDiskFileAsOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.s2")
	_, err := openDiskFile(path, os.O_RDONLY, 0)
	var pe *os.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" || pe.Path != path {
		t.Fatalf("missing file: %v, want open %s: no such file", err, path)
	}
	f, err := openDiskFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abc"), 2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "\x00\x00abc" || fi.Mode().Perm() != 0o600 {
		t.Errorf("file %q mode %v, want \"\\x00\\x00abc\" and -rw-------", got, fi.Mode().Perm())
	}
}

// TestAppendOpensNoTextFile: the first sync of a session creates its
// frame file (empty: its text is under a frame, all in the tail); the
// sync of an appended line after it opens no file of the item text, and
// the appended item's text reads back.
func TestAppendOpensNoTextFile(t *testing.T) {
	ctx := context.Background()
	x, s, path, _ := twoLineSession(t, "s-lazy")
	defer x.Close()
	before := diskOpens.Load()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.framePath()); err != nil || fi.Size() != 0 {
		t.Fatalf("frame file after the first sync: %v, %v; want it empty", fi, err)
	}
	if n := diskOpens.Load() - before; n != 1 {
		t.Errorf("first sync: %d text files opened, want 1 (the frame file)", n)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"user","content":"appended text"}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before = diskOpens.Load()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := diskOpens.Load() - before; n != 0 {
		t.Errorf("sync of an appended line: %d text files opened, want 0", n)
	}
	if err := s.Read(func(v *View) error {
		if n := len(v.Items); n != 2 {
			t.Fatalf("%d items, want 2", n)
		}
		text, err := v.Texts().Prefix(history.ItemRef{ItemID: "a2", Key: 1}, 1000)
		if err != nil || !strings.Contains(text, "appended text") {
			t.Errorf("item 1 text %q, %v; want it to hold \"appended text\"", text, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
