package session

import (
	"bytes"
	"testing"

	"contextd/internal/hugemem"
)

// FuzzScanLines: for any file content, any per-line cap, any read size and any split of
// the file into two syncs, ScanLines yields exactly the "\n"-terminated
// lines of the content in order (too-long ones flagged, with no bytes),
// leaves the unterminated tail for the next scan, and resumes at the
// returned offset. Every way of reading a line longer than the read size
// is run: into the buffer a large scan keeps (read on while it has room,
// else found first and read into a longer one it keeps), on into a
// reserved buffer (hugemem.Reserve, here from the heap for any cap) and,
// where none is mapped, found first and read into one of its size.
func FuzzScanLines(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 2, 3)
	f.Add([]byte("{\"x\":1}\r\n{\"y\":\"\u2028\"}\n"), 100, 9)
	f.Add([]byte("\n\n\n"), 1, 0)
	f.Fuzz(func(t *testing.T, data []byte, maxLine int, cut int) {
		// Read sizes from 1 to 16 bytes exercise lines longer than the
		// buffer (the long-line path) as well as lines across reads.
		chunk := 1 + (len(data)+cut)%16
		if chunk < 1 {
			chunk = 1
		}
		if maxLine <= 0 || maxLine > 1<<20 {
			maxLine = 16
		}
		if cut < 0 || cut > len(data) {
			cut = len(data) / 2
		}
		for _, mode := range []string{"kept", "catch-up kept", "reserved", "found first"} {
			long := &LongLines{}
			switch mode {
			case "catch-up kept":
				// The catch-ups' reservation (catchup.go), kept
				// from the run before: stale bytes past a line.
				long.transient = true
				reserveLine = func(n int) ([]byte, func(), bool) { return make([]byte, n), func() {}, true }
			case "reserved":
				// Another scan holds the catch-ups' reservation.
				long.transient = true
				catchUp.busy.Lock()
			case "found first":
				long.transient = true
				dropCatchUp()
				reserveLine = func(int) ([]byte, func(), bool) { return nil, func() {}, false }
			}
			checkScan(t, data, maxLine, cut, chunk, long)
			if mode == "reserved" {
				catchUp.busy.Unlock()
			}
		}
		reserveLine = hugemem.Reserve
	})
}

// checkScan is one run of FuzzScanLines.
func checkScan(t *testing.T, data []byte, maxLine, cut, chunk int, long *LongLines) {
	type line struct {
		off     int64
		text    string
		tooLong bool
	}
	var got []line
	collect := func(l []byte, off int64, tooLong bool) error {
		if tooLong && l != nil {
			t.Fatalf("too-long line at %d passed with bytes", off)
		}
		got = append(got, line{off, string(l), tooLong})
		return nil
	}
	r := bytes.NewReader(data)
	next, err := scanLines(r, 0, int64(cut), maxLine, chunk, nil, long, collect)
	if err != nil {
		t.Fatal(err)
	}
	next, err = scanLines(r, next, -1, maxLine, chunk, nil, long, collect)
	if err != nil {
		t.Fatal(err)
	}
	var want []line
	off := 0
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		l := data[off : off+i]
		if len(l) > maxLine {
			want = append(want, line{int64(off), "", true})
		} else {
			want = append(want, line{int64(off), string(l), false})
		}
		off += i + 1
	}
	if next != int64(off) {
		t.Fatalf("next = %d, want %d", next, off)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
