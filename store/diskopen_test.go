package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
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
