package store

import (
	"context"
	"testing"
	"time"

	"contextd/history"
)

// While a request marked Urgent runs, a scan waits between its pieces
// (each wait bounded: the search still ends, with the right answer);
// with none running it does not wait.
func TestScanYieldsToUrgent(t *testing.T) {
	ctx := context.Background()
	s := syncedLocalBasic(t)
	defer func(c int) { searchChunk = c }(searchChunk)
	searchChunk = 64 // many pieces
	var refs []history.ItemRef
	want := 0
	s.Read(func(v *View) error { refs, want = refsHolding(t, v, "q"); return nil })
	search := func() int {
		n := 0
		s.ReadScan(ctx, UnfilteredQuery("q"), func(v *View) error { n = searchCount(v, "q", refs); return nil })
		return n
	}
	w0 := urgentWaits.Load()
	if n := search(); n != want || urgentWaits.Load() != w0 {
		t.Fatalf("with no urgent request: %d items found, %d waits; want %d, 0", n, urgentWaits.Load()-w0, want)
	}
	done := Urgent()
	found := make(chan int, 1)
	go func() { found <- search() }()
	select {
	case n := <-found:
		if n != want {
			t.Fatalf("under an urgent request the search found %d items, want %d", n, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a search under an urgent request never ended (its waits are bounded)")
	}
	done()
	done() // a second call is a no-op
	if urgentWaits.Load() == w0 {
		t.Fatal("the search read every piece without waiting for the urgent request")
	}
	if yieldToUrgent() {
		t.Fatal("yieldToUrgent waited with no urgent request left")
	}
}
