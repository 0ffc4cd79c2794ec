package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"

	"contextd/migrations"
)

// TestIsCorrupt: the SQLite result codes SQLITE_CORRUPT and SQLITE_NOTADB
// (sqlite3.Error values, also wrapped) are corruption; other codes are
// not, and neither is an error that only says "malformed" in its text.
func TestIsCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"SQLITE_CORRUPT", sqlite3.Error{Code: sqlite3.ErrCorrupt}, true},
		{"SQLITE_NOTADB", sqlite3.Error{Code: sqlite3.ErrNotADB}, true},
		{"wrapped SQLITE_NOTADB", fmt.Errorf("read journal mode: %w", sqlite3.Error{Code: sqlite3.ErrNotADB}), true},
		{"SQLITE_FULL", sqlite3.Error{Code: sqlite3.ErrFull}, false},
		{"SQLITE_BUSY", sqlite3.Error{Code: sqlite3.ErrBusy}, false},
		{"text only", errors.New("database disk image is malformed"), false},
	} {
		if got := isCorrupt(tc.err); got != tc.want {
			t.Errorf("%s: isCorrupt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOpenDBNotADatabase: a file that is not SQLite (4 KiB of text where
// the 16-byte header "SQLite format 3\x00" should be) fails OpenDB with
// ErrCorrupt, and the SQLite error underneath is kept (%w) with its
// SQLITE_NOTADB code.
func TestOpenDBNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = 'x'
	}
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := OpenDB(t.Context(), path, migrations.Index, "index")
	if err == nil {
		db.Close()
		t.Fatal("OpenDB of a non-database file succeeded")
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenDB error %v is not ErrCorrupt", err)
	}
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrNotADB {
		t.Errorf("OpenDB error %v does not wrap a sqlite3.Error with code SQLITE_NOTADB (got %#v)", err, se)
	}
}
