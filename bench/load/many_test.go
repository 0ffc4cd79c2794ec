package main

import (
	"testing"
	"time"
)

// TestSlowestContexts: of 200 requests, the p99 and above are the 3
// slowest (pct reads index ceil(0.99×200)−1 = 197 of the sorted 200): a
// request after its own big append, one of another session running
// during it, and one slow on its own; a fast request overlapping the big
// one is not among them.
func TestSlowestContexts(t *testing.T) {
	ms := time.Millisecond
	ts := []timedContext{
		{session: 0, at: 8 * ms, d: 40 * ms, big: true},
		{session: 1, at: 10 * ms, d: 5 * ms},
		{session: 2, at: 100 * ms, d: 3 * ms},
		{session: 3, at: 20 * ms, d: ms / 2}, // overlaps the big one, fast
	}
	for i := len(ts); i < 200; i++ {
		ts = append(ts, timedContext{session: i % 8, at: time.Duration(200+i) * ms, d: ms})
	}
	got := slowestContexts(ts, 0.99)
	want := "the 3 slowest (p99 and above): 1 after a 1-5 MB append of their own, 1 overlapping another session's, 1 neither (3.0 ms)"
	if got != want {
		t.Fatalf("slowestContexts:\n got %s\nwant %s", got, want)
	}
	if got := slowestContexts(nil, 0.99); got != "no /context request" {
		t.Fatalf("no requests: %s", got)
	}
}
