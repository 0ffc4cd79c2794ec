package store

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"contextd/history"
)

// deadlock is how long a step that must not wait may take before the test
// calls it waiting: far above any honest time on a loaded machine.
const deadlock = 20 * time.Second

// holdScanSlots takes every scan slot, as searches scanning would, and
// returns the function that gives them back (once).
func holdScanSlots(t *testing.T) func() {
	t.Helper()
	for range cap(scanSlots) {
		scanSlots <- struct{}{}
	}
	held := true
	release := func() {
		if held {
			held = false
			for range cap(scanSlots) {
				<-scanSlots
			}
		}
	}
	t.Cleanup(release)
	return release
}

// itemRefs lists the history items of v.
func itemRefs(v *View) history.RefList {
	var refs history.RefList
	for i := range v.Items {
		if r, ok := v.Ref(i, "w"); ok {
			refs = append(refs, r)
		}
	}
	return refs
}

// A plain Read (what /context does before every model call) never waits
// for searches, whether they hold every scan slot or wait for one, nor
// for a sync of one appended line that is pending meanwhile. Readers read
// a published snapshot and hold no lock; before, a search waited for its
// slot and scanned inside Read, holding the session's read lock, the
// sync's write lock waited for the search, and Go's RWMutex then held off
// every new reader behind the sync (a /context waited 1.0 s).
func TestReadDoesNotWaitBehindSearches(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	rest := writeLines(t, path, 41) // the header and 40 entries
	s := MustOpenIndex(t, root).Session(path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	release := holdScanSlots(t)

	// A search waiting for a slot, its Read begun.
	searching := make(chan struct{})
	searchDone := make(chan error, 1)
	go func() {
		searchDone <- s.Read(func(v *View) error {
			close(searching)
			return v.Texts().Search("e", itemRefs(v), 10, func(history.ItemRef) bool { return true })
		})
	}()
	<-searching

	// Pi appends one line; a request syncs it, and another reads.
	appendBytes(t, path, rest[:bytes.IndexByte(rest, '\n')+1])
	syncDone := make(chan error, 1)
	go func() { syncDone <- s.Sync(ctx) }()
	readDone := make(chan struct{})
	go func() {
		_ = s.Read(func(*View) error { return nil })
		close(readDone)
	}()
	timeout := time.After(deadlock)
	select {
	case <-readDone:
	case <-timeout:
		t.Fatal("a plain Read waited behind a search waiting for a scan slot")
	}
	select {
	case err := <-syncDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-timeout:
		t.Fatal("a sync of one appended line waited behind a search waiting for a scan slot")
	}
	if got := snap(t, s); len(got.Entries) != 41 {
		t.Errorf("%d entries after the sync, want 41", len(got.Entries))
	}
	release()
	if err := <-searchDone; err != nil {
		t.Fatal(err)
	}
}

// ReadScan takes its scan slot before its view: a search that waited for
// a slot reads the session as it is when it gets one, with the lines
// synced while it waited.
func TestReadScanTakesItsSlotBeforeItsView(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	rest := writeLines(t, path, 41)
	s := MustOpenIndex(t, root).Session(path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	release := holdScanSlots(t)
	seen := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.ReadScan(ctx, false, func(v *View) error {
			seen <- v.Tree.Len()
			return v.Texts().Search("e", itemRefs(v), 10, func(history.ItemRef) bool { return true })
		})
	}()
	appendBytes(t, path, rest[:bytes.IndexByte(rest, '\n')+1])
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-seen:
		t.Fatalf("ReadScan ran (a view of %d entries) while every scan slot was taken", n)
	default:
	}
	release()
	if n := <-seen; n != 41 {
		t.Errorf("ReadScan's view has %d entries, want the 41 synced while it waited for its slot", n)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A cancelled wait for a slot returns the context's error, without
	// a view.
	release = holdScanSlots(t)
	defer release()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.ReadScan(cctx, false, func(*View) error { t.Error("ReadScan ran after its context was cancelled"); return nil }); err == nil {
		t.Error("ReadScan with a cancelled context and no free slot returned nil")
	}
}
