package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"contextd/bench/sessiongen"
)

// TestEntryBudget: three quarters of the limit at EntryRetainedBytes (352)
// an entry, computed by hand: 128 MiB × 3/4 / 352 = 285,975; 4 MiB 8,936;
// no limit no budget.
func TestEntryBudget(t *testing.T) {
	for limit, want := range map[int64]int{128 << 20: 285975, 4 << 20: 8936, 16 << 20: 35746, 0: 0, -1: 0} {
		if got := EntryBudget(limit); got != want {
			t.Errorf("EntryBudget(%d) = %d, want %d", limit, got, want)
		}
	}
}

// TestTooLargeAfterRestartWithSmallerLimit: a session indexed under an
// 8 MiB limit (9,000 entries, budget 17,873) and opened again under 4 MiB
// (budget 8,936) is not loaded into memory: its rows are forgotten and it
// is refused (no tree, no items; FindByID still finds it by its header
// id). Appending keeps it refused; once the file is rewritten smaller it
// is indexed again.
func TestTooLargeAfterRestartWithSmallerLimit(t *testing.T) {
	ctx := context.Background()
	root, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(root, "tiny.jsonl")
	if err := os.WriteFile(path, sessiongen.TinyChain("tiny", 9000), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(limit int64) *Index {
		x, err := OpenIndex(ctx, root, dir, Options{MemoryLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	x := open(8 << 20)
	if err := x.Session(path).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := x.Session(path).Len(); n != 9000 {
		t.Fatalf("under 8 MiB: %d entries, want 9000", n)
	}
	x.Close()

	x = open(4 << 20)
	defer x.Close()
	s := x.Session(path)
	state := func(what string, want FileState, entries int) {
		t.Helper()
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		_ = s.Read(func(v *View) error {
			n := 0
			if v.Tree != nil {
				n = v.Tree.Len()
			}
			if v.State != want || n != entries || len(v.Items) != entries {
				t.Errorf("%s: state %q, %d entries, %d items; want %q, %d, %d", what, v.State, n, len(v.Items), want, entries, entries)
			}
			return nil
		})
	}
	state("reopened under 4 MiB", StateTooLarge, 0)
	if got, ok, err := x.FindByID(ctx, "tiny"); err != nil || !ok || got != s {
		t.Errorf("FindByID(tiny) = %v, %v, %v; want the refused session", got, ok, err)
	}
	var rows int
	if err := x.db.Reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM entry_blocks WHERE file_id=?`, s.fileID).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("entry blocks of the refused session: %d (%v), want 0", rows, err)
	}

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"type":"message","id":"appended","parentId":"%08x","message":{"role":"user","content":"x"}}`+"\n", 9000)
	f.Close()
	state("appended to", StateTooLarge, 0)

	if err := os.WriteFile(path, sessiongen.TinyChain("tiny", 100), 0o600); err != nil {
		t.Fatal(err)
	}
	state("rewritten with 100 entries", StateOK, 100)
}

// TestTooLargeMsg: the limit suggested holds the whole file at the density
// of the bytes read with a tenth to spare, from twice the current limit in
// whole MiB. By hand: 128 MiB, 285,975 entries in the first 27,740,000 of
// 194,000,097 bytes (the 2,000,000-entry file) is ~2.0 million entries,
// 2.2 million with the tenth: 256 MiB holds 571,950, 512 MiB 1,143,901,
// 1 GiB 2,287,802. 100,000,000 bytes: twice is 190.7 MiB, 191 MiB whole,
// which holds twice the entries read.
func TestTooLargeMsg(t *testing.T) {
	for _, tc := range []struct {
		limit, read, size int64
		want              string
	}{
		{128 << 20, 27_740_000, 194_000_097, "this session has more than 285975 entries, more than contextd's memory limit (--memory-limit 128MiB) can index; restart contextd with --memory-limit 1GiB and /reload, or start a new Pi session (/new)"},
		{100_000_000, 1000, 1000, "this session has more than 213068 entries, more than contextd's memory limit (--memory-limit 100000000) can index; restart contextd with --memory-limit 191MiB and /reload, or start a new Pi session (/new)"},
	} {
		x := &Index{opts: Options{MemoryLimit: tc.limit}, maxEntries: EntryBudget(tc.limit)}
		if got := x.tooLargeMsg(tc.read, tc.size); got != tc.want {
			t.Errorf("tooLargeMsg(%d, %d) under %d:\n got %s\nwant %s", tc.read, tc.size, tc.limit, got, tc.want)
		}
	}
}
