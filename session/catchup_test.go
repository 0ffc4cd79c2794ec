package session

import (
	"bytes"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"contextd/internal/hugemem"
)

// dropCatchUp unmaps the catch-ups' kept reservation (tests start from
// none).
func dropCatchUp() {
	catchUp.busy.Lock()
	catchUp.unmapLocked()
	catchUp.busy.Unlock()
}

// catchUpHeld returns the kept reservation's length and charged bytes.
func catchUpHeld() (n, charged int) {
	catchUp.busy.Lock()
	defer catchUp.busy.Unlock()
	return len(catchUp.buf), catchUp.charged
}

// countReservations counts the reservations made until the test ends.
func countReservations(t *testing.T) *int {
	t.Helper()
	var n int
	reserveLine = func(size int) ([]byte, func(), bool) {
		n++
		return hugemem.Reserve(size)
	}
	t.Cleanup(func() { reserveLine = hugemem.Reserve; dropCatchUp() })
	dropCatchUp()
	return &n
}

// appended is a file of one short line and then one long line of n
// bytes, and where the long line starts.
func appended(n int) ([]byte, int64) {
	head := `{"type":"session"}` + "\n"
	return []byte(head + strings.Repeat("x", n) + "\n"), int64(len(head))
}

// catchUpScan scans data from start as a catch-up does (no LongLines of
// its own) and returns its lines' lengths.
func catchUpScan(t *testing.T, data []byte, start int64) []int {
	t.Helper()
	var got []int
	next, err := ScanLines(bytes.NewReader(data), start, -1, 0, func(l []byte, _ int64, tooLong bool) error {
		if tooLong {
			t.Fatal("a line reported too long")
		}
		if bytes.IndexByte(l, '\n') >= 0 || (len(l) > 0 && l[len(l)-1] != 'x' && l[0] != '{') {
			t.Fatalf("line of %d bytes holds other bytes", len(l))
		}
		got = append(got, len(l))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != int64(len(data)) {
		t.Fatalf("next = %d, want %d", next, len(data))
	}
	return got
}

// Two catch-ups that each meet a long line (a 3 MiB image result
// appended, then another) read both into one reservation, and its
// written pages are counted against the heap's limit while it is kept.
func TestCatchUpKeepsOneReservation(t *testing.T) {
	if _, _, ok := hugemem.Reserve(hugemem.MinBytes); !ok {
		t.Skip("no mapped reservations on this OS (hugemem.Reserve)")
	}
	reservations := countReservations(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))
	data, start := appended(3 << 20)
	if got := catchUpScan(t, data, start); len(got) != 1 || got[0] != 3<<20 {
		t.Fatalf("first catch-up lines %v, want [%d]", got, 3<<20)
	}
	data2, start2 := appended(2 << 20)
	if got := catchUpScan(t, data2, start2); len(got) != 1 || got[0] != 2<<20 {
		t.Fatalf("second catch-up lines %v, want [%d]", got, 2<<20)
	}
	if *reservations != 1 {
		t.Errorf("%d reservations for two catch-ups, want 1", *reservations)
	}
	n, charged := catchUpHeld()
	if n != DefaultMaxLineBytes+1 {
		t.Errorf("kept reservation of %d bytes, want %d (the line cap + 1)", n, DefaultMaxLineBytes+1)
	}
	// The first line wrote its 3 MiB and at most one read piece more.
	if charged < 3<<20 || charged > 3<<20+readOnPiece {
		t.Errorf("charged %d bytes, want 3 MiB to 3 MiB + %d", charged, readOnPiece)
	}
	if lim := debug.SetMemoryLimit(-1); lim != 1<<30-int64(charged) {
		t.Errorf("memory limit %d while kept, want %d", lim, 1<<30-int64(charged))
	}
}

// Once no catch-up used it for catchUpIdle, the reservation is unmapped
// and the heap's limit is back where it was.
func TestCatchUpReleasedWhenIdle(t *testing.T) {
	if _, _, ok := hugemem.Reserve(hugemem.MinBytes); !ok {
		t.Skip("no mapped reservations on this OS (hugemem.Reserve)")
	}
	countReservations(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))
	idle := catchUpIdle
	catchUpIdle = 20 * time.Millisecond
	defer func() { catchUpIdle = idle }()
	data, start := appended(2 << 20)
	catchUpScan(t, data, start)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, charged := catchUpHeld(); n == 0 && charged == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the kept reservation is still mapped 10 s after its last use")
		}
	}
	if lim := debug.SetMemoryLimit(-1); lim != 1<<30 {
		t.Errorf("memory limit %d after the release, want %d", lim, 1<<30)
	}
}

// A line that wrote more than catchUpKeepBytes is not kept resident: the
// reservation is unmapped after it, and nothing stays charged.
func TestCatchUpLineOverKeepUnmapped(t *testing.T) {
	if _, _, ok := hugemem.Reserve(hugemem.MinBytes); !ok {
		t.Skip("no mapped reservations on this OS (hugemem.Reserve)")
	}
	countReservations(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	data, start := appended(catchUpKeepBytes + 1<<20)
	if got := catchUpScan(t, data, start); len(got) != 1 || got[0] != catchUpKeepBytes+1<<20 {
		t.Fatalf("lines %v, want one of %d bytes", got, catchUpKeepBytes+1<<20)
	}
	if n, charged := catchUpHeld(); n != 0 || charged != 0 {
		t.Errorf("after a line of %d bytes: kept %d bytes, %d charged; want none", catchUpKeepBytes+1<<20, n, charged)
	}
}

// While one catch-up holds the kept reservation, another maps its own
// and leaves the kept one as it was.
func TestCatchUpBusyReservesOwn(t *testing.T) {
	if _, _, ok := hugemem.Reserve(hugemem.MinBytes); !ok {
		t.Skip("no mapped reservations on this OS (hugemem.Reserve)")
	}
	reservations := countReservations(t)
	catchUp.busy.Lock()
	data, start := appended(2 << 20)
	got := catchUpScan(t, data, start)
	n, charged := len(catchUp.buf), catchUp.charged
	catchUp.busy.Unlock()
	if len(got) != 1 || got[0] != 2<<20 {
		t.Fatalf("lines %v, want [%d]", got, 2<<20)
	}
	if *reservations != 1 || n != 0 || charged != 0 {
		t.Errorf("%d reservations, kept %d bytes, %d charged; want 1, none kept", *reservations, n, charged)
	}
}
