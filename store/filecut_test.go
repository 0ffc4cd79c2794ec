package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cutLines are a header and two messages; a1's text is long so that a
// batch of len(header+a1) bytes indexes the header and a1 only, and the
// next batch (a2) reaches the end of the file.
var cutLines = []string{
	`{"type":"session","version":3,"id":"s-cut","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/w"}` + "\n",
	`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-01T00:00:01.000Z","message":{"role":"user","content":"` + strings.Repeat("x", 400) + `"}}` + "\n",
	`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-12-01T00:00:02.000Z","message":{"role":"user","content":"second"}}` + "\n",
}

// A rewrite in place (os.WriteFile: truncate, then write the same bytes)
// that cuts the file after a sync's stat and before its read of the last
// lines must not leave those lines unindexed: the read that found no
// bytes there is not an unterminated line through the stat's size. Before
// the sync read files through cutReader, the sync after the rewrite found
// the same size, took the lines as still in flight and indexed nothing
// (TestConcurrentAnswersMatchCold's "rewrite in place" round failed so,
// about once in ten runs).
func TestSyncFileCutWhileRead(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	full := strings.Join(cutLines, "")
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(ctx, root, t.TempDir(), Options{BatchBytes: int64(len(cutLines[0]) + len(cutLines[1]))})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := x.Session(path)
	cutAt := int64(len(cutLines[0]) + len(cutLines[1]))
	afterBatchCommit = func(s *Session) {
		afterBatchCommit = nil
		// The first batch (header, a1) is committed; the rewrite cuts
		// the file before the next batch reads a2.
		if s.next != cutAt {
			t.Errorf("first batch ended at byte %d, want %d", s.next, cutAt)
		}
		if err := os.Truncate(path, cutAt); err != nil {
			t.Error(err)
		}
	}
	err = s.Sync(ctx)
	afterBatchCommit = nil
	if err != nil {
		t.Fatal(err)
	}
	// The rewrite writes the same bytes back: the same size as the stat
	// of the sync above saw.
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Read(func(v *View) error {
		if v.Tree == nil || v.Tree.Len() != 2 {
			t.Fatalf("after the rewrite: %d entries indexed, want 2 (a1, a2)", s.Len())
		}
		if _, ok := v.Tree.Lookup("a2"); !ok {
			t.Errorf("a2 is not indexed")
		}
		if v.Bytes != int64(len(full)) {
			t.Errorf("%d bytes indexed, want the file's %d", v.Bytes, len(full))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// An unterminated last line that a rewrite of the same size turns into a
// complete line (and a new mtime) is indexed by the next sync: the part
// of it scanned before is scanned again, since its bytes may have
// changed.
func TestSyncInFlightLineRewritten(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	head := cutLines[0] + cutLines[1]
	// a2 without its last two bytes ("}\n"), then the same length with
	// a2's content two bytes shorter and its "\n".
	partial := cutLines[2][:len(cutLines[2])-2]
	complete := strings.Replace(cutLines[2], "second", "seco", 1)
	if len(partial) != len(complete) {
		t.Fatalf("partial %d bytes, complete %d: want equal", len(partial), len(complete))
	}
	_, s := syncedFile(t, root, path, head+partial)
	if n := s.Len(); n != 1 {
		t.Fatalf("%d entries before the rewrite, want 1 (a2 in flight)", n)
	}
	if err := os.WriteFile(path, []byte(head+complete), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour) // a coarse clock may not move the mtime
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.Len(); n != 2 {
		t.Errorf("%d entries after the rewrite, want 2 (a1, a2)", n)
	}
}
