package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeLines writes the first n lines of testdata/pi-tree/tree-basic.jsonl
// (a header and 62 entries) to path and returns the rest.
func writeLines(t *testing.T, path string, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", "tree-basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for range n {
		cut += bytes.IndexByte(b[cut:], '\n') + 1
	}
	if err := os.WriteFile(path, b[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	return b[cut:]
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// A sync never waits for readers (a search reads its snapshot for
// milliseconds, a 1-byte query at 1 GiB for a second; a write lock per
// request made 32 concurrent searches take turns with every sync, docs/benchmarks.md), whether it finds nothing new or new lines; a reader in progress
// keeps the snapshot it read, and the next read sees the sync's.
func TestSyncNothingNewTakesNoWriteLock(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	rest := writeLines(t, path, 41) // the header and 40 entries
	s := MustOpenIndex(t, root).Session(path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	first := snap(t, s)
	if len(first.Entries) != 40 {
		t.Fatalf("%d entries indexed, want 40", len(first.Entries))
	}
	var at1 time.Time
	s.Read(func(v *View) error { at1 = v.SyncedAt; return nil })

	hold := make(chan struct{})
	reading := make(chan int)
	readDone := make(chan int)
	go s.Read(func(v *View) error {
		reading <- v.Tree.Len()
		<-hold
		readDone <- v.Tree.Len()
		return nil
	})
	<-reading
	done := make(chan error, 1)
	go func() { done <- s.Sync(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadlock):
		close(hold)
		t.Fatal("a sync that found nothing new waited for a reader")
	}
	// New lines: the sync does not wait for the reader either.
	appendBytes(t, path, rest)
	go func() { done <- s.Sync(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadlock):
		close(hold)
		t.Fatal("a sync that indexed new lines waited for a reader in progress")
	}
	close(hold)
	if n := <-readDone; n != 40 {
		t.Errorf("the reader in progress saw its snapshot change to %d entries, want its 40", n)
	}
	if got := snap(t, s); len(got.Entries) != 62 {
		t.Fatalf("%d entries after the append, want 62", len(got.Entries))
	}
	var at2 time.Time
	s.Read(func(v *View) error { at2 = v.SyncedAt; return nil })
	if at1.IsZero() || !at2.After(at1) {
		t.Errorf("SyncedAt %v then %v: want set, then later", at1, at2)
	}
}

// A Sync called before a sync that began after it and ended well returns
// without reading the file again: that sync saw the file as it was at the
// call. A Sync called after it reads the file.
func TestSyncSharesALaterSync(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	rest := writeLines(t, path, 41)
	s := MustOpenIndex(t, root).Session(path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	called := s.syncBegun.Load()        // a call made now ...
	if err := s.Sync(ctx); err != nil { // ... and a sync begun after it
		t.Fatal(err)
	}
	appendBytes(t, path, rest)
	if err := s.syncSince(ctx, called); err != nil {
		t.Fatal(err)
	}
	if got := snap(t, s); len(got.Entries) != 40 {
		t.Fatalf("the earlier call read the file again: %d entries, want the 40 of the sync it shared", len(got.Entries))
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := snap(t, s); len(got.Entries) != 62 {
		t.Fatalf("%d entries after a new Sync, want 62", len(got.Entries))
	}
	// A session reset (Rebuild resets every session before it syncs them
	// again) shares no sync from before the reset.
	called = s.syncBegun.Load()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s.syncMu.Lock()
	s.mu.Lock()
	s.reset()
	s.mu.Unlock()
	s.syncMu.Unlock()
	if err := s.syncSince(ctx, called); err != nil {
		t.Fatal(err)
	}
	if got := snap(t, s); len(got.Entries) != 62 {
		t.Fatalf("%d entries after a reset and a call from before it, want 62 (the call must sync again)", len(got.Entries))
	}
}
